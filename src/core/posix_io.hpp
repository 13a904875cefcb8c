#pragma once
// POSIX IO between a file and host memory.
#include <cstddef>
#include <string>

namespace kvikio::detail {

class OpenFile;

/// Reads exactly `size` bytes at `offset`, retrying interrupted and short reads. Throws
/// EndOfFileError if the file ends first, GenericSystemError on an OS error; both name the
/// file, offset and size.
std::size_t read_exact(
  int fd, void* buf, std::size_t size, std::size_t offset, const std::string& path);
/// Writes exactly `size` bytes at `offset`, retrying interrupted and short writes; throws
/// GenericSystemError naming the file, offset and size on failure.
std::size_t write_exact(
  int fd, const void* buf, std::size_t size, std::size_t offset, const std::string& path);

/// Host-memory IO. With `direct_io` and an O_DIRECT descriptor, the page-aligned middle of
/// the range goes through O_DIRECT (via a page-aligned per-thread buffer when `buf` is not
/// aligned) and the unaligned head and tail through the page cache.
std::size_t posix_host_read(
  const OpenFile& file, void* buf, std::size_t size, std::size_t offset, bool direct_io);
std::size_t posix_host_write(
  const OpenFile& file, const void* buf, std::size_t size, std::size_t offset, bool direct_io);

}  // namespace kvikio::detail

#pragma once
// POSIX IO between a file and host memory.
#include <cstddef>
#include <string>

namespace kvikio::detail {

class OpenFile;
enum class Direction;

/// Host-memory IO in either direction (a write never stores through `buf`). With
/// `direct_io` and an O_DIRECT descriptor, the page-aligned middle of the range goes through
/// O_DIRECT (via a page-aligned per-thread buffer when `buf` is not aligned) and the unaligned
/// head and tail through the page cache.
std::size_t posix_host_io(Direction direction,
                          const OpenFile& file,
                          char* buf,
                          std::size_t size,
                          std::size_t offset,
                          bool direct_io);

}  // namespace kvikio::detail

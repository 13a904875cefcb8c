#pragma once
// POSIX IO between a file and host memory.
#include <sys/types.h>

#include <cstddef>
#include <string>

namespace kvikio::detail {

class OpenFile;
enum class Direction;

/// How a batch moves bytes between its files and host memory, decided once per batch.
struct BatchTransfer {
  bool uring{false};       // through this thread's io_uring (uring_io), else POSIX calls
  bool direct_io{false};   // the POSIX calls: the Direct IO setting of the batch's direction
  bool thread_fds{false};  // reads through each thread's own descriptor of the file
};

/// Host-memory IO in either direction (a write never stores through `buf`). With
/// `direct_io` and an O_DIRECT descriptor, the page-aligned middle of the range goes through
/// O_DIRECT (via a page-aligned per-thread buffer when `buf` is not aligned) and the unaligned
/// head and tail through the page cache. With `thread_fd`, reads through the page cache use
/// the calling thread's own descriptor (OpenFile::read_fd_for_thread).
std::size_t posix_host_io(Direction direction,
                          const OpenFile& file,
                          char* buf,
                          std::size_t size,
                          std::size_t offset,
                          bool direct_io,
                          bool thread_fd = false);

/// Reads up to `size` bytes at `offset` of `fd` only from the page cache (preadv2 with
/// RWF_NOWAIT: the kernel refuses rather than waits for the disk). Returns the bytes read, or
/// -1 with errno set: EAGAIN where the bytes are not cached, EOPNOTSUPP where this build or
/// kernel has no RWF_NOWAIT.
ssize_t read_if_cached(int fd, void* buf, std::size_t size, std::size_t offset) noexcept;

}  // namespace kvikio::detail

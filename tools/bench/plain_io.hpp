#pragma once
// The local-file limit the benchmarks measure the library against: a plain parallel
// pread/pwrite loop over the same bytes, with no library code involved.
#include <cstddef>
#include <string>
#include <vector>

namespace kvikio::bench {

/// What a plain loop moves: `size` bytes at offset 0 of a file, cut into `task_size` pieces,
/// moved by `threads` std::threads taking pieces off a shared counter.
struct PlainIoShape {
  std::size_t size{};
  std::size_t task_size{};
  unsigned threads{1};
  /// With copies > 1 the bytes are moved that many times over (each copy cut into the same
  /// pieces), as a read into several devices moves the file once per device.
  std::size_t copies{1};
};

/// Moves the file's bytes between `fd` and the host buffer `buf` (at least `shape.size`
/// bytes): pread for a read, pwrite for a write, each piece with one loop that retries short
/// transfers and EINTR. Blocking; the caller owns `fd` and `buf`.
///
/// Throws std::invalid_argument when task_size or threads is 0, and GenericSystemError
/// (the errno of the failed call, EIO for an unexpected end of file) naming `fd` otherwise.
void plain_parallel_io(bool write, int fd, char* buf, const PlainIoShape& shape);

/// The same on `path`, opened read-only (read) or write-only (write) with `open_flags` added
/// (O_DIRECT or 0) and closed afterwards. Errors name the path.
void plain_parallel_io(
  bool write, const std::string& path, int open_flags, char* buf, const PlainIoShape& shape);

/// The limit of small random IO: request i moves `io_size` bytes between `fd` at
/// `offsets[i]` and `buf + i * io_size`, one pread/pwrite each (short transfers and EINTR
/// retried), issued by `threads` std::threads taking requests off a shared counter; with one
/// thread, by the calling thread. Blocking. Throws like plain_parallel_io (EIO for an end of
/// file).
void plain_random_io(bool write,
                     int fd,
                     char* buf,
                     const std::vector<std::size_t>& offsets,
                     std::size_t io_size,
                     unsigned threads);

}  // namespace kvikio::bench

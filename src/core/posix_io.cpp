#include "core/posix_io.hpp"

#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>

#include "core/open_file.hpp"
#include "core/alignment.hpp"
#include "core/format.hpp"

namespace kvikio::detail {
namespace {

/// A page-aligned scratch buffer per thread, for O_DIRECT transfers into unaligned user
/// buffers. Kept for the thread's life: at most one bounce_buffer_size per thread.
struct AlignedScratch {
  struct Free {
    void operator()(void* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<void, Free> data;
  std::size_t size{0};

  char* get(std::size_t want)
  {
    want = align_up(want);
    if (size < want) {
      void* p = nullptr;
      if (posix_memalign(&p, page_size, want) != 0) { throw std::bad_alloc(); }
      data.reset(p);
      size = want;
    }
    return static_cast<char*>(data.get());
  }
};
thread_local AlignedScratch scratch;

/// Splits [offset, offset+size) into an unaligned head, a page-aligned middle and a tail.
struct Parts {
  std::size_t head, middle, tail;
};
Parts split_for_direct_io(std::size_t size, std::size_t offset)
{
  std::size_t head   = std::min(size, (page_size - offset % page_size) % page_size);
  std::size_t middle = (size - head) / page_size * page_size;
  return {head, middle, size - head - middle};
}

/// Reads exactly `size` bytes at `offset`, retrying interrupted and short reads. Throws
/// EndOfFileError if the file ends first, GenericSystemError on an OS error; both name the
/// file, offset and size.
std::size_t read_exact(
  int fd, void* buf, std::size_t size, std::size_t offset, const std::string& path)
{
  auto* out        = static_cast<char*>(buf);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) { continue; }
      throw GenericSystemError("read of " + file_range_text(path, offset, size) + " failed");
    }
    if (n == 0) {
      struct stat st {};
      std::string length = ::fstat(fd, &st) == 0 ? std::to_string(st.st_size) : "unknown";
      throw EndOfFileError("read past the end of file " + file_range_text(path, offset, size) +
                           ": the file is " + length + " bytes long");
    }
    done += static_cast<std::size_t>(n);
  }
  return size;
}

/// Writes exactly `size` bytes at `offset`, retrying interrupted and short writes; throws
/// GenericSystemError naming the file, offset and size on failure.
std::size_t write_exact(
  int fd, const void* buf, std::size_t size, std::size_t offset, const std::string& path)
{
  const auto* in   = static_cast<const char*>(buf);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::pwrite(fd, in + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) { continue; }
      throw GenericSystemError("write of " + file_range_text(path, offset, size) +
                               " failed after " + std::to_string(done) + " bytes");
    }
    if (n == 0) {
      throw GenericSystemError(EIO,
                               "write of " + file_range_text(path, offset, size) +
                                 " made no progress after " + std::to_string(done) + " bytes");
    }
    done += static_cast<std::size_t>(n);
  }
  return size;
}

/// Reads [offset, offset+size) through O_DIRECT only (KVIKIO_AUTO_DIRECT_IO_READ_OVERREAD):
/// the whole pages around the range are read into the bounce buffer, a chunk at a time, and
/// the requested bytes copied out. Returns the bytes copied: fewer than `size` only when the
/// file ends first.
std::size_t read_overread(const OpenFile& file, char* buf, std::size_t size, std::size_t offset)
{
  // At least two pages: a small read that straddles a page boundary takes one pread.
  const std::size_t chunk =
    std::max(2 * page_size, defaults::bounce_buffer_size() / page_size * page_size);
  std::size_t done = 0;
  while (done < size) {
    const std::size_t at    = offset + done;
    const std::size_t start = align_down(at);
    const std::size_t skip  = at - start;
    const std::size_t want  = std::min(chunk, align_up(skip + size - done));
    char* bounce            = scratch.get(want);
    std::size_t got         = 0;
    while (got < want) {
      ssize_t n =
        ::pread(file.fd_direct(), bounce + got, want - got, static_cast<off_t>(start + got));
      if (n < 0) {
        if (errno == EINTR) { continue; }
        throw GenericSystemError("read of " + file_range_text(file.path(), at, size - done) +
                                 " (Direct IO, whole pages) failed");
      }
      if (n == 0) { break; }  // the end of the file
      got += static_cast<std::size_t>(n);
      if (got % page_size != 0) { break; }  // a partial page: the end of the file
    }
    if (got <= skip) { break; }
    const std::size_t n = std::min(got - skip, size - done);
    std::memcpy(buf + done, bounce + skip, n);
    done += n;
    if (got < want) { break; }
  }
  return done;
}

}  // namespace

std::size_t posix_host_io(Direction direction,
                          const OpenFile& file,
                          char* buf,
                          std::size_t size,
                          std::size_t offset,
                          bool direct_io,
                          bool thread_fd)
{
  const bool write = direction == Direction::write;
  // The descriptor of the buffered parts.
  const int buffered = thread_fd && !write ? file.read_fd_for_thread() : file.fd();
  auto exact         = [&](int fd, char* p, std::size_t n, std::size_t at) {
    return write ? write_exact(fd, p, n, at, file.path()) : read_exact(fd, p, n, at, file.path());
  };
  if (direct_io && !write && file.fd_direct() >= 0 && size > 0 &&
      defaults::auto_direct_io_read_overread()) {
    const std::size_t done = read_overread(file, buf, size, offset);
    // Short only at the end of the file: the buffered read of the rest reports it (or reads
    // what a concurrent writer appended meanwhile).
    if (done < size) { read_exact(buffered, buf + done, size - done, offset + done, file.path()); }
    return size;
  }
  if (!direct_io || file.fd_direct() < 0 || size < page_size) {
    return exact(buffered, buf, size, offset);
  }
  auto [head, middle, tail] = split_for_direct_io(size, offset);
  exact(buffered, buf, head, offset);
  if (is_page_aligned(buf + head)) {
    exact(file.fd_direct(), buf + head, middle, offset + head);
  } else {
    const std::size_t chunk =
      std::max(page_size, defaults::bounce_buffer_size() / page_size * page_size);
    char* bounce = scratch.get(std::min(chunk, middle));
    for (std::size_t pos = 0; pos < middle; pos += chunk) {
      const std::size_t n = std::min(chunk, middle - pos);
      if (write) { std::memcpy(bounce, buf + head + pos, n); }
      exact(file.fd_direct(), bounce, n, offset + head + pos);
      if (!write) { std::memcpy(buf + head + pos, bounce, n); }
    }
  }
  exact(buffered, buf + head + middle, tail, offset + head + middle);
  return size;
}

ssize_t read_if_cached(int fd, void* buf, std::size_t size, std::size_t offset) noexcept
{
#ifdef RWF_NOWAIT
  iovec iov{buf, size};
  return ::preadv2(fd, &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT);
#else
  (void)fd, (void)buf, (void)size, (void)offset;
  errno = EOPNOTSUPP;
  return -1;
#endif
}

}  // namespace kvikio::detail

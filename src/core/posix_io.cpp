#include "core/posix_io.hpp"

#include <sys/stat.h>
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
#include "core/task_split.hpp"

namespace kvikio::detail {
namespace {

std::string where(const std::string& path, std::size_t offset, std::size_t size)
{
  return "'" + path + "' at offset " + std::to_string(offset) + " (" + std::to_string(size) +
         " bytes)";
}

bool is_page_aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % page_size == 0; }

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
    want = (want + page_size - 1) / page_size * page_size;
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

}  // namespace

std::size_t read_exact(
  int fd, void* buf, std::size_t size, std::size_t offset, const std::string& path)
{
  auto* out        = static_cast<char*>(buf);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) { continue; }
      throw GenericSystemError("read of " + where(path, offset, size) + " failed");
    }
    if (n == 0) {
      struct stat st {};
      std::string length = ::fstat(fd, &st) == 0 ? std::to_string(st.st_size) : "unknown";
      throw EndOfFileError("read past the end of file " + where(path, offset, size) +
                           ": the file is " + length + " bytes long");
    }
    done += static_cast<std::size_t>(n);
  }
  return size;
}

std::size_t write_exact(
  int fd, const void* buf, std::size_t size, std::size_t offset, const std::string& path)
{
  const auto* in   = static_cast<const char*>(buf);
  std::size_t done = 0;
  while (done < size) {
    ssize_t n = ::pwrite(fd, in + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) { continue; }
      throw GenericSystemError("write of " + where(path, offset, size) + " failed after " +
                               std::to_string(done) + " bytes");
    }
    if (n == 0) {
      throw GenericSystemError(EIO,
                               "write of " + where(path, offset, size) +
                                 " made no progress after " + std::to_string(done) + " bytes");
    }
    done += static_cast<std::size_t>(n);
  }
  return size;
}

std::size_t posix_host_read(
  const OpenFile& file, void* buf, std::size_t size, std::size_t offset, bool direct_io)
{
  if (!direct_io || file.fd_direct() < 0 || size < page_size) {
    return read_exact(file.fd(), buf, size, offset, file.path());
  }
  auto* out                 = static_cast<char*>(buf);
  auto [head, middle, tail] = split_for_direct_io(size, offset);
  read_exact(file.fd(), out, head, offset, file.path());
  if (is_page_aligned(out + head)) {
    read_exact(file.fd_direct(), out + head, middle, offset + head, file.path());
  } else {
    const std::size_t chunk =
      std::max(page_size, defaults::bounce_buffer_size() / page_size * page_size);
    char* bounce = scratch.get(std::min(chunk, middle));
    for (std::size_t pos = 0; pos < middle; pos += chunk) {
      std::size_t n = std::min(chunk, middle - pos);
      read_exact(file.fd_direct(), bounce, n, offset + head + pos, file.path());
      std::memcpy(out + head + pos, bounce, n);
    }
  }
  read_exact(file.fd(), out + head + middle, tail, offset + head + middle, file.path());
  return size;
}

std::size_t posix_host_write(
  const OpenFile& file, const void* buf, std::size_t size, std::size_t offset, bool direct_io)
{
  if (!direct_io || file.fd_direct() < 0 || size < page_size) {
    return write_exact(file.fd(), buf, size, offset, file.path());
  }
  const auto* in            = static_cast<const char*>(buf);
  auto [head, middle, tail] = split_for_direct_io(size, offset);
  write_exact(file.fd(), in, head, offset, file.path());
  if (is_page_aligned(in + head)) {
    write_exact(file.fd_direct(), in + head, middle, offset + head, file.path());
  } else {
    const std::size_t chunk =
      std::max(page_size, defaults::bounce_buffer_size() / page_size * page_size);
    char* bounce = scratch.get(std::min(chunk, middle));
    for (std::size_t pos = 0; pos < middle; pos += chunk) {
      std::size_t n = std::min(chunk, middle - pos);
      std::memcpy(bounce, in + head + pos, n);
      write_exact(file.fd_direct(), bounce, n, offset + head + pos, file.path());
    }
  }
  write_exact(file.fd(), in + head + middle, tail, offset + head + middle, file.path());
  return size;
}

}  // namespace kvikio::detail

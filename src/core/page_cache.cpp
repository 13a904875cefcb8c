#include <kvikio/file_utils.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include <kvikio/error.hpp>

namespace kvikio {
namespace {

/// An fd closed on scope exit.
struct Fd {
  int fd;
  ~Fd()
  {
    if (fd >= 0) { ::close(fd); }
  }
};

int open_or_throw(const std::string& path, int flags)
{
  int fd = ::open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) { throw GenericSystemError("Unable to open file '" + path + "'"); }
  return fd;
}

/// `length` 0: to the end of the file. The range is clamped to the file and widened to whole
/// pages (mincore's granularity); a range starting at or past the end counts nothing.
std::pair<std::size_t, std::size_t> page_cache_info(int fd,
                                                    const std::string& name,
                                                    std::size_t offset,
                                                    std::size_t length)
{
  struct stat st {};
  if (::fstat(fd, &st) != 0) { throw GenericSystemError("cannot stat " + name); }
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto size = static_cast<std::size_t>(st.st_size);
  if (offset >= size) { return {0, 0}; }
  const std::size_t end   = (length == 0 || length > size - offset) ? size : offset + length;
  const std::size_t begin = offset / page * page;  // mmap offsets are page-aligned
  const std::size_t bytes = end - begin;
  const auto pages        = (bytes + page - 1) / page;
  void* addr = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(begin));
  if (addr == MAP_FAILED) { throw GenericSystemError("cannot map " + name); }
  std::vector<unsigned char> resident(pages);
  int rc  = ::mincore(addr, bytes, resident.data());
  int err = errno;
  ::munmap(addr, bytes);
  if (rc != 0) { throw GenericSystemError(err, "mincore on " + name + " failed"); }
  std::size_t cached = 0;
  for (auto r : resident) {
    cached += r & 1U;
  }
  return {cached, pages};
}

/// The kernel drops only the pages wholly inside [offset, offset + length) (length 0: to the
/// end).
void drop_fd_page_cache(
  int fd, bool sync_first, const std::string& name, std::size_t offset = 0, std::size_t length = 0)
{
  if (sync_first && ::fdatasync(fd) != 0 && errno != EINVAL) {
    throw GenericSystemError("cannot sync " + name);
  }
  int rc = ::posix_fadvise(
    fd, static_cast<off_t>(offset), static_cast<off_t>(length), POSIX_FADV_DONTNEED);
  if (rc != 0) { throw GenericSystemError(rc, "cannot drop the page cache of " + name); }
}

}  // namespace

std::pair<std::size_t, std::size_t> get_page_cache_info(const std::string& file_path)
{
  return get_page_cache_info(file_path, 0, 0);
}

std::pair<std::size_t, std::size_t> get_page_cache_info(int fd)
{
  return get_page_cache_info(fd, 0, 0);
}

std::pair<std::size_t, std::size_t> get_page_cache_info(const std::string& file_path,
                                                        std::size_t offset,
                                                        std::size_t length)
{
  Fd f{open_or_throw(file_path, O_RDONLY)};
  return page_cache_info(f.fd, "'" + file_path + "'", offset, length);
}

std::pair<std::size_t, std::size_t> get_page_cache_info(int fd,
                                                        std::size_t offset,
                                                        std::size_t length)
{
  return page_cache_info(fd, "file descriptor " + std::to_string(fd), offset, length);
}

void drop_file_page_cache(const std::string& file_path, bool sync_first)
{
  Fd f{open_or_throw(file_path, O_RDONLY)};
  drop_fd_page_cache(f.fd, sync_first, "'" + file_path + "'");
}

void drop_file_page_cache(int fd, bool sync_first)
{
  drop_fd_page_cache(fd, sync_first, "file descriptor " + std::to_string(fd));
}

void drop_file_page_cache(const std::string& file_path,
                          std::size_t offset,
                          std::size_t length,
                          bool sync_first)
{
  Fd f{open_or_throw(file_path, O_RDONLY)};
  drop_fd_page_cache(f.fd, sync_first, "'" + file_path + "'", offset, length);
}

void drop_file_page_cache(int fd, std::size_t offset, std::size_t length, bool sync_first)
{
  drop_fd_page_cache(fd, sync_first, "file descriptor " + std::to_string(fd), offset, length);
}

void drop_system_page_cache(bool reclaim_dentries_and_inodes, bool sync_first)
{
  if (sync_first) { ::sync(); }
  const char* path = "/proc/sys/vm/drop_caches";
  int fd           = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    throw GenericSystemError(std::string("cannot drop the system page cache: opening ") + path +
                             " needs root (CAP_SYS_ADMIN)");
  }
  Fd f{fd};
  const char* value = reclaim_dentries_and_inodes ? "3" : "1";
  if (::write(f.fd, value, 1) != 1) {
    throw GenericSystemError(std::string("cannot drop the system page cache: writing to ") + path +
                             " failed");
  }
}

}  // namespace kvikio

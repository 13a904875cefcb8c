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
  if (fd < 0) { throw GenericSystemError("cannot open '" + path + "'"); }
  return fd;
}

std::pair<std::size_t, std::size_t> page_cache_info(int fd, const std::string& name)
{
  struct stat st {};
  if (::fstat(fd, &st) != 0) { throw GenericSystemError("cannot stat " + name); }
  const auto page  = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto size  = static_cast<std::size_t>(st.st_size);
  const auto pages = (size + page - 1) / page;
  if (pages == 0) { return {0, 0}; }
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) { throw GenericSystemError("cannot map " + name); }
  std::vector<unsigned char> resident(pages);
  int rc  = ::mincore(addr, size, resident.data());
  int err = errno;
  ::munmap(addr, size);
  if (rc != 0) { throw GenericSystemError(err, "mincore on " + name + " failed"); }
  std::size_t cached = 0;
  for (auto r : resident) {
    cached += r & 1U;
  }
  return {cached, pages};
}

void drop_fd_page_cache(int fd, bool sync_first, const std::string& name)
{
  if (sync_first && ::fdatasync(fd) != 0 && errno != EINVAL) {
    throw GenericSystemError("cannot sync " + name);
  }
  int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  if (rc != 0) { throw GenericSystemError(rc, "cannot drop the page cache of " + name); }
}

}  // namespace

std::pair<std::size_t, std::size_t> get_page_cache_info(const std::string& file_path)
{
  Fd f{open_or_throw(file_path, O_RDONLY)};
  return page_cache_info(f.fd, "'" + file_path + "'");
}

std::pair<std::size_t, std::size_t> get_page_cache_info(int fd)
{
  return page_cache_info(fd, "file descriptor " + std::to_string(fd));
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

// MmapHandle: a read-only mapping of a file, read into host memory by copies and into device
// memory through the staging pipeline.
#include <kvikio/mmap.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <kvikio/error.hpp>
#include <kvikio/nvtx.hpp>

#include "core/parallel_io.hpp"
#include "device/device_io.hpp"
#include "device/pointer.hpp"

namespace kvikio {

MmapHandle::MmapHandle(const std::string& file_path,
                       const std::string& flags,
                       std::optional<std::size_t> initial_map_size,
                       std::size_t initial_map_offset,
                       mode_t,
                       std::optional<int> map_flags)
  : path_(file_path)
{
  if (flags != "r" && flags != "rb") {
    // Upstream's callers match "Unknown file open flag" for a mode that is not one at all.
    const bool known =
      !flags.empty() && std::string_view("rwa").find(flags[0]) != std::string_view::npos;
    throw std::invalid_argument(
      std::string(known ? "unsupported mmap flags '" : "Unknown file open flag '") + flags +
      "' for '" + file_path + "': only read-only mapping (\"r\") is supported");
  }
  int fd = ::open(file_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) { throw GenericSystemError("Unable to open file '" + file_path + "' for mapping"); }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw GenericSystemError(err, "cannot stat '" + file_path + "'");
  }
  file_size_ = static_cast<std::size_t>(st.st_size);
  // An empty file maps to nothing. Otherwise the range must hold at least its first byte: a
  // mapping of nothing from a file that has bytes is a mistake (as upstream, whose callers
  // match the phrases below).
  if (file_size_ > 0 && initial_map_offset >= file_size_) {
    ::close(fd);
    throw std::out_of_range("Offset must be less than the file size: mmap offset " +
                            std::to_string(initial_map_offset) + " is at or beyond the end of '" +
                            file_path + "' (" + std::to_string(file_size_) + " bytes)");
  }
  map_offset_ = file_size_ > 0 ? initial_map_offset : 0;
  map_size_   = initial_map_size.value_or(file_size_ - map_offset_);
  if (file_size_ > 0 && map_size_ == 0) {
    ::close(fd);
    throw std::invalid_argument(
      "Mapped region should not be zero byte: mmap of 0 bytes at offset " +
      std::to_string(map_offset_) + " of '" + file_path + "'");
  }
  if (map_size_ > file_size_ - map_offset_) {
    ::close(fd);
    throw std::out_of_range("Mapped region is past the end of file: mmap range [" +
                            std::to_string(map_offset_) + ", " +
                            std::to_string(map_offset_ + map_size_) + ") is beyond the end of '" +
                            file_path + "' (" + std::to_string(file_size_) + " bytes)");
  }
  if (map_size_ > 0) {
    const auto page    = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const auto aligned = map_offset_ / page * page;
    map_length_        = map_size_ + (map_offset_ - aligned);
    void* addr         = ::mmap(nullptr,
                        map_length_,
                        PROT_READ,
                        map_flags.value_or(MAP_PRIVATE),
                        fd,
                        static_cast<off_t>(aligned));
    if (addr == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw GenericSystemError(err, "cannot map '" + file_path + "'");
    }
    map_base_         = addr;
    map_data_         = static_cast<const char*>(addr) + (map_offset_ - aligned);
    const auto length = map_length_;
    try {
      mapping_ = std::shared_ptr<void>(addr, [length](void* p) { ::munmap(p, length); });
    } catch (...) {  // the deleter ran: the pages are unmapped
      ::close(fd);
      throw;
    }
  }
  ::close(fd);  // the mapping keeps the file alive
  closed_ = false;
}

MmapHandle::MmapHandle(MmapHandle&& o) noexcept { *this = std::move(o); }

MmapHandle& MmapHandle::operator=(MmapHandle&& o) noexcept
{
  if (this != &o) {
    close();
    path_       = std::move(o.path_);
    file_size_  = std::exchange(o.file_size_, 0);
    map_offset_ = std::exchange(o.map_offset_, 0);
    map_size_   = std::exchange(o.map_size_, 0);
    map_base_   = std::exchange(o.map_base_, nullptr);
    map_length_ = std::exchange(o.map_length_, 0);
    map_data_   = std::exchange(o.map_data_, nullptr);
    mapping_    = std::move(o.mapping_);
    closed_     = std::exchange(o.closed_, true);
  }
  return *this;
}

MmapHandle::~MmapHandle() noexcept { close(); }

void MmapHandle::close() noexcept
{
  mapping_.reset();  // unmapped now, or by the last queued pread task
  map_base_ = nullptr;
  map_data_ = nullptr;
  closed_   = true;
}

std::size_t MmapHandle::file_size() const
{
  if (closed_) {
    throw std::invalid_argument("file_size() on a closed mapping of '" + path_ + "'");
  }
  return file_size_;
}

std::size_t MmapHandle::checked_size(std::optional<std::size_t> size, std::size_t offset) const
{
  if (closed_) {
    throw std::invalid_argument("Cannot read from a closed MmapHandle: the mapping of '" + path_ +
                                "' is closed");
  }
  const std::size_t map_end = map_offset_ + map_size_;
  if (offset > file_size_) {
    throw std::out_of_range("Offset is past the end of file: mmap read offset " +
                            std::to_string(offset) + " of '" + path_ + "' (" +
                            std::to_string(file_size_) + " bytes)");
  }
  if (offset < map_offset_ || offset > map_end) {
    throw std::out_of_range("Read is out of bound: mmap read offset " + std::to_string(offset) +
                            " of '" + path_ + "' is outside the mapped range [" +
                            std::to_string(map_offset_) + ", " + std::to_string(map_end) + ")");
  }
  const std::size_t n = size.value_or(map_end - offset);
  if (n > map_end - offset) {
    throw std::out_of_range("Read is out of bound: mmap read of " + std::to_string(n) +
                            " bytes at offset " + std::to_string(offset) + " of '" + path_ +
                            "' goes past the mapped range [" + std::to_string(map_offset_) + ", " +
                            std::to_string(map_end) + ")");
  }
  return n;
}

std::size_t MmapHandle::read(void* buf, std::optional<std::size_t> size, std::size_t offset)
{
  KVIKIO_NVTX_FUNC_RANGE();
  const std::size_t n = checked_size(size, offset);
  if (n == 0) { return 0; }
  const auto info = detail::check_buffer(buf, n, "mmap read of '" + path_ + "'");
  const char* src = map_data_ + (offset - map_offset_);
  if (info.host_accessible()) {
    std::memcpy(buf, src, n);
  } else {
    // Mapped pages are pageable memory: stage them through the pinned bounce buffer.
    detail::copy_host_to_device(info.context, buf, src, n);
  }
  return n;
}

std::future<std::size_t> MmapHandle::pread(void* buf,
                                           std::optional<std::size_t> size,
                                           std::size_t offset,
                                           std::size_t task_size,
                                           ThreadPool* thread_pool)
{
  KVIKIO_NVTX_FUNC_RANGE();
  const std::size_t n = checked_size(size, offset);
  if (task_size == 0) { throw std::invalid_argument("task_size must be positive"); }
  const char* src = map_data_ + (offset - map_offset_);
  auto* dst       = static_cast<char*>(buf);
  const auto info = detail::check_buffer(buf, n, "mmap pread of '" + path_ + "'");
  // The tasks share the mapping, so close() or destruction before the future is ready
  // cannot unmap the pages under them (reliability audit #17).
  return detail::parallel_io(
    [mapping = mapping_, src, dst, info](const detail::TaskRange& t) {
      if (info.host_accessible()) {
        std::memcpy(dst + t.buf_offset, src + t.buf_offset, t.size);
      } else {
        detail::copy_host_to_device(info.context, dst + t.buf_offset, src + t.buf_offset, t.size);
      }
      return t.size;
    },
    n,
    offset,
    task_size,
    thread_pool);
}

}  // namespace kvikio

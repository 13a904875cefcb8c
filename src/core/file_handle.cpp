#include <kvikio/file_handle.hpp>

#include <fcntl.h>

#include <limits>
#include <stdexcept>

#include <kvikio/error.hpp>

#include "core/open_file.hpp"
#include "core/parallel_io.hpp"
#include "core/posix_io.hpp"

namespace kvikio {
namespace {

/// Rejects ranges whose end does not fit in off_t, naming the values.
void check_range(const std::string& path, std::size_t size, std::size_t file_offset)
{
  constexpr auto max_off = static_cast<std::size_t>(std::numeric_limits<off_t>::max());
  if (file_offset > max_off || size > max_off - file_offset) {
    throw std::overflow_error("file offset " + std::to_string(file_offset) + " plus size " +
                              std::to_string(size) + " overflows the largest file offset for '" +
                              path + "'");
  }
}

std::size_t read_piece(const detail::OpenFile& file,
                       void* buf,
                       std::size_t size,
                       std::size_t offset)
{
  return detail::posix_host_read(file, buf, size, offset, defaults::auto_direct_io_read());
}

std::size_t write_piece(const detail::OpenFile& file,
                        const void* buf,
                        std::size_t size,
                        std::size_t offset)
{
  return detail::posix_host_write(file, buf, size, offset, defaults::auto_direct_io_write());
}

}  // namespace

FileHandle::FileHandle() noexcept = default;

FileHandle::FileHandle(const std::string& file_path,
                       const std::string& flags,
                       mode_t mode,
                       CompatMode compat_mode)
  : path_(file_path)
{
  // AUTO resolves now: a later change of the mode affects only files opened afterwards.
  auto resolved =
    defaults::is_compat_mode_preferred(compat_mode) ? CompatMode::ON : CompatMode::OFF;
  if (resolved == CompatMode::OFF) {
    throw CUfileException("cannot open '" + file_path +
                          "' with compat mode OFF: cuFile is not available in this build");
  }
  file_ = std::make_shared<detail::OpenFile>(file_path, flags, mode, resolved);
}

FileHandle::FileHandle(FileHandle&&) noexcept            = default;
FileHandle& FileHandle::operator=(FileHandle&&) noexcept = default;
FileHandle::~FileHandle() noexcept                       = default;

bool FileHandle::closed() const noexcept { return file_ == nullptr; }
void FileHandle::close() noexcept { file_.reset(); }

const std::string& FileHandle::path() const noexcept { return path_; }

const detail::OpenFile& FileHandle::checked_open_file() const
{
  if (!file_) { throw std::invalid_argument("IO on closed file '" + path_ + "'"); }
  return *file_;
}

int FileHandle::fd(bool o_direct) const noexcept
{
  if (!file_) { return -1; }
  return o_direct ? file_->fd_direct() : file_->fd();
}

int FileHandle::fd_open_flags(bool o_direct) const
{
  const int descriptor = fd(o_direct);
  int flags            = ::fcntl(descriptor, F_GETFL);
  if (flags < 0) { throw GenericSystemError("fcntl(F_GETFL) on '" + path() + "' failed"); }
  return flags;
}

std::size_t FileHandle::nbytes() const { return checked_open_file().nbytes(); }

std::size_t FileHandle::read(
  void* buf, std::size_t size, std::size_t file_offset, std::size_t buf_offset, bool)
{
  const auto& file = checked_open_file();
  file.require_readable();
  check_range(file.path(), size, file_offset);
  if (size == 0) { return 0; }
  return read_piece(file, static_cast<char*>(buf) + buf_offset, size, file_offset);
}

std::size_t FileHandle::write(
  const void* buf, std::size_t size, std::size_t file_offset, std::size_t buf_offset, bool)
{
  const auto& file = checked_open_file();
  file.require_writable();
  if (file_offset == unspecified_offset) { file_offset = file.append() ? file.nbytes() : 0; }
  check_range(file.path(), size, file_offset);
  if (size == 0) { return 0; }
  return write_piece(file, static_cast<const char*>(buf) + buf_offset, size, file_offset);
}

std::future<std::size_t> FileHandle::pread(
  void* buf, std::size_t size, std::size_t file_offset, std::size_t task_size, std::size_t, bool)
{
  const auto& file = checked_open_file();
  file.require_readable();
  check_range(file.path(), size, file_offset);
  if (task_size == 0) { throw std::invalid_argument("task_size must be positive"); }
  auto* base = static_cast<char*>(buf);
  return detail::parallel_io(
    [file = file_, base](const detail::TaskRange& t) {
      return read_piece(*file, base + t.buf_offset, t.size, t.file_offset);
    },
    size,
    file_offset,
    task_size);
}

std::future<std::size_t> FileHandle::pwrite(const void* buf,
                                            std::size_t size,
                                            std::size_t file_offset,
                                            std::size_t task_size,
                                            std::size_t,
                                            bool)
{
  const auto& file = checked_open_file();
  file.require_writable();
  if (file_offset == unspecified_offset) { file_offset = file.append() ? file.nbytes() : 0; }
  check_range(file.path(), size, file_offset);
  if (task_size == 0) { throw std::invalid_argument("task_size must be positive"); }
  const auto* base = static_cast<const char*>(buf);
  return detail::parallel_io(
    [file = file_, base](const detail::TaskRange& t) {
      return write_piece(*file, base + t.buf_offset, t.size, t.file_offset);
    },
    size,
    file_offset,
    task_size);
}

CompatMode FileHandle::compat_mode() const noexcept
{
  return file_ ? file_->compat_mode() : CompatMode::ON;
}
bool FileHandle::is_compat_mode_preferred() const noexcept
{
  return compat_mode() == CompatMode::ON;
}
bool FileHandle::is_direct_io_supported() const noexcept
{
  return file_ && file_->fd_direct() >= 0;
}

}  // namespace kvikio

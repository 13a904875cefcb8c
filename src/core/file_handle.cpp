#include <kvikio/file_handle.hpp>

#include <fcntl.h>

#include <limits>
#include <stdexcept>

#include <kvikio/error.hpp>

#include "core/open_file.hpp"
#include "core/parallel_io.hpp"
#include "core/posix_io.hpp"
#include "device/device_io.hpp"
#include "device/pointer.hpp"
#include "gds/cufile_io.hpp"
#include "shim/availability.hpp"
#include "shim/cuda_api.hpp"
#include "shim/cufile_api.hpp"

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

/// Where one piece of a request goes: host-accessible memory straight through POSIX, device
/// memory through cuFile when this file registered with it, else through the bounce-buffer
/// pipeline. `info` describes the whole buffer and is computed once per call.
std::size_t read_piece(const detail::OpenFile& file,
                       const detail::PointerInfo& info,
                       void* buf,
                       std::size_t size,
                       std::size_t offset,
                       bool sync_default_stream = false,
                       bool force_posix         = false)
{
  if (info.host_accessible()) {
    return detail::posix_host_read(file, buf, size, offset, defaults::auto_direct_io_read());
  }
  if (file.compat_mode() == CompatMode::OFF && !force_posix) {
    const auto base = reinterpret_cast<const char*>(info.base);
    return detail::cufile_read(file,
                               info.context,
                               base,
                               size,
                               offset,
                               static_cast<std::size_t>(static_cast<const char*>(buf) - base),
                               sync_default_stream);
  }
  return detail::posix_device_read(
    file, info.context, buf, size, offset, defaults::auto_direct_io_read());
}

std::size_t write_piece(const detail::OpenFile& file,
                        const detail::PointerInfo& info,
                        const void* buf,
                        std::size_t size,
                        std::size_t offset,
                        bool sync_default_stream = false,
                        bool force_posix         = false)
{
  if (info.host_accessible()) {
    return detail::posix_host_write(file, buf, size, offset, defaults::auto_direct_io_write());
  }
  if (file.compat_mode() == CompatMode::OFF && !force_posix) {
    const auto base = reinterpret_cast<const char*>(info.base);
    return detail::cufile_write(file,
                                info.context,
                                base,
                                size,
                                offset,
                                static_cast<std::size_t>(static_cast<const char*>(buf) - base),
                                sync_default_stream);
  }
  return detail::posix_device_write(
    file, info.context, buf, size, offset, defaults::auto_direct_io_write());
}

std::string describe(const char* op, const std::string& path, std::size_t offset)
{
  return std::string(op) + " of '" + path + "' at file offset " + std::to_string(offset);
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
  if (compat_mode == CompatMode::OFF && !detail::cufile_usable()) {
    throw CUfileException("cannot open '" + file_path +
                          "' with compat mode OFF: cuFile is not usable (" +
                          detail::CufileAPI::instance().reason() + ")");
  }
  // Under AUTO a file whose O_DIRECT open or cuFile registration fails falls back to POSIX.
  file_ = std::make_shared<detail::OpenFile>(
    file_path, flags, mode, resolved, compat_mode == CompatMode::AUTO);
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

std::size_t FileHandle::read(void* buf,
                             std::size_t size,
                             std::size_t file_offset,
                             std::size_t buf_offset,
                             bool sync_default_stream)
{
  const auto& file = checked_open_file();
  file.require_readable();
  check_range(file.path(), size, file_offset);
  if (size == 0) { return 0; }
  char* start = static_cast<char*>(buf) + buf_offset;
  auto info   = detail::get_pointer_info(start);
  detail::check_device_range(info, start, size, describe("read", file.path(), file_offset));
  return read_piece(file, info, start, size, file_offset, sync_default_stream);
}

std::size_t FileHandle::write(const void* buf,
                              std::size_t size,
                              std::size_t file_offset,
                              std::size_t buf_offset,
                              bool sync_default_stream)
{
  const auto& file = checked_open_file();
  file.require_writable();
  if (file_offset == unspecified_offset) { file_offset = file.append() ? file.nbytes() : 0; }
  check_range(file.path(), size, file_offset);
  if (size == 0) { return 0; }
  const char* start = static_cast<const char*>(buf) + buf_offset;
  auto info         = detail::get_pointer_info(start);
  detail::check_device_range(info, start, size, describe("write", file.path(), file_offset));
  return write_piece(file, info, start, size, file_offset, sync_default_stream);
}

std::future<std::size_t> FileHandle::pread(void* buf,
                                           std::size_t size,
                                           std::size_t file_offset,
                                           std::size_t task_size,
                                           std::size_t gds_threshold,
                                           bool sync_default_stream)
{
  const auto& file = checked_open_file();
  file.require_readable();
  check_range(file.path(), size, file_offset);
  if (task_size == 0) { throw std::invalid_argument("task_size must be positive"); }
  auto* base = static_cast<char*>(buf);
  auto info  = size > 0 ? detail::get_pointer_info(base) : detail::PointerInfo{};
  detail::check_device_range(info, base, size, describe("pread", file.path(), file_offset));
  if (!info.host_accessible() && size < gds_threshold) {
    // Small device requests are not worth the pool or cuFile: POSIX, on this thread.
    return detail::ready_future(read_piece(file, info, base, size, file_offset, false, true));
  }
  if (!info.host_accessible() && file.compat_mode() == CompatMode::OFF && sync_default_stream) {
    detail::ContextGuard guard(info.context);
    detail::cuda_check(detail::CudaAPI::instance().StreamSynchronize(nullptr),
                       "cuStreamSynchronize(0)");
  }
  return detail::parallel_io(
    [file = file_, base, info](const detail::TaskRange& t) {
      return read_piece(*file, info, base + t.buf_offset, t.size, t.file_offset);
    },
    size,
    file_offset,
    task_size);
}

std::future<std::size_t> FileHandle::pwrite(const void* buf,
                                            std::size_t size,
                                            std::size_t file_offset,
                                            std::size_t task_size,
                                            std::size_t gds_threshold,
                                            bool sync_default_stream)
{
  const auto& file = checked_open_file();
  file.require_writable();
  if (file_offset == unspecified_offset) { file_offset = file.append() ? file.nbytes() : 0; }
  check_range(file.path(), size, file_offset);
  if (task_size == 0) { throw std::invalid_argument("task_size must be positive"); }
  const auto* base = static_cast<const char*>(buf);
  auto info        = size > 0 ? detail::get_pointer_info(base) : detail::PointerInfo{};
  detail::check_device_range(info, base, size, describe("pwrite", file.path(), file_offset));
  if (!info.host_accessible() && size < gds_threshold) {
    return detail::ready_future(write_piece(file, info, base, size, file_offset, false, true));
  }
  if (!info.host_accessible() && file.compat_mode() == CompatMode::OFF && sync_default_stream) {
    detail::ContextGuard guard(info.context);
    detail::cuda_check(detail::CudaAPI::instance().StreamSynchronize(nullptr),
                       "cuStreamSynchronize(0)");
  }
  return detail::parallel_io(
    [file = file_, base, info](const detail::TaskRange& t) {
      return write_piece(*file, info, base + t.buf_offset, t.size, t.file_offset);
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

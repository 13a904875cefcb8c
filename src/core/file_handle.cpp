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

using detail::Direction;

/// Where one piece of a request goes: host-accessible memory straight through POSIX, device
/// memory through cuFile when this file registered with it, else through the bounce-buffer
/// pipeline. `info` describes the whole buffer and is computed once per call. A write never
/// stores through `buf`; it is non-const only so that both directions share this path.
std::size_t move_piece(Direction direction,
                       const detail::OpenFile& file,
                       const detail::PointerInfo& info,
                       char* buf,
                       std::size_t size,
                       std::size_t offset,
                       bool sync_default_stream = false,
                       bool force_posix         = false)
{
  const bool write     = direction == Direction::write;
  const bool direct_io = write ? defaults::auto_direct_io_write() : defaults::auto_direct_io_read();
  if (info.host_accessible()) {
    return detail::posix_host_io(direction, file, buf, size, offset, direct_io);
  }
  if (file.compat_mode() == CompatMode::OFF && !force_posix) {
    const auto* base = reinterpret_cast<const char*>(info.base);
    return detail::cufile_io(direction,
                             file,
                             info.context,
                             base,
                             size,
                             offset,
                             static_cast<std::size_t>(buf - base),
                             sync_default_stream);
  }
  return write ? detail::posix_device_write(file, info.context, buf, size, offset, direct_io)
               : detail::posix_device_read(file, info.context, buf, size, offset, direct_io);
}

std::string describe(const char* op, const std::string& path, std::size_t offset)
{
  return std::string(op) + " of '" + path + "' at file offset " + std::to_string(offset);
}

/// A request that passed the checks every read and write makes before any IO.
struct Request {
  char* buf;
  std::size_t file_offset;
  detail::PointerInfo info;  // of `buf`; left empty for an empty request
};

/// The file is open for `direction`; a write at unspecified_offset goes to the end of a file
/// opened for appending (else to 0); the range fits in off_t; a device buffer holds it all.
Request check_request(Direction direction,
                      const char* op,
                      const detail::OpenFile& file,
                      const void* buf,
                      std::size_t size,
                      std::size_t file_offset)
{
  file.require(direction);
  if (direction == Direction::write && file_offset == unspecified_offset) {
    file_offset = file.append() ? file.nbytes() : 0;
  }
  check_range(file.path(), size, file_offset);
  auto* start = const_cast<char*>(static_cast<const char*>(buf));
  auto info   = size > 0 ? detail::get_pointer_info(start) : detail::PointerInfo{};
  detail::check_device_range(info, start, size, describe(op, file.path(), file_offset));
  return {start, file_offset, info};
}

/// The one body of read and write: a single call on this thread.
std::size_t single_call(Direction direction,
                        const char* op,
                        const detail::OpenFile& file,
                        const void* buf,
                        std::size_t size,
                        std::size_t file_offset,
                        bool sync_default_stream)
{
  auto r = check_request(direction, op, file, buf, size, file_offset);
  if (size == 0) { return 0; }
  return move_piece(direction, file, r.info, r.buf, size, r.file_offset, sync_default_stream);
}

/// The one body of pread and pwrite: the request split into tasks for the thread pool.
std::future<std::size_t> parallel_call(Direction direction,
                                       const char* op,
                                       const std::shared_ptr<detail::OpenFile>& file,
                                       const void* buf,
                                       std::size_t size,
                                       std::size_t file_offset,
                                       std::size_t task_size,
                                       std::size_t gds_threshold,
                                       bool sync_default_stream)
{
  auto r = check_request(direction, op, *file, buf, size, file_offset);
  if (task_size == 0) { throw std::invalid_argument("task_size must be positive"); }
  const bool device = !r.info.host_accessible();
  if (device && size < gds_threshold) {
    // Small device requests are not worth the pool or cuFile: POSIX, on this thread.
    return detail::ready_future(
      move_piece(direction, *file, r.info, r.buf, size, r.file_offset, false, true));
  }
  if (device && file->compat_mode() == CompatMode::OFF && sync_default_stream) {
    detail::ContextGuard guard(r.info.context);
    detail::cuda_check(detail::CudaAPI::instance().StreamSynchronize(nullptr),
                       "cuStreamSynchronize(0)");
  }
  return detail::parallel_io(
    [file, direction, r](const detail::TaskRange& t) {
      return move_piece(direction, *file, r.info, r.buf + t.buf_offset, t.size, t.file_offset);
    },
    size,
    r.file_offset,
    task_size);
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
  return single_call(Direction::read,
                     "read",
                     checked_open_file(),
                     static_cast<char*>(buf) + buf_offset,
                     size,
                     file_offset,
                     sync_default_stream);
}

std::size_t FileHandle::write(const void* buf,
                              std::size_t size,
                              std::size_t file_offset,
                              std::size_t buf_offset,
                              bool sync_default_stream)
{
  return single_call(Direction::write,
                     "write",
                     checked_open_file(),
                     static_cast<const char*>(buf) + buf_offset,
                     size,
                     file_offset,
                     sync_default_stream);
}

std::future<std::size_t> FileHandle::pread(void* buf,
                                           std::size_t size,
                                           std::size_t file_offset,
                                           std::size_t task_size,
                                           std::size_t gds_threshold,
                                           bool sync_default_stream)
{
  checked_open_file();
  return parallel_call(Direction::read,
                       "pread",
                       file_,
                       buf,
                       size,
                       file_offset,
                       task_size,
                       gds_threshold,
                       sync_default_stream);
}

std::future<std::size_t> FileHandle::pwrite(const void* buf,
                                            std::size_t size,
                                            std::size_t file_offset,
                                            std::size_t task_size,
                                            std::size_t gds_threshold,
                                            bool sync_default_stream)
{
  checked_open_file();
  return parallel_call(Direction::write,
                       "pwrite",
                       file_,
                       buf,
                       size,
                       file_offset,
                       task_size,
                       gds_threshold,
                       sync_default_stream);
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

// FileHandle, whole: opening (the compat decision), the checks every request makes, and the
// dispatch of each piece to its backend: POSIX for host memory, cuFile or the bounce-buffer
// pipeline for device memory; blocking, parallel and stream-ordered.
#include <kvikio/file_handle.hpp>

#include <fcntl.h>

#include <cstdint>
#include <limits>
#include <stdexcept>

#include <kvikio/compat_mode_manager.hpp>
#include <kvikio/cufile/config.hpp>
#include <kvikio/error.hpp>
#include <kvikio/nvtx.hpp>
#include <kvikio/shim.hpp>
#include <kvikio/stream.hpp>

#include "api/open_handle.hpp"
#include "core/block_device_pools.hpp"
#include "core/open_file.hpp"
#include "core/parallel_io.hpp"
#include "core/posix_io.hpp"
#include "device/device_io.hpp"
#include "device/pointer.hpp"
#include "gds/cufile_io.hpp"
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
                       const detail::OpenHandle& handle,
                       const detail::PointerInfo& info,
                       char* buf,
                       std::size_t size,
                       std::size_t offset,
                       bool sync_default_stream = false,
                       bool force_posix         = false)
{
  const auto& file     = handle.file;
  const bool write     = direction == Direction::write;
  const bool direct_io = write ? defaults::auto_direct_io_write() : defaults::auto_direct_io_read();
  if (info.host_accessible()) {
    return detail::posix_host_io(direction, file, buf, size, offset, direct_io);
  }
  if (handle.cufile && !force_posix) {
    const auto* base = reinterpret_cast<const char*>(info.base);
    return detail::cufile_io(direction,
                             file,
                             handle.cufile,
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
    // Appends reserve their range atomically: two requests issued before either ran must not
    // both take the current size as their offset (reliability audit #2).
    if (file.append()) { check_range(file.path(), size, 0); }
    file_offset = file.append() ? file.reserve_append(size) : 0;
  }
  check_range(file.path(), size, file_offset);
  auto* start = const_cast<char*>(static_cast<const char*>(buf));
  auto info   = size > 0 ? detail::get_pointer_info(start) : detail::PointerInfo{};
  detail::check_device_range(info, start, size, describe(op, file.path(), file_offset));
  if (direction == Direction::write &&
      (info.kind == detail::MemoryKind::DEVICE || info.kind == detail::MemoryKind::MANAGED)) {
    // What the caller queued before the call, on any stream, is what gets written (issue 28).
    detail::wait_for_queued_work(info.context, describe(op, file.path(), file_offset));
  }
  return {start, file_offset, info};
}

// Small host reads whose bytes are all in the page cache run on the calling thread: a copy
// of a few pages costs a microsecond or two, a hand-off to the pool and back tens (issue 14).
// Larger ones stay on the pool, where the caller may overlap them with other work.
constexpr std::size_t inline_read_max = 128 * 1024;

/// A small read done on this thread if the page cache holds all of it (detail::read_if_cached),
/// after the read's own checks (open for reading, range within off_t); true when it is done.
/// False means nothing usable was read (not cached, a short read, Direct IO wanted, an old
/// kernel or file system): the request then takes its usual path, which reads it again in full.
///
/// It runs before the driver is asked what `buf` is: that query costs about as much as the
/// read itself (~0.7 us under the driver's lock on an H200) and most small reads go to host
/// memory. Device memory is never mapped for the CPU (its addresses are reserved
/// inaccessible), so the kernel refuses to copy there (EFAULT) and the request goes on to the
/// device path; pinned and managed memory take the host path in any case.
bool cached_read_now(const detail::OpenFile& file,
                     void* buf,
                     std::size_t size,
                     std::size_t file_offset)
{
  if (size == 0 || size > inline_read_max) { return false; }
  file.require(Direction::read);
  check_range(file.path(), size, file_offset);
  if (defaults::auto_direct_io_read() && file.fd_direct() >= 0) { return false; }
  const ssize_t n = detail::read_if_cached(file.small_read_fd(), buf, size, file_offset);
  return n >= 0 && static_cast<std::size_t>(n) == size;
}

/// The one body of read and write: a single call on this thread.
std::size_t single_call(Direction direction,
                        const char* op,
                        const detail::OpenHandle& handle,
                        const void* buf,
                        std::size_t size,
                        std::size_t file_offset,
                        bool sync_default_stream)
{
  if (direction == Direction::read &&
      cached_read_now(handle.file, const_cast<void*>(buf), size, file_offset)) {
    return size;
  }
  auto r = check_request(direction, op, handle.file, buf, size, file_offset);
  if (size == 0) { return 0; }
  return move_piece(direction, handle, r.info, r.buf, size, r.file_offset, sync_default_stream);
}

/// The one body of pread and pwrite: the request split into tasks for the thread pool.
std::future<std::size_t> parallel_call(Direction direction,
                                       const char* op,
                                       const std::shared_ptr<detail::OpenHandle>& handle,
                                       const void* buf,
                                       std::size_t size,
                                       std::size_t file_offset,
                                       std::size_t task_size,
                                       std::size_t gds_threshold,
                                       bool sync_default_stream,
                                       ThreadPool* thread_pool)
{
  if (task_size == 0) { throw std::invalid_argument("task_size must be positive"); }
  if (direction == Direction::read && size <= task_size &&
      cached_read_now(handle->file, const_cast<void*>(buf), size, file_offset)) {
    return detail::ready_future(size);
  }
  auto r            = check_request(direction, op, handle->file, buf, size, file_offset);
  const bool device = !r.info.host_accessible();
  if (device && size < gds_threshold) {
    // Small device requests are not worth the pool or cuFile: POSIX, on this thread.
    return detail::ready_future(
      move_piece(direction, *handle, r.info, r.buf, size, r.file_offset, false, true));
  }
  if (device && handle->cufile && sync_default_stream) {
    detail::ContextGuard guard(r.info.context);
    detail::cuda_check(detail::CudaAPI::instance().StreamSynchronize(nullptr),
                       "cuStreamSynchronize(0)");
  }
  return detail::parallel_io(
    [handle, direction, r](const detail::TaskRange& t) {
      return move_piece(direction, *handle, r.info, r.buf + t.buf_offset, t.size, t.file_offset);
    },
    size,
    r.file_offset,
    task_size,
    // The file's per-device pool serves it, unless the caller chose another pool.
    handle->pool != nullptr && (thread_pool == nullptr || thread_pool == &defaults::thread_pool())
      ? handle->pool
      : thread_pool);
}

detail::PointerInfo require_device(const void* ptr, const char* op, const std::string& path)
{
  auto info = detail::get_pointer_info(ptr);
  if (info.kind != detail::MemoryKind::DEVICE) {
    throw std::invalid_argument(std::string(op) + " of '" + path +
                                "' needs device memory, but the buffer is host memory");
  }
  return info;
}

void require_args(const void* size_p,
                  const off_t* file_offset_p,
                  const off_t* devPtr_offset_p,
                  const ssize_t* bytes_p,
                  const char* op,
                  const std::string& path)
{
  if (size_p == nullptr || file_offset_p == nullptr || devPtr_offset_p == nullptr ||
      bytes_p == nullptr) {
    throw std::invalid_argument(std::string(op) + " of '" + path +
                                "': size, offset and result pointers must not be null");
  }
  if (*file_offset_p < 0 || *devPtr_offset_p < 0) {
    throw std::invalid_argument(std::string(op) + " of '" + path + "': negative offset (file " +
                                std::to_string(*file_offset_p) + ", buffer " +
                                std::to_string(*devPtr_offset_p) + ")");
  }
}

// cuFile's stream API (1.15, compat mode) fails with EIO when the device address is not
// 4 KiB aligned (seen on the H200), while cuFileRead handles it: such requests take the
// stream-synchronised path instead.
bool use_cufile_stream(const detail::OpenHandle& handle, const void* base, const off_t* dev_offset)
{
  const auto addr =
    reinterpret_cast<std::uintptr_t>(base) + static_cast<std::uintptr_t>(*dev_offset);
  return handle.cufile && detail::CufileAPI::instance().stream_api() && addr % 4096 == 0;
}

/// The one body of read_async and write_async, which differ only in direction.
void stream_ordered_io(FileHandle& file_handle,
                       const detail::OpenHandle& handle,
                       Direction direction,
                       void* devPtr_base,
                       std::size_t* size_p,
                       off_t* file_offset_p,
                       off_t* devPtr_offset_p,
                       ssize_t* bytes_p,
                       CUstream stream)
{
  const bool write = direction == Direction::write;
  const char* op   = write ? "write_async" : "read_async";
  const auto& file = handle.file;
  file.require(direction);
  require_args(size_p, file_offset_p, devPtr_offset_p, bytes_p, op, file.path());
  auto info = require_device(devPtr_base, op, file.path());
  detail::ContextGuard guard(info.context);
  if (*size_p == 0) {  // nothing to order: cuFile rejects empty stream IO
    *bytes_p = 0;
    return;
  }
  if (use_cufile_stream(handle, devPtr_base, devPtr_offset_p)) {
    const auto& api = detail::CufileAPI::instance();
    detail::cufile_check((write ? api.WriteAsync : api.ReadAsync)(handle.cufile.handle(),
                                                                  devPtr_base,
                                                                  size_p,
                                                                  file_offset_p,
                                                                  devPtr_offset_p,
                                                                  bytes_p,
                                                                  stream),
                         write ? "cuFileWriteAsync" : "cuFileReadAsync",
                         "of '" + file.path() + "'");
    return;
  }
  // POSIX fallback: ordered by waiting for the stream's earlier work, then moving the data
  // before returning, so that work queued on the stream afterwards sees it.
  detail::cuda_check(detail::CudaAPI::instance().StreamSynchronize(stream),
                     "cuStreamSynchronize",
                     std::string("before ") + op + " of '" + file.path() + "'");
  *bytes_p                 = -1;
  const auto file_offset   = static_cast<std::size_t>(*file_offset_p);
  const auto buffer_offset = static_cast<std::size_t>(*devPtr_offset_p);
  *bytes_p                 = static_cast<ssize_t>(
    write ? file_handle.write(devPtr_base, *size_p, file_offset, buffer_offset, false)
                          : file_handle.read(devPtr_base, *size_p, file_offset, buffer_offset, false));
}

}  // namespace

namespace detail {

std::shared_ptr<OpenHandle> open_handle(const std::string& path,
                                        const std::string& flags,
                                        mode_t mode,
                                        CompatMode requested)
{
  if (requested == CompatMode::OFF && !cufile_driver_usable()) {
    throw CUfileException("cannot open '" + path +
                          "' with compat mode OFF: cuFile is not usable (" +
                          CufileAPI::instance().reason() + ")");
  }
  auto handle  = std::make_shared<OpenHandle>(path, flags, mode);
  handle->pool = block_device_thread_pool(path, handle->file.fd());
  // AUTO resolves now: a later change of the mode affects only files opened afterwards.
  if (defaults::is_compat_mode_preferred(requested)) { return handle; }
  // cuFile needs the O_DIRECT descriptor registered with it.
  std::string why = handle->file.direct_io_error();
  if (handle->file.fd_direct() >= 0) {
    handle->cufile = CufileRegistration::try_register(handle->file.fd_direct(), &why);
  }
  if (!handle->cufile) {
    if (requested == CompatMode::OFF) {
      throw CUfileException("cannot use cuFile for '" + path + "' (compat mode OFF): " + why);
    }
    handle->fallback_reason = why;  // AUTO: this file falls back to POSIX
  }
  return handle;
}

std::size_t blocking_io(Direction direction,
                        const OpenHandle& handle,
                        void* buf,
                        std::size_t size,
                        std::size_t file_offset)
{
  return single_call(direction,
                     direction == Direction::read ? "read" : "write",
                     handle,
                     buf,
                     size,
                     file_offset,
                     false);
}

}  // namespace detail

FileHandle::FileHandle() noexcept = default;

FileHandle::FileHandle(const std::string& file_path,
                       const std::string& flags,
                       mode_t mode,
                       CompatMode compat_mode)
  : path_(file_path), file_(detail::open_handle(file_path, flags, mode, compat_mode))
{
  const bool posix      = file_->compat_mode() == CompatMode::ON;
  file_->compat_manager = CompatModeManager(
    compat_mode, posix, posix || !is_stream_api_available() || config_path().empty());
}

const CompatModeManager& FileHandle::get_compat_mode_manager() const
{
  return checked_open_file().compat_manager;
}

FileHandle::FileHandle(FileHandle&&) noexcept            = default;
FileHandle& FileHandle::operator=(FileHandle&&) noexcept = default;
FileHandle::~FileHandle() noexcept                       = default;

bool FileHandle::closed() const noexcept { return file_ == nullptr; }
void FileHandle::close()
{
  auto state = std::move(file_);  // closed from here on, even if closing fails
  // Only the sole owner closes with a check: queued tasks may still be using the descriptors.
  if (state && state.use_count() == 1) {
    state->cufile = detail::CufileRegistration{};  // deregister before the descriptor goes
    state->file.close();
  }
}

void FileHandle::fsync() { checked_open_file().file.fsync(); }

const std::string& FileHandle::path() const noexcept { return path_; }

const detail::OpenHandle& FileHandle::checked_open_file() const
{
  if (!file_) { throw std::invalid_argument("IO on closed file '" + path_ + "'"); }
  return *file_;
}

int FileHandle::fd(bool o_direct) const noexcept
{
  if (!file_) { return -1; }
  return o_direct ? file_->file.fd_direct() : file_->file.fd();
}

int FileHandle::fd_open_flags(bool o_direct) const
{
  const int descriptor = fd(o_direct);
  int flags            = ::fcntl(descriptor, F_GETFL);
  if (flags < 0) { throw GenericSystemError("fcntl(F_GETFL) on '" + path() + "' failed"); }
  return flags;
}

std::size_t FileHandle::nbytes() const { return checked_open_file().file.nbytes(); }

std::size_t FileHandle::read(void* buf,
                             std::size_t size,
                             std::size_t file_offset,
                             std::size_t buf_offset,
                             bool sync_default_stream)
{
  KVIKIO_NVTX_FUNC_RANGE(size);
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
  KVIKIO_NVTX_FUNC_RANGE(size);
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
                                           bool sync_default_stream,
                                           ThreadPool* thread_pool)
{
  KVIKIO_NVTX_FUNC_RANGE(size);
  checked_open_file();
  return parallel_call(Direction::read,
                       "pread",
                       file_,
                       buf,
                       size,
                       file_offset,
                       task_size,
                       gds_threshold,
                       sync_default_stream,
                       thread_pool);
}

std::future<std::size_t> FileHandle::pwrite(const void* buf,
                                            std::size_t size,
                                            std::size_t file_offset,
                                            std::size_t task_size,
                                            std::size_t gds_threshold,
                                            bool sync_default_stream,
                                            ThreadPool* thread_pool)
{
  KVIKIO_NVTX_FUNC_RANGE(size);
  checked_open_file();
  return parallel_call(Direction::write,
                       "pwrite",
                       file_,
                       buf,
                       size,
                       file_offset,
                       task_size,
                       gds_threshold,
                       sync_default_stream,
                       thread_pool);
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
  return file_ && file_->file.fd_direct() >= 0;
}

void FileHandle::read_async(void* devPtr_base,
                            std::size_t* size_p,
                            off_t* file_offset_p,
                            off_t* devPtr_offset_p,
                            ssize_t* bytes_read_p,
                            CUstream stream)
{
  KVIKIO_NVTX_FUNC_RANGE();
  stream_ordered_io(*this,
                    checked_open_file(),
                    Direction::read,
                    devPtr_base,
                    size_p,
                    file_offset_p,
                    devPtr_offset_p,
                    bytes_read_p,
                    stream);
}

void FileHandle::write_async(void* devPtr_base,
                             std::size_t* size_p,
                             off_t* file_offset_p,
                             off_t* devPtr_offset_p,
                             ssize_t* bytes_written_p,
                             CUstream stream)
{
  KVIKIO_NVTX_FUNC_RANGE();
  stream_ordered_io(*this,
                    checked_open_file(),
                    Direction::write,
                    devPtr_base,
                    size_p,
                    file_offset_p,
                    devPtr_offset_p,
                    bytes_written_p,
                    stream);
}

StreamFuture FileHandle::read_async(
  void* devPtr_base, std::size_t size, off_t file_offset, off_t devPtr_offset, CUstream stream)
{
  KVIKIO_NVTX_FUNC_RANGE(size);
  checked_open_file();
  auto info = detail::get_pointer_info(devPtr_base);
  StreamFuture f(devPtr_base, size, file_offset, devPtr_offset, stream, info.context);
  auto [base, size_p, fo_p, do_p, bytes_p, s] = f.get_args();
  read_async(base, size_p, fo_p, do_p, bytes_p, s);
  return f;
}

StreamFuture FileHandle::write_async(
  void* devPtr_base, std::size_t size, off_t file_offset, off_t devPtr_offset, CUstream stream)
{
  KVIKIO_NVTX_FUNC_RANGE(size);
  checked_open_file();
  auto info = detail::get_pointer_info(devPtr_base);
  StreamFuture f(devPtr_base, size, file_offset, devPtr_offset, stream, info.context);
  auto [base, size_p, fo_p, do_p, bytes_p, s] = f.get_args();
  write_async(base, size_p, fo_p, do_p, bytes_p, s);
  return f;
}

void* FileHandle::handle() const noexcept { return file_ ? file_->cufile.handle() : nullptr; }

}  // namespace kvikio

namespace kvikio::detail {

/// One piece of a batch request through the backend move_piece picks (batch_io.cpp).
std::size_t batch_move_piece(Direction direction,
                             const OpenHandle& handle,
                             const PointerInfo& info,
                             char* buf,
                             std::size_t size,
                             std::size_t offset)
{
  return move_piece(direction, handle, info, buf, size, offset, true);
}

}  // namespace kvikio::detail

// FileHandle: opening (the compat decision) and its methods, blocking, parallel and
// stream-ordered; the checks and the routing of each request are api/request.cpp's.
#include <kvikio/file_handle.hpp>

#include <fcntl.h>

#include <cstdint>
#include <stdexcept>

#include <kvikio/compat_mode_manager.hpp>
#include <kvikio/cufile/config.hpp>
#include <kvikio/error.hpp>
#include <kvikio/nvtx.hpp>
#include <kvikio/shim.hpp>
#include <kvikio/stream.hpp>

#include "api/open_handle.hpp"
#include "api/request.hpp"
#include "core/block_device_pools.hpp"
#include "core/open_file.hpp"
#include "device/pointer.hpp"
#include "gds/cufile_io.hpp"
#include "shim/cuda_api.hpp"
#include "shim/cufile_api.hpp"

namespace kvikio {
namespace {

using detail::Direction;

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
  if (!file_) { detail::throw_closed(path_); }
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
  return detail::io_now(Direction::read,
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
  return detail::io_now(Direction::write,
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
  return detail::io_parallel(Direction::read,
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
  return detail::io_parallel(Direction::write,
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

// Stream-ordered IO (FileHandle::read_async/write_async), StreamFuture and stream registration.
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/stream.hpp>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/open_file.hpp"
#include "device/pointer.hpp"
#include "shim/cuda_api.hpp"
#include "shim/cufile_api.hpp"

namespace kvikio {
namespace {

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
bool use_cufile_stream(const detail::OpenFile& file, const void* base, const off_t* dev_offset)
{
  const auto addr =
    reinterpret_cast<std::uintptr_t>(base) + static_cast<std::uintptr_t>(*dev_offset);
  return file.compat_mode() == CompatMode::OFF && detail::CufileAPI::instance().stream_api() &&
         addr % 4096 == 0;
}

using detail::Direction;

/// The one body of read_async and write_async, which differ only in direction.
void stream_ordered_io(FileHandle& handle,
                       const detail::OpenFile& file,
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
  file.require(direction);
  require_args(size_p, file_offset_p, devPtr_offset_p, bytes_p, op, file.path());
  auto info = require_device(devPtr_base, op, file.path());
  detail::ContextGuard guard(info.context);
  if (*size_p == 0) {  // nothing to order: cuFile rejects empty stream IO
    *bytes_p = 0;
    return;
  }
  if (use_cufile_stream(file, devPtr_base, devPtr_offset_p)) {
    const auto& api = detail::CufileAPI::instance();
    detail::cufile_check(
      (write ? api.WriteAsync : api.ReadAsync)(
        file.cufile_handle(), devPtr_base, size_p, file_offset_p, devPtr_offset_p, bytes_p, stream),
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
    write ? handle.write(devPtr_base, *size_p, file_offset, buffer_offset, false)
                          : handle.read(devPtr_base, *size_p, file_offset, buffer_offset, false));
}

}  // namespace

void FileHandle::read_async(void* devPtr_base,
                            std::size_t* size_p,
                            off_t* file_offset_p,
                            off_t* devPtr_offset_p,
                            ssize_t* bytes_read_p,
                            CUstream stream)
{
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
  checked_open_file();
  auto info = detail::get_pointer_info(devPtr_base);
  StreamFuture f(devPtr_base, size, file_offset, devPtr_offset, stream, info.context);
  auto [base, size_p, fo_p, do_p, bytes_p, s] = f.get_args();
  write_async(base, size_p, fo_p, do_p, bytes_p, s);
  return f;
}

void* FileHandle::handle() const noexcept { return file_ ? file_->cufile_handle() : nullptr; }

StreamFuture::StreamFuture(void* devPtr_base,
                           std::size_t size,
                           off_t file_offset,
                           off_t devPtr_offset,
                           CUstream stream,
                           CUctx_st* context)
  : devPtr_base_(devPtr_base), stream_(stream), context_(context)
{
  // cuFile's stream API reads the arguments when the stream runs: they must live in
  // malloc'd memory that outlives the call.
  args_ = static_cast<Args*>(std::malloc(sizeof(Args)));
  if (args_ == nullptr) { throw std::bad_alloc(); }
  *args_ = {size, file_offset, devPtr_offset, 0};
}

StreamFuture::StreamFuture(StreamFuture&& o) noexcept
  : devPtr_base_(std::exchange(o.devPtr_base_, nullptr)),
    stream_(std::exchange(o.stream_, nullptr)),
    context_(std::exchange(o.context_, nullptr)),
    args_(std::exchange(o.args_, nullptr)),
    synced_(std::exchange(o.synced_, false))
{
}

StreamFuture& StreamFuture::operator=(StreamFuture&& o) noexcept
{
  if (this != &o) {
    StreamFuture old(std::move(*this));
    devPtr_base_ = std::exchange(o.devPtr_base_, nullptr);
    stream_      = std::exchange(o.stream_, nullptr);
    context_     = std::exchange(o.context_, nullptr);
    args_        = std::exchange(o.args_, nullptr);
    synced_      = std::exchange(o.synced_, false);
  }
  return *this;
}

StreamFuture::~StreamFuture() noexcept
{
  if (args_ == nullptr) { return; }
  if (!synced_) {
    // The stream may still read the argument block: wait before freeing it.
    try {
      detail::ContextGuard guard(context_);
      detail::CudaAPI::instance().StreamSynchronize(stream_);
    } catch (...) {
    }
  }
  std::free(args_);
}

std::tuple<void*, std::size_t*, off_t*, off_t*, ssize_t*, CUstream> StreamFuture::get_args()
  const noexcept
{
  if (args_ == nullptr) { return {devPtr_base_, nullptr, nullptr, nullptr, nullptr, stream_}; }
  return {devPtr_base_,
          &args_->size,
          &args_->file_offset,
          &args_->devPtr_offset,
          &args_->bytes_done,
          stream_};
}

std::size_t StreamFuture::check_bytes_done()
{
  if (args_ == nullptr) {
    throw std::invalid_argument("check_bytes_done() on an empty StreamFuture");
  }
  {
    detail::ContextGuard guard(context_);
    detail::cuda_check(detail::CudaAPI::instance().StreamSynchronize(stream_),
                       "cuStreamSynchronize",
                       "waiting for a stream-ordered IO");
  }
  synced_          = true;
  const auto bytes = args_->bytes_done;
  if (bytes < 0) {
    std::string why = detail::cufile_io_error_text(bytes);
    throw CUfileException("stream-ordered IO of " + std::to_string(args_->size) +
                          " bytes at file offset " + std::to_string(args_->file_offset) +
                          " failed: " + why);
  }
  return static_cast<std::size_t>(bytes);
}

void stream_register(CUstream stream, unsigned flags)
{
  auto& api = detail::CufileAPI::instance();
  if (defaults::is_compat_mode_preferred() || !api.stream_api() || !api.driver_open()) { return; }
  detail::cufile_check(api.StreamRegister(stream, flags), "cuFileStreamRegister");
}

void stream_deregister(CUstream stream)
{
  auto& api = detail::CufileAPI::instance();
  if (defaults::is_compat_mode_preferred() || !api.stream_api() || !api.driver_open()) { return; }
  detail::cufile_check(api.StreamDeregister(stream), "cuFileStreamDeregister");
}

}  // namespace kvikio

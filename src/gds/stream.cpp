// StreamFuture (the argument block of a stream-ordered IO) and cuFile stream registration.
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/stream.hpp>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "device/pointer.hpp"
#include "shim/cuda_api.hpp"
#include "shim/cufile_api.hpp"

namespace kvikio {

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

void stream_synchronize(CUstream stream, const void* device_ptr)
{
  const auto* api = detail::cuda_api_or_throw("cuStreamSynchronize");
  // The legacy and per-thread default streams are resolved in the current context: make the
  // memory's owner current, as the producer's stream lives there.
  CUcontext ctx = device_ptr == nullptr ? nullptr : detail::get_pointer_info(device_ptr).context;
  detail::ContextGuard guard(ctx);
  char name[32];
  std::snprintf(name, sizeof(name), "%p", static_cast<void*>(stream));
  detail::cuda_check(api->StreamSynchronize(stream),
                     "cuStreamSynchronize",
                     std::string("waiting for the producer's stream ") + name);
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

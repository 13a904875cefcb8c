#include "device/staging.hpp"

#include <algorithm>
#include <cstdint>

#include "core/alignment.hpp"
#include "device/bounce_buffer.hpp"
#include "device/pointer.hpp"
#include "shim/cuda_api.hpp"

namespace kvikio::detail {
namespace {

CUdeviceptr as_dptr(const void* p)
{
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

std::string chunk_text(const std::string& what, std::size_t n, std::size_t pos)
{
  return what + ", the " + std::to_string(n) + " bytes at byte " + std::to_string(pos);
}

/// What both directions hold while they run: the driver, `ctx` current on this thread, its
/// stream and a pooled bounce buffer split into two page-aligned halves. Declared in this
/// order so that the buffer goes back to the pool before the context is popped.
struct Pipeline {
  std::string what;
  const CudaAPI& api;
  ContextGuard guard;
  CUstream stream;
  BounceBuffer bounce;
  std::size_t half;
  // False while a copy may still be queued on the stream (it reads or writes `bounce`).
  bool idle{true};

  Pipeline(CUcontext ctx, std::string what_, std::size_t chunk = 0)
    : what(std::move(what_)),
      api(*cuda_api_or_throw(what)),
      guard(ctx),
      stream(thread_stream(ctx)),
      half(half_size(bounce.size(), chunk))
  {
  }
  static std::size_t half_size(std::size_t bounce_size, std::size_t chunk)
  {
    const std::size_t most = bounce_size / 2 / page_size * page_size;
    if (chunk == 0) { return most; }
    return std::min(most, (chunk + page_size - 1) / page_size * page_size);
  }
  Pipeline(const Pipeline&)            = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  ~Pipeline() noexcept
  {
    // Unwinding from an error: the bounce buffer must not return to the pool (and be handed
    // to another transfer) while a copy from or into it is queued. The error is already known.
    if (!idle) { api.StreamSynchronize(stream); }
  }

  [[nodiscard]] char* half_at(int i) const noexcept { return bounce.data() + i * half; }

  // The one wait both schedules use. The stream holds at most one copy of this pipeline when
  // it is called (the schedules start a copy only after waiting for the one before), so
  // synchronising the whole stream waits for exactly that copy.
  void wait()
  {
    cuda_check(api.StreamSynchronize(stream), "cuStreamSynchronize", what);
    idle = true;
  }
};

}  // namespace

struct DeviceStager::Impl {
  Pipeline pipe;
  char* dst;
  StagingSink sink;

  Impl(CUcontext ctx, void* dst_, std::string what, std::size_t chunk)
    : pipe(ctx, std::move(what), chunk),
      dst(static_cast<char*>(dst_)),
      sink(
        pipe.half_at(0),
        pipe.half_at(1),
        pipe.half,
        [this](const char* staged, std::size_t n, std::size_t pos) {
          pipe.idle = false;
          cuda_check(pipe.api.MemcpyHtoDAsync(as_dptr(dst + pos), staged, n, pipe.stream),
                     "cuMemcpyHtoDAsync",
                     chunk_text(pipe.what, n, pos));
        },
        [this] { pipe.wait(); })
  {
  }
};

DeviceStager::DeviceStager(CUcontext ctx, void* dst, std::string what, std::size_t chunk)
  : impl_(std::make_unique<Impl>(ctx, dst, std::move(what), chunk))
{
}

DeviceStager::~DeviceStager() noexcept = default;

void DeviceStager::operator()(const char* data, std::size_t n) { impl_->sink(data, n); }

std::span<char> DeviceStager::space() const noexcept { return impl_->sink.space(); }

void DeviceStager::commit(std::size_t n) { impl_->sink.commit(n); }

std::size_t DeviceStager::finish() { return impl_->sink.finish(); }

struct DeviceDrainer::Impl {
  Pipeline pipe;
  const char* src;
  DrainSource source;

  Impl(CUcontext ctx, const void* src_, std::size_t size, std::string what)
    : pipe(ctx, std::move(what)),
      src(static_cast<const char*>(src_)),
      source(
        pipe.half_at(0),
        pipe.half_at(1),
        pipe.half,
        size,
        [this](char* half, std::size_t n, std::size_t pos) {
          pipe.idle = false;
          cuda_check(pipe.api.MemcpyDtoHAsync(half, as_dptr(src + pos), n, pipe.stream),
                     "cuMemcpyDtoHAsync",
                     chunk_text(pipe.what, n, pos));
        },
        [this] { pipe.wait(); })
  {
  }
};

DeviceDrainer::DeviceDrainer(CUcontext ctx, const void* src, std::size_t size, std::string what)
  : impl_(std::make_unique<Impl>(ctx, src, size, std::move(what)))
{
}

DeviceDrainer::~DeviceDrainer() noexcept = default;

DrainSource::Chunk DeviceDrainer::next() { return impl_->source.next(); }

}  // namespace kvikio::detail

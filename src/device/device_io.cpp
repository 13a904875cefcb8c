#include "device/device_io.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>

#include <kvikio/error.hpp>

#include "core/open_file.hpp"
#include "core/posix_io.hpp"
#include "core/task_split.hpp"
#include "device/bounce_buffer.hpp"
#include "device/pointer.hpp"
#include "shim/cuda_api.hpp"

namespace kvikio::detail {
namespace {

CUdeviceptr as_dptr(const void* p)
{
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

/// Waits for the stream on every exit: a bounce buffer must never go back to the pool (or be
/// refilled) while a copy from or into it is still queued.
class StreamDrain {
 public:
  explicit StreamDrain(CUstream s) : stream_(s) {}
  ~StreamDrain() noexcept
  {
    if (armed_) { CudaAPI::instance().StreamSynchronize(stream_); }
  }
  StreamDrain(const StreamDrain&)            = delete;
  StreamDrain& operator=(const StreamDrain&) = delete;
  void sync(const std::string& context)
  {
    armed_ = false;
    cuda_check(CudaAPI::instance().StreamSynchronize(stream_), "cuStreamSynchronize", context);
    armed_ = true;
  }

 private:
  CUstream stream_;
  bool armed_{true};
};

std::string range_text(const OpenFile& file, std::size_t offset, std::size_t size)
{
  return "for '" + file.path() + "' at offset " + std::to_string(offset) + " (" +
         std::to_string(size) + " bytes)";
}

/// Moves `size` bytes into device memory `dst` through the two halves of a pooled bounce
/// buffer: `fill(half, n, pos)` puts bytes [pos, pos + n) of the source into a half while the
/// copy engine moves the other half's chunk to the device. `what` names the transfer in errors.
void stage_to_device(CUcontext ctx,
                     void* dst,
                     std::size_t size,
                     const std::function<void(char*, std::size_t, std::size_t)>& fill,
                     const std::string& what)
{
  const auto& api = *cuda_api_or_throw(what);
  ContextGuard guard(ctx);
  CUstream stream = thread_stream(ctx);
  BounceBuffer bounce;
  const std::size_t half = bounce.size() / 2 / page_size * page_size;
  char* halves[2]        = {bounce.data(), bounce.data() + half};
  auto* out              = static_cast<char*>(dst);
  StreamDrain drain(stream);
  std::size_t i = 0;
  for (std::size_t pos = 0; pos < size; pos += half, ++i) {
    const std::size_t n = std::min(half, size - pos);
    char* h             = halves[i % 2];
    // The copy that last used this half was two chunks ago and was waited for below.
    fill(h, n, pos);
    // Wait for the previous chunk's copy so that its half is free for the next fill.
    drain.sync(what);
    cuda_check(api.MemcpyHtoDAsync(as_dptr(out + pos), h, n, stream),
               "cuMemcpyHtoDAsync",
               what + ", the " + std::to_string(n) + " bytes at byte " + std::to_string(pos));
  }
  drain.sync(what);
}

}  // namespace

// Each bounce buffer is used as two halves: the disk transfer of one chunk fills (or drains)
// one half while the copy engine moves the other, and the pool's bound stays one buffer per
// piece in flight.
std::size_t posix_device_read(const OpenFile& file,
                              CUcontext ctx,
                              void* dst,
                              std::size_t size,
                              std::size_t offset,
                              bool direct_io)
{
  if (size == 0) { return 0; }
  stage_to_device(
    ctx,
    dst,
    size,
    [&](char* half, std::size_t n, std::size_t pos) {
      posix_host_io(Direction::read, file, half, n, offset + pos, direct_io);
    },
    "reading into device memory " + range_text(file, offset, size));
  return size;
}

std::size_t posix_device_write(const OpenFile& file,
                               CUcontext ctx,
                               const void* src,
                               std::size_t size,
                               std::size_t offset,
                               bool direct_io)
{
  if (size == 0) { return 0; }
  const auto& api = *cuda_api_or_throw("writing '" + file.path() + "' from device memory");
  ContextGuard guard(ctx);
  CUstream stream = thread_stream(ctx);
  BounceBuffer bounce;
  const std::size_t half = bounce.size() / 2 / page_size * page_size;
  char* halves[2]        = {bounce.data(), bounce.data() + half};
  const auto* in         = static_cast<const char*>(src);
  StreamDrain drain(stream);
  cuda_check(api.MemcpyDtoHAsync(halves[0], as_dptr(in), std::min(half, size), stream),
             "cuMemcpyDtoHAsync",
             range_text(file, offset, size));
  std::size_t i = 0;
  for (std::size_t pos = 0; pos < size; pos += half, ++i) {
    const std::size_t n = std::min(half, size - pos);
    drain.sync(range_text(file, offset, size));  // chunk i is now in its half
    if (pos + n < size) {
      // Fetch the next chunk into the other half (its write finished last iteration) while
      // this one goes to the file.
      const std::size_t next = std::min(half, size - pos - n);
      cuda_check(api.MemcpyDtoHAsync(halves[(i + 1) % 2], as_dptr(in + pos + n), next, stream),
                 "cuMemcpyDtoHAsync",
                 range_text(file, offset + pos + n, next));
    }
    posix_host_io(Direction::write, file, halves[i % 2], n, offset + pos, direct_io);
  }
  drain.sync(range_text(file, offset, size));
  return size;
}

void copy_host_to_device(CUcontext ctx, void* dst, const void* src, std::size_t size)
{
  if (size == 0) { return; }
  const auto* in = static_cast<const char*>(src);
  stage_to_device(
    ctx,
    dst,
    size,
    [in](char* half, std::size_t n, std::size_t pos) { std::memcpy(half, in + pos, n); },
    "copying " + std::to_string(size) + " bytes to device memory");
}

}  // namespace kvikio::detail

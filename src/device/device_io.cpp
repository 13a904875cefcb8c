#include "device/device_io.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/format.hpp"
#include "core/open_file.hpp"
#include "core/posix_io.hpp"
#include "device/bounce_buffer.hpp"
#include "device/pointer.hpp"
#include "device/staging.hpp"
#include "shim/cuda_api.hpp"

namespace kvikio::detail {
namespace {

// Reads up to this size have nothing to overlap: one file read into a pinned buffer and one
// copy cost less than the pipeline's set-up (issue 14).
constexpr std::size_t small_read_max = 64 * 1024;
// A larger read is staged in about this many chunks (none under small_read_max), so that the
// file read of one chunk overlaps the copy of the one before: without it a 1 MiB piece fills
// one half and then waits for its whole copy, which cost a third of the throughput of many
// such pieces in flight (H200, 512 x 1 MiB preads into device memory).
constexpr std::size_t chunks_per_read = 4;

/// The whole read through one pooled pinned buffer and one copy on this thread's stream;
/// false (before any IO) where that does not fit: no driver, or a bounce buffer smaller than
/// the read.
///
/// Never cuMemcpyHtoD: that copy runs on the legacy default stream, which waits for every
/// copy queued on every blocking stream of the context and holds back those queued after it.
/// Profiled on the H200 (stop 31): 16 threads of 4 KiB copies ran at 107 K/s in all through
/// cuMemcpyHtoD against 602 K/s each on its own stream, and 4 threads of them beside 8
/// threads of 8 MiB staged copies got 4.3 K/s (against 238 K/s) and took 10% off the large
/// copies: the many small tensors of a checkpoint stalled its large ones.
bool small_device_read(const OpenFile& file,
                       CUcontext ctx,
                       void* dst,
                       std::size_t size,
                       std::size_t offset,
                       bool direct_io)
{
  const auto& api = CudaAPI::instance();
  if (!api.available()) { return false; }
  ContextGuard guard(ctx);
  BounceBuffer bounce;
  if (size > bounce.size()) { return false; }
  posix_host_io(Direction::read, file, bounce.data(), size, offset, direct_io);
  const CUstream stream = thread_stream(ctx);
  CUresult r            = api.MemcpyHtoDAsync(
    static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(dst)), bounce.data(), size, stream);
  // Synchronised even after a failed enqueue: the buffer goes back to the pool next.
  const CUresult s = api.StreamSynchronize(stream);
  const char* call = "cuMemcpyHtoDAsync";
  if (r == CUDA_SUCCESS && s != CUDA_SUCCESS) {
    r    = s;
    call = "cuStreamSynchronize";
  }
  if (r != CUDA_SUCCESS) {  // the message is built only here
    cuda_check(
      r, call, "reading into device memory for " + file_range_text(file.path(), offset, size));
  }
  return true;
}

}  // namespace

// Each piece in flight holds one bounce buffer (the pool's bound), used as two halves: the
// file transfer of one chunk fills or drains one half while the copy engine moves the other.
std::size_t posix_device_read(const OpenFile& file,
                              CUcontext ctx,
                              void* dst,
                              std::size_t size,
                              std::size_t offset,
                              bool direct_io)
{
  if (size == 0) { return 0; }
  if (size <= small_read_max && small_device_read(file, ctx, dst, size, offset, direct_io)) {
    return size;
  }
  DeviceStager stager(
    ctx,
    dst,
    "reading into device memory for " + file_range_text(file.path(), offset, size),
    std::max(small_read_max, size / chunks_per_read));
  // Whole halves straight from the file: each read starts page aligned in the buffer, so its
  // aligned middle may use O_DIRECT.
  for (std::size_t pos = 0; pos < size;) {
    const auto half     = stager.space();
    const std::size_t n = std::min(half.size(), size - pos);
    posix_host_io(Direction::read, file, half.data(), n, offset + pos, direct_io);
    stager.commit(n);
    pos += n;
  }
  return stager.finish();
}

std::size_t posix_device_write(const OpenFile& file,
                               CUcontext ctx,
                               const void* src,
                               std::size_t size,
                               std::size_t offset,
                               bool direct_io)
{
  if (size == 0) { return 0; }
  DeviceDrainer drainer(
    ctx, src, size, "writing from device memory for " + file_range_text(file.path(), offset, size));
  for (auto chunk = drainer.next(); chunk.size > 0; chunk = drainer.next()) {
    posix_host_io(Direction::write, file, chunk.data, chunk.size, offset + chunk.offset, direct_io);
  }
  return size;
}

void copy_host_to_device(CUcontext ctx, void* dst, const void* src, std::size_t size)
{
  if (size == 0) { return; }
  DeviceStager stager(ctx, dst, "copying " + std::to_string(size) + " bytes to device memory");
  stager(static_cast<const char*>(src), size);
  stager.finish();
}

}  // namespace kvikio::detail

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
// synchronous copy (cuMemcpyHtoD from pinned memory returns once the bytes are on the
// device) cost less than the pipeline's stream copy and stream synchronisation (issue 14).
constexpr std::size_t small_read_max = 256 * 1024;

/// The whole read through one pooled pinned buffer and one synchronous copy; false (before
/// any IO) where that does not fit: no driver, or a bounce buffer smaller than the read.
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
  const CUresult r = api.MemcpyHtoD(
    static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(dst)), bounce.data(), size);
  if (r != CUDA_SUCCESS) {  // the message is built only here
    cuda_check(r,
               "cuMemcpyHtoD",
               "reading into device memory for " + file_range_text(file.path(), offset, size));
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
    ctx, dst, "reading into device memory for " + file_range_text(file.path(), offset, size));
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

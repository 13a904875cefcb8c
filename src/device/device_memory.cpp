#include <kvikio/device_memory.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include <kvikio/error.hpp>

#include "device/pointer.hpp"
#include "shim/cuda_api.hpp"

namespace kvikio {
namespace {

CUdeviceptr as_dptr(const void* p)
{
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
}

void check_copy(std::size_t n, std::size_t offset, std::size_t size, const char* what)
{
  if (offset > size || n > size - offset) {
    throw std::out_of_range(std::string(what) + " of " + std::to_string(n) + " bytes at offset " +
                            std::to_string(offset) + " exceeds the device buffer of " +
                            std::to_string(size) + " bytes");
  }
}

}  // namespace

int device_count() noexcept
{
  const auto& api = detail::CudaAPI::instance();
  return api.available() ? api.device_count() : 0;
}

bool is_device_memory(const void* ptr) { return !detail::get_pointer_info(ptr).host_accessible(); }

DeviceBuffer::DeviceBuffer(std::size_t nbytes, int device, bool managed)
  : size_(nbytes), device_(device)
{
  const auto& api =
    *detail::cuda_api_or_throw("allocating " + std::to_string(nbytes) + " bytes of device memory");
  if (device < 0 || device >= api.device_count()) {
    throw std::invalid_argument("device " + std::to_string(device) + " does not exist (" +
                                std::to_string(api.device_count()) + " device(s))");
  }
  detail::ContextGuard guard(detail::primary_context(device));
  CUdeviceptr p = 0;
  const std::string what =
    "of " + std::to_string(nbytes) + " bytes on device " + std::to_string(device);
  // A zero-byte request still gets a distinct allocation, so data() is a real device pointer.
  const std::size_t n = nbytes == 0 ? 1 : nbytes;
  if (managed) {
    if (api.MemAllocManaged == nullptr) {
      throw CudaDriverError("cuMemAllocManaged is not exported by " + api.path());
    }
    detail::cuda_check(api.MemAllocManaged(&p, n, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged", what);
  } else {
    detail::cuda_check(api.MemAlloc(&p, n), "cuMemAlloc", what);
  }
  data_ = reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
  : data_(std::exchange(o.data_, nullptr)),
    size_(std::exchange(o.size_, 0)),
    device_(std::exchange(o.device_, 0))
{
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept
{
  if (this != &o) {
    DeviceBuffer old(std::move(*this));
    data_   = std::exchange(o.data_, nullptr);
    size_   = std::exchange(o.size_, 0);
    device_ = std::exchange(o.device_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() noexcept
{
  if (data_ == nullptr) { return; }
  try {
    detail::ContextGuard guard(detail::primary_context(device_));
    detail::CudaAPI::instance().MemFree(as_dptr(data_));
  } catch (...) {  // a destructor cannot report; the driver may be gone at exit
  }
}

void DeviceBuffer::copy_from_host(const void* src, std::size_t n, std::size_t offset)
{
  check_copy(n, offset, size_, "copy to device");
  if (n == 0) { return; }
  detail::ContextGuard guard(detail::primary_context(device_));
  detail::cuda_check(
    detail::CudaAPI::instance().MemcpyHtoD(as_dptr(static_cast<char*>(data_) + offset), src, n),
    "cuMemcpyHtoD");
}

void DeviceBuffer::copy_to_host(void* dst, std::size_t n, std::size_t offset) const
{
  check_copy(n, offset, size_, "copy from device");
  if (n == 0) { return; }
  detail::ContextGuard guard(detail::primary_context(device_));
  detail::cuda_check(
    detail::CudaAPI::instance().MemcpyDtoH(dst, as_dptr(static_cast<char*>(data_) + offset), n),
    "cuMemcpyDtoH");
}

PinnedBuffer::PinnedBuffer(std::size_t nbytes) : size_(nbytes)
{
  const auto& api =
    *detail::cuda_api_or_throw("allocating " + std::to_string(nbytes) + " bytes of pinned memory");
  detail::ContextGuard guard(detail::primary_context(0));
  detail::cuda_check(api.MemHostAlloc(&data_, nbytes == 0 ? 1 : nbytes, CU_MEMHOSTALLOC_PORTABLE),
                     "cuMemHostAlloc",
                     "of " + std::to_string(nbytes) + " bytes");
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& o) noexcept
  : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0))
{
}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept
{
  if (this != &o) {
    PinnedBuffer old(std::move(*this));
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

PinnedBuffer::~PinnedBuffer() noexcept
{
  if (data_ == nullptr) { return; }
  try {
    detail::ContextGuard guard(detail::primary_context(0));
    detail::CudaAPI::instance().MemFreeHost(data_);
  } catch (...) {
  }
}

}  // namespace kvikio

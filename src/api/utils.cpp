// libkvikio's helper functions (kvikio/utils.hpp) and the error texts of kvikio/error.hpp's
// checking macros, on top of the CUDA shim and the pointer inspection of device/.
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <kvikio/error.hpp>
#include <kvikio/utils.hpp>

#include "device/pointer.hpp"
#include "shim/cuda_api.hpp"
#include "shim/cufile_api.hpp"

namespace kvikio {

std::string cuda_driver_error_text(int result)
{
  return detail::cuda_error_name(static_cast<CUresult>(result));
}

std::string cufile_op_error_text(int err)
{
  return std::string(CUFILE_ERRSTR(err)) + " (" + std::to_string(err) + ")";
}

namespace {

const detail::CudaAPI& driver(const char* what) { return *detail::cuda_api_or_throw(what); }

std::string hex(CUdeviceptr p)
{
  char text[2 + 16 + 1];
  std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(p));
  return text;
}

}  // namespace

std::size_t get_page_size()
{
  static const auto size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}

off_t convert_size2off(std::size_t x)
{
  KVIKIO_EXPECT(x < static_cast<std::size_t>(std::numeric_limits<off_t>::max()),
                "size_t argument too large to fit off_t",
                std::overflow_error);
  return static_cast<off_t>(x);
}

ssize_t convert_size2ssize(std::size_t x)
{
  KVIKIO_EXPECT(x < static_cast<std::size_t>(std::numeric_limits<ssize_t>::max()),
                "size_t argument too large to fit ssize_t",
                std::overflow_error);
  return static_cast<ssize_t>(x);
}

CUdeviceptr convert_void2deviceptr(const void* devPtr)
{
  return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(devPtr));
}

bool is_host_memory(const void* ptr)
{
  const auto kind = detail::get_pointer_info(ptr).kind;
  return kind == detail::MemoryKind::HOST || kind == detail::MemoryKind::PINNED_HOST;
}

int get_device_ordinal_from_pointer(CUdeviceptr dev_ptr)
{
  const auto& api = driver("get_device_ordinal_from_pointer");
  int ordinal     = 0;
  detail::cuda_check(
    api.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, dev_ptr),
    "cuPointerGetAttribute(DEVICE_ORDINAL)",
    "for pointer " + hex(dev_ptr));
  return ordinal;
}

CUcontext get_primary_cuda_context(int ordinal)
{
  driver("get_primary_cuda_context");
  return detail::primary_context(ordinal);
}

std::optional<CUcontext> get_context_associated_pointer(CUdeviceptr dev_ptr)
{
  const auto& api  = driver("get_context_associated_pointer");
  CUcontext ctx    = nullptr;
  const CUresult r = api.PointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, dev_ptr);
  // Memory CUDA does not know is reported as an invalid value: it has no context.
  if (r == CUDA_ERROR_INVALID_VALUE) { return std::nullopt; }
  detail::cuda_check(r, "cuPointerGetAttribute(CONTEXT)", "for pointer " + hex(dev_ptr));
  if (ctx == nullptr) { return std::nullopt; }
  return ctx;
}

bool current_context_can_access_pointer(CUdeviceptr dev_ptr)
{
  const auto& api = driver("current_context_can_access_pointer");
  CUdeviceptr current_ptr{};
  const CUresult r =
    api.PointerGetAttribute(&current_ptr, CU_POINTER_ATTRIBUTE_DEVICE_POINTER, dev_ptr);
  if (r == CUDA_ERROR_INVALID_VALUE) { return false; }
  detail::cuda_check(r, "cuPointerGetAttribute(DEVICE_POINTER)", "for pointer " + hex(dev_ptr));
  return true;
}

CUcontext get_context_from_pointer(const void* devPtr)
{
  const auto dev_ptr = convert_void2deviceptr(devPtr);
  if (auto ctx = get_context_associated_pointer(dev_ptr); ctx.has_value()) { return *ctx; }
  const auto& api   = driver("get_context_from_pointer");
  CUcontext current = nullptr;
  detail::cuda_check(api.CtxGetCurrent(&current), "cuCtxGetCurrent");
  if (current != nullptr && current_context_can_access_pointer(dev_ptr)) { return current; }
  return get_primary_cuda_context(get_device_ordinal_from_pointer(dev_ptr));
}

PushAndPopContext::PushAndPopContext(CUcontext ctx) : ctx_(ctx)
{
  detail::cuda_check(driver("PushAndPopContext").CtxPushCurrent(ctx_), "cuCtxPushCurrent");
}

PushAndPopContext::~PushAndPopContext()
{
  // A destructor must not throw; a failed pop leaves nothing to undo.
  CUcontext popped = nullptr;
  detail::CudaAPI::instance().CtxPopCurrent(&popped);
}

std::tuple<void*, std::size_t, std::size_t> get_alloc_info(const void* devPtr, CUcontext* ctx)
{
  const auto dev_ptr = convert_void2deviceptr(devPtr);
  // A context given is used as is; a null one (or none) is looked up, and returned.
  CUcontext own_ctx = ctx != nullptr ? *ctx : nullptr;
  if (own_ctx == nullptr) { own_ctx = get_context_from_pointer(devPtr); }
  if (ctx != nullptr) { *ctx = own_ctx; }
  const auto& api = driver("get_alloc_info");
  CUdeviceptr base{};
  std::size_t size{};
  {
    PushAndPopContext guard(own_ctx);
    detail::cuda_check(api.MemGetAddressRange(&base, &size, dev_ptr),
                       "cuMemGetAddressRange",
                       "for device pointer " + hex(dev_ptr));
  }
  return {reinterpret_cast<void*>(
            static_cast<std::uintptr_t>(base)),  // NOLINT(performance-no-int-to-ptr)
          size,
          static_cast<std::size_t>(dev_ptr - base)};
}

}  // namespace kvikio

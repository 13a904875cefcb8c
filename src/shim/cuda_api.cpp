#include "shim/cuda_api.hpp"

#include <dlfcn.h>

#include <cstdlib>

#include <kvikio/error.hpp>

namespace kvikio::detail {
namespace {

template <typename F>
bool bind(void* lib, F& fn, const char* name, std::string& missing)
{
  fn = reinterpret_cast<F>(::dlsym(lib, name));
  if (fn == nullptr && missing.empty()) { missing = name; }
  return fn != nullptr;
}

std::string error_name(decltype(&::cuGetErrorName) get_name, CUresult r)
{
  const char* name = nullptr;
  if (get_name != nullptr) { get_name(r, &name); }
  return std::string(name != nullptr ? name : "CUDA_ERROR") + " (" +
         std::to_string(static_cast<int>(r)) + ")";
}

}  // namespace

CudaAPI::CudaAPI()
{
  const char* env = std::getenv("KVIKIO_LIBCUDA_PATH");
  path_           = (env != nullptr && *env != '\0') ? env : "libcuda.so.1";
  // RTLD_LOCAL: the stand-in must not interpose on a real libcuda that libcufile may load.
  handle_ = ::dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* err = ::dlerror();
    reason_         = "library missing: cannot load " + path_ + ": " + (err ? err : "unknown");
    return;
  }
  std::string missing;
  // The _v2 names are what cuda.h maps the public names to; a driver exports both.
  bind(handle_, Init, "cuInit", missing);
  bind(handle_, DriverGetVersion, "cuDriverGetVersion", missing);
  bind(handle_, DeviceGetCount, "cuDeviceGetCount", missing);
  bind(handle_, DeviceGet, "cuDeviceGet", missing);
  bind(handle_, DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
  bind(handle_, DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", missing);
  bind(handle_, CtxGetCurrent, "cuCtxGetCurrent", missing);
  bind(handle_, CtxSetCurrent, "cuCtxSetCurrent", missing);
  bind(handle_, CtxPushCurrent, "cuCtxPushCurrent_v2", missing);
  bind(handle_, CtxPopCurrent, "cuCtxPopCurrent_v2", missing);
  bind(handle_, CtxGetDevice, "cuCtxGetDevice", missing);
  bind(handle_, CtxSynchronize, "cuCtxSynchronize", missing);
  bind(handle_, PointerGetAttribute, "cuPointerGetAttribute", missing);
  bind(handle_, MemGetAddressRange, "cuMemGetAddressRange_v2", missing);
  bind(handle_, MemAlloc, "cuMemAlloc_v2", missing);
  bind(handle_, MemFree, "cuMemFree_v2", missing);
  bind(handle_, MemHostAlloc, "cuMemHostAlloc", missing);
  bind(handle_, MemFreeHost, "cuMemFreeHost", missing);
  bind(handle_, MemcpyHtoD, "cuMemcpyHtoD_v2", missing);
  bind(handle_, MemcpyDtoH, "cuMemcpyDtoH_v2", missing);
  bind(handle_, MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", missing);
  bind(handle_, MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
  bind(handle_, StreamCreate, "cuStreamCreate", missing);
  bind(handle_, StreamDestroy, "cuStreamDestroy_v2", missing);
  bind(handle_, StreamSynchronize, "cuStreamSynchronize", missing);
  bind(handle_, GetErrorName, "cuGetErrorName", missing);
  if (!missing.empty()) {
    reason_ = "symbol missing: " + missing + " not found in " + path_;
    return;
  }
  std::string ignored;
  bind(handle_, MemAllocManaged, "cuMemAllocManaged", ignored);
  bind(handle_, LaunchHostFunc, "cuLaunchHostFunc", ignored);

  if (CUresult r = Init(0); r != CUDA_SUCCESS) {
    // Not cuda_error_name(): that would re-enter instance() while it is being built.
    reason_ = "driver failed to initialise: cuInit returned " + error_name(GetErrorName, r);
    return;
  }
  DriverGetVersion(&driver_version_);
  if (CUresult r = DeviceGetCount(&device_count_); r != CUDA_SUCCESS) {
    reason_ = "cuDeviceGetCount returned " + error_name(GetErrorName, r);
    return;
  }
  if (device_count_ <= 0) {
    reason_ = "no CUDA device";
    return;
  }
  available_ = true;
  reason_    = "loaded " + path_ + " (driver " + std::to_string(driver_version_ / 1000) + "." +
            std::to_string(driver_version_ % 1000 / 10) + ", " + std::to_string(device_count_) +
            " device(s))";
}

const CudaAPI& CudaAPI::instance()
{
  // Never unloaded: thread-local streams and pinned buffers may be released at exit.
  static const CudaAPI* api = new CudaAPI();
  return *api;
}

std::string cuda_error_name(CUresult r) { return error_name(CudaAPI::instance().GetErrorName, r); }

void cuda_check(CUresult r, const char* call, const std::string& context)
{
  if (r == CUDA_SUCCESS) { return; }
  throw CudaDriverError(std::string(call) + " failed: " + cuda_error_name(r) +
                        (context.empty() ? "" : " " + context));
}

const CudaAPI* cuda_api_or_throw(const std::string& what)
{
  const auto& api = CudaAPI::instance();
  if (!api.available()) {
    throw CudaDriverError(what + ": the CUDA driver is not available (" + api.reason() + ")");
  }
  return &api;
}

}  // namespace kvikio::detail

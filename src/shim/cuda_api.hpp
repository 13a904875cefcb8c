#pragma once
// Run-time binding to the CUDA driver library (libcuda.so.1, or the library named by
// KVIKIO_LIBCUDA_PATH, e.g. the tests' stand-in). Nothing vendor is linked: one build runs
// with and without a GPU. cuda.h supplies the types and prototypes only.
#include <cuda.h>

#include <string>

namespace kvikio::detail {

/// The driver entry points we use. Loaded once per process; `available()` says whether
/// every symbol resolved and cuInit succeeded, `reason()` why not.
class CudaAPI {
 public:
  decltype(&::cuInit) Init{};
  decltype(&::cuDriverGetVersion) DriverGetVersion{};
  decltype(&::cuDeviceGetCount) DeviceGetCount{};
  decltype(&::cuDeviceGet) DeviceGet{};
  decltype(&::cuDevicePrimaryCtxRetain) DevicePrimaryCtxRetain{};
  decltype(&::cuDevicePrimaryCtxRelease) DevicePrimaryCtxRelease{};
  decltype(&::cuCtxGetCurrent) CtxGetCurrent{};
  decltype(&::cuCtxSetCurrent) CtxSetCurrent{};
  decltype(&::cuCtxPushCurrent) CtxPushCurrent{};
  decltype(&::cuCtxPopCurrent) CtxPopCurrent{};
  decltype(&::cuCtxGetDevice) CtxGetDevice{};
  decltype(&::cuCtxSynchronize) CtxSynchronize{};
  decltype(&::cuPointerGetAttribute) PointerGetAttribute{};
  decltype(&::cuMemGetAddressRange) MemGetAddressRange{};
  decltype(&::cuMemAlloc) MemAlloc{};
  decltype(&::cuMemFree) MemFree{};
  decltype(&::cuMemHostAlloc) MemHostAlloc{};
  decltype(&::cuMemFreeHost) MemFreeHost{};
  decltype(&::cuMemcpyHtoD) MemcpyHtoD{};
  decltype(&::cuMemcpyDtoH) MemcpyDtoH{};
  decltype(&::cuMemcpyHtoDAsync) MemcpyHtoDAsync{};
  decltype(&::cuMemcpyDtoHAsync) MemcpyDtoHAsync{};
  decltype(&::cuStreamCreate) StreamCreate{};
  decltype(&::cuStreamDestroy) StreamDestroy{};
  decltype(&::cuStreamSynchronize) StreamSynchronize{};
  decltype(&::cuGetErrorName) GetErrorName{};
  // Optional: not every driver (or stand-in) has them; callers check for null.
  decltype(&::cuMemAllocManaged) MemAllocManaged{};
  decltype(&::cuLaunchHostFunc) LaunchHostFunc{};

  /// The process-wide instance; loading happens on first call (thread safe).
  static const CudaAPI& instance();

  [[nodiscard]] bool available() const noexcept { return available_; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] int driver_version() const noexcept { return driver_version_; }
  [[nodiscard]] int device_count() const noexcept { return device_count_; }
  [[nodiscard]] void* handle() const noexcept { return handle_; }

 private:
  CudaAPI();
  bool available_{false};
  std::string reason_;
  std::string path_;
  void* handle_{nullptr};
  int driver_version_{0};
  int device_count_{0};
};

/// "CUDA_ERROR_X (n)" for a result code.
std::string cuda_error_name(CUresult r);

/// Throws CudaDriverError("<call> failed: CUDA_ERROR_X (n) <context>") unless r is
/// CUDA_SUCCESS.
void cuda_check(CUresult r, const char* call, const std::string& context = {});

/// The driver (never null); throws CudaDriverError naming `what` when it is not
/// available. A pointer, not a reference: GCC 13 flags references returned from calls that
/// take temporaries (-Wdangling-reference).
const CudaAPI* cuda_api_or_throw(const std::string& what);

}  // namespace kvikio::detail

#pragma once
/// @file utils.hpp
/// libkvikio's helper functions: size conversions, what a pointer is and which CUDA context
/// owns it, and future helpers. The CUDA types are declared opaquely (the same types as
/// cuda.h's), so this header needs no vendor header. The context functions throw
/// CudaDriverError (a CUfileException) when the CUDA driver is not available or a call fails.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <limits>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>

#include <kvikio/error.hpp>
#include <kvikio/export.hpp>

struct CUctx_st;
// The same declarations as cuda.h's (64-bit); repeating an identical typedef is valid C++.
/// The CUDA driver's context handle (as cuda.h declares it).
typedef struct CUctx_st* CUcontext;  // NOLINT(modernize-use-using)
/// A device address (as cuda.h declares it).
typedef unsigned long long CUdeviceptr_v2;  // NOLINT(modernize-use-using)
/// A device address (as cuda.h declares it).
typedef CUdeviceptr_v2 CUdeviceptr;  // NOLINT(modernize-use-using)

namespace kvikio {

/// The system's page size in bytes.
KVIKIO_EXPORT std::size_t get_page_size();

/// `x` as off_t / ssize_t; throws std::overflow_error when it does not fit.
[[nodiscard]] KVIKIO_EXPORT off_t convert_size2off(std::size_t x);
/// `x` as a signed size. Throws std::overflow_error when it does not fit.
[[nodiscard]] KVIKIO_EXPORT ssize_t convert_size2ssize(std::size_t x);
/// A pointer as a CUdeviceptr.
[[nodiscard]] KVIKIO_EXPORT CUdeviceptr convert_void2deviceptr(const void* devPtr);

/// An integer as a 64-bit one (std::uint64_t stays unsigned); throws std::overflow_error when
/// it does not fit in std::int64_t.
template <typename T, std::enable_if_t<std::is_integral_v<T>>* = nullptr>
[[nodiscard]] std::int64_t convert_to_64bit(T value)
{
  if constexpr (std::numeric_limits<T>::max() > std::numeric_limits<std::int64_t>::max()) {
    KVIKIO_EXPECT(value <= static_cast<T>(std::numeric_limits<std::int64_t>::max()),
                  "convert_to_64bit(x): x too large to fit std::int64_t",
                  std::overflow_error);
  }
  return static_cast<std::int64_t>(value);
}
/// `value` unchanged: libkvikio's conversion to a 64-bit integer, for code written against it.
[[nodiscard]] inline std::uint64_t convert_to_64bit(std::uint64_t value) { return value; }
/// A floating-point value as a double.
template <typename T, std::enable_if_t<std::is_floating_point_v<T>>* = nullptr>
[[nodiscard]] double convert_to_64bit(T value)
{
  return static_cast<double>(value);
}

/// True when `ptr` is host memory: pageable, or page-locked (cuMemHostAlloc). Device and
/// managed memory are not. True for everything when no CUDA driver is available.
KVIKIO_EXPORT bool is_host_memory(const void* ptr);

/// The ordinal of the device holding `dev_ptr`.
[[nodiscard]] KVIKIO_EXPORT int get_device_ordinal_from_pointer(CUdeviceptr dev_ptr);

/// The primary context of device `ordinal`, retained for the life of the process.
[[nodiscard]] KVIKIO_EXPORT CUcontext get_primary_cuda_context(int ordinal);

/// The context `dev_ptr` was allocated in; nullopt for memory with no owning context (host
/// memory unknown to CUDA, or the virtual memory API's mappings).
[[nodiscard]] KVIKIO_EXPORT std::optional<CUcontext> get_context_associated_pointer(
  CUdeviceptr dev_ptr);

/// True when the current context can access `dev_ptr`.
[[nodiscard]] KVIKIO_EXPORT bool current_context_can_access_pointer(CUdeviceptr dev_ptr);

/// The context to use for `devPtr`: its own, else the current one when that can access it,
/// else the primary context of its device.
[[nodiscard]] KVIKIO_EXPORT CUcontext get_context_from_pointer(const void* devPtr);

/// Pushes `ctx` onto this thread's context stack for the object's lifetime.
class KVIKIO_EXPORT PushAndPopContext {
 public:
  /// Makes `ctx` current on this thread until destruction, which restores the previous context.
  PushAndPopContext(CUcontext ctx);  // NOLINT(google-explicit-constructor): as libkvikio
  PushAndPopContext(const PushAndPopContext&)            = delete;
  PushAndPopContext& operator=(const PushAndPopContext&) = delete;
  PushAndPopContext(PushAndPopContext&&)                 = delete;
  PushAndPopContext& operator=(PushAndPopContext&&)      = delete;
  ~PushAndPopContext();

 private:
  CUcontext ctx_;
};

/// (base address, size, offset of `devPtr` from the base) of the device allocation holding
/// `devPtr`, queried in context `*ctx`; when `ctx` or `*ctx` is null the context is looked up
/// (get_context_from_pointer), and stored in `*ctx` when `ctx` is not null.
KVIKIO_EXPORT std::tuple<void*, std::size_t, std::size_t> get_alloc_info(const void* devPtr,
                                                                         CUcontext* ctx = nullptr);

/// A future that is already ready with `t`.
template <typename T>
std::future<std::decay_t<T>> make_ready_future(T&& t)
{
  std::promise<std::decay_t<T>> p;
  auto fut = p.get_future();
  p.set_value(std::forward<T>(t));
  return fut;
}

/// True when `future` (std::future or std::shared_future) is ready, without waiting. Throws
/// std::invalid_argument for a future with no shared state.
template <typename T>
bool is_future_done(const T& future)
{
  KVIKIO_EXPECT(future.valid(),
                "The future object does not refer to a valid shared state.",
                std::invalid_argument);
  return future.wait_for(std::chrono::seconds(0)) != std::future_status::timeout;
}

}  // namespace kvikio

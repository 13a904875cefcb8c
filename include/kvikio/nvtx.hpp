#pragma once
/// @file nvtx.hpp
/// NVTX ranges and markers in the "libkvikio" domain, for profilers such as Nsight Systems.
///
/// NVTX3 is header-only: nothing is linked, and without a profiler attached each range costs
/// a check of a null function pointer. The ranges are compiled in where `<nvtx3/nvtx3.hpp>` is
/// on the include path (the CUDA toolkit's include directory, or the `nvidia-nvtx` wheel's
/// `nvidia/cu13/include`), unless `KVIKIO_DISABLE_NVTX` is defined; otherwise every macro
/// below compiles to nothing and its arguments are not evaluated. `KVIKIO_NVTX_ENABLED` says
/// which (1 or 0) in the including translation unit; kvikio::is_nvtx_enabled() says whether
/// libkvikio itself was built with them (`kvikio info` prints it).
///
/// The macros, as in libkvikio:
///  - `KVIKIO_NVTX_FUNC_RANGE()`, `KVIKIO_NVTX_FUNC_RANGE(payload)`,
///    `KVIKIO_NVTX_FUNC_RANGE(payload, color)`: a range named after the enclosing function,
///    from here to the end of the scope.
///  - `KVIKIO_NVTX_SCOPED_RANGE(message)`, `(message, payload)`, `(message, payload, color)`:
///    a range named `message` (a string literal, registered with NVTX once) to the end of the
///    scope.
///  - `KVIKIO_NVTX_MARKER(message, payload)`: an instant event.
/// A payload is any arithmetic value (stored as a 64-bit integer or a double); a color is a
/// kvikio::nvtx_color_type (nvtx3::color; nvtx3::rgb converts to it), e.g.
/// NvtxManager::get_color_by_index(i).
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include <kvikio/export.hpp>

#if !defined(KVIKIO_DISABLE_NVTX) && __has_include(<nvtx3/nvtx3.hpp>)
#define KVIKIO_NVTX_ENABLED 1
#include <sys/syscall.h>
#include <unistd.h>

#include <array>

#include <nvtx3/nvtx3.hpp>
#else
/// 1 where this translation unit sees the NVTX3 headers (ranges recorded), else 0.
#define KVIKIO_NVTX_ENABLED 0
#endif

namespace kvikio {

/// True when libkvikio was built with NVTX ranges (the NVTX3 headers were found and
/// KVIKIO_USE_NVTX was not OFF); independent of this translation unit's KVIKIO_NVTX_ENABLED.
KVIKIO_EXPORT bool is_nvtx_enabled() noexcept;

/// The tag of libkvikio's NVTX domain.
struct libkvikio_domain {
  /// The domain's name, as profilers show it.
  static constexpr const char* name{"libkvikio"};
};

// The two states get different inline namespaces, so that translation units built with and
// without NVTX can share a program without two different definitions of one name.
#if KVIKIO_NVTX_ENABLED
inline namespace nvtx_on {
/// A range's or marker's color.
using nvtx_color_type = nvtx3::color;
/// A range in the libkvikio domain, ended by its destructor.
using nvtx_scoped_range_type = nvtx3::scoped_range_in<libkvikio_domain>;
/// A message registered once with NVTX in the libkvikio domain.
using nvtx_registered_string_type = nvtx3::registered_string_in<libkvikio_domain>;
#else
inline namespace nvtx_off {
/// A range's color (without NVTX: a stand-in that is never used).
using nvtx_color_type = std::uint32_t;
#endif
/// libkvikio's newer names of the same types.
using NvtxColor = nvtx_color_type;

/// Colors and thread names for NVTX (a singleton without state of its own).
class NvtxManager {
 public:
  /// The one instance.
  static NvtxManager& instance() noexcept
  {
    static NvtxManager manager;
    return manager;
  }
  /// The color ranges get when none is given.
  static const nvtx_color_type& default_color() noexcept { return palette()[0]; }
  /// Color `idx` of a palette of 8, wrapping around (idx mod 8).
  static const nvtx_color_type& get_color_by_index(std::uint64_t idx) noexcept
  {
    return palette()[idx % palette().size()];
  }
  /// Names the calling OS thread `new_name` in profiles (nvtxNameOsThread). Does nothing
  /// without NVTX or without a profiler.
  static void rename_current_thread(std::string_view new_name) noexcept
  {
#if KVIKIO_NVTX_ENABLED
    try {
      const std::string name(new_name);
      nvtxNameOsThreadA(static_cast<std::uint32_t>(::syscall(SYS_gettid)), name.c_str());
    } catch (...) {  // std::bad_alloc: the name is only a courtesy
    }
#else
    static_cast<void>(new_name);
#endif
  }

  NvtxManager(const NvtxManager&)            = delete;
  NvtxManager& operator=(const NvtxManager&) = delete;
  NvtxManager(NvtxManager&&)                 = delete;
  NvtxManager& operator=(NvtxManager&&)      = delete;

 private:
  NvtxManager() = default;
#if KVIKIO_NVTX_ENABLED
  static const std::array<nvtx_color_type, 8>& palette() noexcept
  {
    // Distinct hues, so that consecutive calls are told apart on a timeline.
    static const std::array<nvtx_color_type, 8> colors{
      nvtx3::rgb{118, 185, 0},    // green: the default
      nvtx3::rgb{31, 119, 180},   // blue
      nvtx3::rgb{255, 127, 14},   // orange
      nvtx3::rgb{214, 39, 40},    // red
      nvtx3::rgb{148, 103, 189},  // purple
      nvtx3::rgb{140, 86, 75},    // brown
      nvtx3::rgb{227, 119, 194},  // pink
      nvtx3::rgb{23, 190, 207},   // cyan
    };
    return colors;
  }
#else
  struct Palette {
    nvtx_color_type colors[8]{0xff76b900U,
                              0xff1f77b4U,
                              0xffff7f0eU,
                              0xffd62728U,
                              0xff9467bdU,
                              0xff8c564bU,
                              0xffe377c2U,
                              0xff17becfU};
    const nvtx_color_type& operator[](std::uint64_t i) const noexcept { return colors[i]; }
    [[nodiscard]] static constexpr std::uint64_t size() noexcept { return 8; }
  };
  static const Palette& palette() noexcept
  {
    static const Palette colors{};
    return colors;
  }
#endif
};

/// An arithmetic value as an NVTX payload: unsigned as std::uint64_t, signed as std::int64_t,
/// floating point as double.
template <typename T>
[[nodiscard]] constexpr auto nvtx_payload_value(T value) noexcept
{
  static_assert(std::is_arithmetic_v<T>, "an NVTX payload is a number");
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<double>(value);
  } else if constexpr (std::is_unsigned_v<T>) {
    return static_cast<std::uint64_t>(value);
  } else {
    return static_cast<std::int64_t>(value);
  }
}

/// Takes the arguments of a disabled macro in an unevaluated operand: they are checked and
/// count as used, but never run. Declared only.
template <typename... T>
int nvtx_discard(const T&...) noexcept;
}  // namespace nvtx_on / nvtx_off

}  // namespace kvikio

/// Pastes two tokens (the helper of KVIKIO_NVTX_CONCAT).
#define KVIKIO_NVTX_CONCAT_(x, y) x##y
/// Pastes two tokens after expanding them (unique names for scoped ranges).
#define KVIKIO_NVTX_CONCAT(x, y) KVIKIO_NVTX_CONCAT_(x, y)

#if KVIKIO_NVTX_ENABLED

// A message registered once per use site (a static in a lambda of its own).
#define KVIKIO_NVTX_REGISTER_STRING(message)                                   \
  [](const char* kvikio_nvtx_message) -> const auto&                           \
  {                                                                            \
    static const ::kvikio::nvtx_registered_string_type kvikio_nvtx_registered{ \
      kvikio_nvtx_message};                                                    \
    return kvikio_nvtx_registered;                                             \
  }                                                                            \
  (message)

#define KVIKIO_NVTX_SCOPED_RANGE_3_(message, payload_v, color_v)                          \
  const ::kvikio::nvtx_scoped_range_type KVIKIO_NVTX_CONCAT(kvikio_nvtx_range_, __LINE__) \
  {                                                                                       \
    ::nvtx3::event_attributes                                                             \
    {                                                                                     \
      KVIKIO_NVTX_REGISTER_STRING(message),                                               \
        ::nvtx3::payload{::kvikio::nvtx_payload_value(payload_v)}, ::nvtx3::color         \
      {                                                                                   \
        color_v                                                                           \
      }                                                                                   \
    }                                                                                     \
  }
#define KVIKIO_NVTX_SCOPED_RANGE_2_(message, payload_v) \
  KVIKIO_NVTX_SCOPED_RANGE_3_(message, payload_v, ::kvikio::NvtxManager::default_color())
#define KVIKIO_NVTX_SCOPED_RANGE_1_(message)                                              \
  const ::kvikio::nvtx_scoped_range_type KVIKIO_NVTX_CONCAT(kvikio_nvtx_range_, __LINE__) \
  {                                                                                       \
    ::nvtx3::event_attributes                                                             \
    {                                                                                     \
      KVIKIO_NVTX_REGISTER_STRING(message), ::kvikio::NvtxManager::default_color()        \
    }                                                                                     \
  }
#define KVIKIO_NVTX_PICK_3_(_1, _2, _3, NAME, ...) NAME
/// A range named `message` (1 to 3 arguments: message, payload, color) to the end of the scope.
#define KVIKIO_NVTX_SCOPED_RANGE(...)              \
  KVIKIO_NVTX_PICK_3_(__VA_ARGS__,                 \
                      KVIKIO_NVTX_SCOPED_RANGE_3_, \
                      KVIKIO_NVTX_SCOPED_RANGE_2_, \
                      KVIKIO_NVTX_SCOPED_RANGE_1_) \
  (__VA_ARGS__)

#define KVIKIO_NVTX_FUNC_RANGE_0_() KVIKIO_NVTX_SCOPED_RANGE_1_(__PRETTY_FUNCTION__)
#define KVIKIO_NVTX_FUNC_RANGE_1_(payload_v) \
  KVIKIO_NVTX_SCOPED_RANGE_2_(__PRETTY_FUNCTION__, payload_v)
#define KVIKIO_NVTX_FUNC_RANGE_2_(payload_v, color_v) \
  KVIKIO_NVTX_SCOPED_RANGE_3_(__PRETTY_FUNCTION__, payload_v, color_v)
/// A range named after the enclosing function (0 to 2 arguments: payload, color) to the end of
/// the scope.
#define KVIKIO_NVTX_FUNC_RANGE(...)                  \
  KVIKIO_NVTX_PICK_3_(_0 __VA_OPT__(, ) __VA_ARGS__, \
                      KVIKIO_NVTX_FUNC_RANGE_2_,     \
                      KVIKIO_NVTX_FUNC_RANGE_1_,     \
                      KVIKIO_NVTX_FUNC_RANGE_0_)     \
  (__VA_ARGS__)

/// An instant event named `message` carrying `payload`.
#define KVIKIO_NVTX_MARKER(message, payload_v)                      \
  ::nvtx3::mark_in<::kvikio::libkvikio_domain>(                     \
    ::nvtx3::event_attributes{KVIKIO_NVTX_REGISTER_STRING(message), \
                              ::nvtx3::payload{::kvikio::nvtx_payload_value(payload_v)}})

#else

/// Without NVTX: nothing is recorded and the arguments are not evaluated.
#define KVIKIO_NVTX_SCOPED_RANGE(...) static_cast<void>(sizeof(::kvikio::nvtx_discard(__VA_ARGS__)))
/// Without NVTX: nothing is recorded and the arguments are not evaluated.
#define KVIKIO_NVTX_FUNC_RANGE(...) static_cast<void>(sizeof(::kvikio::nvtx_discard(__VA_ARGS__)))
/// Without NVTX: nothing is recorded and the arguments are not evaluated.
#define KVIKIO_NVTX_MARKER(message, payload_v) \
  static_cast<void>(sizeof(::kvikio::nvtx_discard(message, payload_v)))

#endif

#pragma once
/// @file compat_mode.hpp
#include <cstdint>
#include <string_view>

#include <kvikio/export.hpp>

namespace kvikio {

/// How IO reaches storage.
/// OFF: cuFile only (an error where cuFile cannot be used); ON: POSIX only;
/// AUTO: cuFile where it works, POSIX otherwise (decided once per process, then per file).
enum class CompatMode : std::uint8_t { OFF, ON, AUTO };

/// Parses "ON"/"OFF"/"AUTO" (any case; also true/false/yes/no/1/0).
/// Throws std::invalid_argument naming the value otherwise.
KVIKIO_EXPORT CompatMode parse_compat_mode_str(std::string_view str);

/// "OFF", "ON" or "AUTO".
KVIKIO_EXPORT std::string_view to_string(CompatMode mode) noexcept;

}  // namespace kvikio

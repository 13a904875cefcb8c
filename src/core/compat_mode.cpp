#include <kvikio/compat_mode.hpp>

#include <stdexcept>
#include <string>

#include "core/text.hpp"

namespace kvikio {

CompatMode parse_compat_mode_str(std::string_view str)
{
  const std::string s = detail::to_lower(detail::trim(str));
  if (s == "on" || s == "true" || s == "yes" || s == "1") { return CompatMode::ON; }
  if (s == "off" || s == "false" || s == "no" || s == "0") { return CompatMode::OFF; }
  if (s == "auto") { return CompatMode::AUTO; }
  throw std::invalid_argument("unknown compat mode '" + std::string(str) +
                              "': expected ON, OFF or AUTO");
}

std::string_view to_string(CompatMode mode) noexcept
{
  switch (mode) {
    case CompatMode::OFF:
      return "OFF";
    case CompatMode::ON:
      return "ON";
    case CompatMode::AUTO:
      return "AUTO";
  }
  return "AUTO";
}

}  // namespace kvikio

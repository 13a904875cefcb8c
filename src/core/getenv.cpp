// The typed specialisations of getenv_or (kvikio/defaults.hpp), libkvikio's helper.
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvikio/compat_mode.hpp>
#include <kvikio/defaults.hpp>

#include "core/text.hpp"

namespace kvikio {

namespace {

const char* env(std::string_view name) { return std::getenv(std::string{name}.c_str()); }

[[noreturn]] void bad_value(std::string_view name, const char* value)
{
  throw std::invalid_argument("unknown config value " + std::string{name} + "=" + value);
}

}  // namespace

template <>
bool getenv_or(std::string_view env_var_name, bool default_val)
{
  const char* value = env(env_var_name);
  if (value == nullptr) { return default_val; }
  if (const auto flag = detail::parse_bool_word(value)) { return *flag; }
  bad_value(env_var_name, value);
}

template <>
CompatMode getenv_or(std::string_view env_var_name, CompatMode default_val)
{
  const char* value = env(env_var_name);
  if (value == nullptr) { return default_val; }
  return parse_compat_mode_str(value);
}

template <>
std::vector<int> getenv_or(std::string_view env_var_name, std::vector<int> default_val)
{
  const char* value = env(env_var_name);
  if (value == nullptr) { return default_val; }
  const std::string text(detail::trim(value));
  if (text.empty()) { return default_val; }
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = std::min(text.find(',', start), text.size());
    try {
      std::size_t used       = 0;
      const std::string item = text.substr(start, comma - start);
      out.push_back(std::stoi(item, &used));
      if (!detail::trim(std::string_view(item).substr(used)).empty()) {
        bad_value(env_var_name, value);
      }
    } catch (const std::logic_error&) {
      bad_value(env_var_name, value);
    }
    start = comma + 1;
  }
  return out;
}

}  // namespace kvikio

// The typed specialisations of getenv_or (kvikio/defaults.hpp), libkvikio's helper.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvikio/compat_mode.hpp>
#include <kvikio/defaults.hpp>

namespace kvikio {

namespace {

std::string trimmed_lower(std::string s)
{
  const auto first = s.find_first_not_of(" \t\n");
  const auto last  = s.find_last_not_of(" \t\n");
  s                = first == std::string::npos ? std::string{} : s.substr(first, last - first + 1);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

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
  const std::string text = trimmed_lower(value);
  if (text == "true" || text == "on" || text == "yes") { return true; }
  if (text == "false" || text == "off" || text == "no") { return false; }
  try {
    std::size_t used = 0;
    const int n      = std::stoi(text, &used);
    if (used == text.size()) { return n != 0; }
  } catch (const std::logic_error&) {  // not a number, or out of range
  }
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
  const std::string text = trimmed_lower(value);
  if (text.empty()) { return default_val; }
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = std::min(text.find(',', start), text.size());
    try {
      std::size_t used       = 0;
      const std::string item = text.substr(start, comma - start);
      out.push_back(std::stoi(item, &used));
      if (trimmed_lower(item.substr(used)).size() != 0) { bad_value(env_var_name, value); }
    } catch (const std::logic_error&) {
      bad_value(env_var_name, value);
    }
    start = comma + 1;
  }
  return out;
}

}  // namespace kvikio

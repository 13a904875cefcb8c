#pragma once
// The text helpers of every parser (settings and the environment, getenv_or, the log level,
// the compat mode, URLs, HTTP headers): one meaning of white space, of case, and of a
// boolean word.
#include <charconv>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kvikio::detail {

/// ASCII white space (as std::isspace in the C locale), without the locale.
constexpr bool is_space(char c) noexcept
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/// `s` without white space at either end.
constexpr std::string_view trim(std::string_view s) noexcept
{
  while (!s.empty() && is_space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_space(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

/// ASCII lower case (locale-free).
constexpr char to_lower(char c) noexcept
{
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

/// `s` in ASCII lower case.
inline std::string to_lower(std::string_view s)
{
  std::string out(s);
  for (auto& c : out) {
    c = to_lower(c);
  }
  return out;
}

/// True when `a` and `b` are equal ignoring ASCII case.
constexpr bool iequals(std::string_view a, std::string_view b) noexcept
{
  if (a.size() != b.size()) { return false; }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (to_lower(a[i]) != to_lower(b[i])) { return false; }
  }
  return true;
}

/// A boolean as text, the one rule of the library (upstream getenv_or<bool>'s): true, on,
/// yes / false, off, no in any case, or an integer (non-zero is true), white space around
/// allowed; nothing when it is none of these.
inline std::optional<bool> parse_bool_word(std::string_view text) noexcept
{
  const auto t = trim(text);
  for (std::string_view w : {"true", "on", "yes"}) {
    if (iequals(t, w)) { return true; }
  }
  for (std::string_view w : {"false", "off", "no"}) {
    if (iequals(t, w)) { return false; }
  }
  const auto digits = !t.empty() && t.front() == '+' ? t.substr(1) : t;
  long long n{};
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc{} || end != digits.data() + digits.size()) {
    return std::nullopt;
  }
  return n != 0;
}

}  // namespace kvikio::detail

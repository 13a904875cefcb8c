#include "remote/response_parse.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <limits>

#include "core/text.hpp"
#include "remote/url.hpp"

namespace kvikio::detail {
namespace {

// A run of digits at the front of `s` as a non-negative long long (removed from `s`), or
// nullopt when there are no digits or the number does not fit.
std::optional<long long> take_number(std::string_view& s)
{
  std::size_t n = 0;
  while (n < s.size() && s[n] >= '0' && s[n] <= '9') {
    ++n;
  }
  if (n == 0) { return std::nullopt; }
  long long v    = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + n, v);
  if (ec != std::errc{} || end != s.data() + n) { return std::nullopt; }
  s.remove_prefix(n);
  return v;
}

bool take(std::string_view& s, char c)
{
  if (s.empty() || s.front() != c) { return false; }
  s.remove_prefix(1);
  return true;
}

}  // namespace

std::optional<ContentRange> parse_content_range(std::string_view value)
{
  auto s = trim(value);
  // The unit is case-insensitive (RFC 9110 §14.1), followed by one space (lenient: more).
  constexpr std::string_view unit = "bytes";
  if (s.size() < unit.size() || lower(std::string(s.substr(0, unit.size()))) != unit) {
    return std::nullopt;
  }
  s.remove_prefix(unit.size());
  if (s.empty() || !is_space(s.front())) { return std::nullopt; }
  while (!s.empty() && is_space(s.front())) {
    s.remove_prefix(1);
  }
  ContentRange r;
  if (!take(s, '*')) {
    r.first = take_number(s);
    if (!r.first || !take(s, '-')) { return std::nullopt; }
    r.last = take_number(s);
    if (!r.last || *r.first > *r.last) { return std::nullopt; }
  }
  if (!take(s, '/')) { return std::nullopt; }
  if (r.first && take(s, '*')) {
    // "bytes first-last/*": the complete length is unknown.
  } else {
    r.total = take_number(s);
    if (!r.total) { return std::nullopt; }
  }
  if (!s.empty()) { return std::nullopt; }
  if (r.last && r.total && *r.last >= *r.total) { return std::nullopt; }
  return r;
}

void parse_header_line(std::string_view line, HeaderState& st)
{
  if (line.rfind("HTTP/", 0) == 0) {
    st = HeaderState{};
    return;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) { return; }
  const std::string name = lower(std::string(line.substr(0, colon)));
  auto value             = line.substr(colon + 1);
  if (name == "etag") {
    auto v = trim(value);
    // A usable strong ETag is one quoted token; anything else (weak, bare, with control
    // characters that could end the If-Match header line) is not pinned.
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"' && v.size() <= 1024 &&
        std::all_of(v.begin(), v.end(), [](unsigned char c) { return c > 0x20 && c < 0x7f; })) {
      st.etag = std::string(v);
    }
    return;
  }
  if (name != "content-range") { return; }
  // A malformed or inconsistent Content-Range counts as none: a 206 without a usable one is
  // refused, and a size is never taken from a negative or impossible total.
  auto r         = parse_content_range(value);
  st.range_start = r ? r->first : std::nullopt;
  st.range_end   = r ? r->last : std::nullopt;
  st.range_total = r ? r->total : std::nullopt;
}

std::string error_code_from_body(const std::string& body)
{
  auto a = body.find("<Code>");
  auto b = body.find("</Code>");
  if (a == std::string::npos || b == std::string::npos || b <= a + 6) { return {}; }
  std::string code = body.substr(a + 6, b - a - 6);
  if (code.size() > 64 || !std::all_of(code.begin(), code.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '.' || c == '_' || c == '-';
      })) {
    return {};
  }
  return code;
}

std::optional<std::size_t> webhdfs_file_length(std::string_view body)
{
  // A flat search is enough for this one field.
  auto key = body.find("\"length\"");
  if (key == std::string_view::npos) { return std::nullopt; }
  auto colon = body.find(':', key);
  if (colon == std::string_view::npos) { return std::nullopt; }
  auto pos = colon + 1;
  while (pos < body.size() && std::isspace(static_cast<unsigned char>(body[pos]))) {
    ++pos;
  }
  std::size_t n = 0;
  bool digits   = false;
  while (pos < body.size() && std::isdigit(static_cast<unsigned char>(body[pos]))) {
    auto d = static_cast<std::size_t>(body[pos] - '0');
    // A length that does not fit is no length (it would otherwise wrap to a small size).
    if (n > (std::numeric_limits<std::size_t>::max() - d) / 10) { return std::nullopt; }
    n      = n * 10 + d;
    digits = true;
    ++pos;
  }
  if (!digits) { return std::nullopt; }
  return n;
}

}  // namespace kvikio::detail

#include "remote/response_parse.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstddef>

#include "remote/url.hpp"

namespace kvikio::detail {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view trim(std::string_view s)
{
  while (!s.empty() && is_space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_space(s.back())) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

std::optional<ContentRange> parse_content_range(std::string_view value)
{
  // "bytes a-b/total" or "bytes */total"
  std::string v(value);
  long long a = 0, b = 0, total = 0;
  char star = 0;
  if (std::sscanf(v.c_str(), " bytes %lld-%lld/%lld", &a, &b, &total) == 3) {
    return ContentRange{a, b, total};
  }
  if (std::sscanf(v.c_str(), " bytes %c/%lld", &star, &total) == 2 && star == '*') {
    return ContentRange{std::nullopt, std::nullopt, total};
  }
  return std::nullopt;
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
  if (auto r = parse_content_range(value)) {
    st.range_start = r->first;
    st.range_end   = r->last;
    st.range_total = r->total;
  }
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
    n      = n * 10 + static_cast<std::size_t>(body[pos] - '0');
    digits = true;
    ++pos;
  }
  if (!digits) { return std::nullopt; }
  return n;
}

}  // namespace kvikio::detail

#include "remote/url.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <string_view>

#include <kvikio/remote_handle.hpp>

#include "core/text.hpp"

namespace kvikio::detail {

std::string lower(std::string s) { return to_lower(s); }

bool is_s3_url(const std::string& url) noexcept
{
  return url.size() >= 5 && lower(url.substr(0, 5)) == "s3://";
}

bool has_url_scheme(const std::string& url) noexcept
{
  const auto sep = url.find("://");
  if (sep == std::string::npos || sep == 0 ||
      std::isalpha(static_cast<unsigned char>(url[0])) == 0) {
    return false;
  }
  return std::all_of(url.begin(), url.begin() + static_cast<std::ptrdiff_t>(sep), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return std::isalnum(c) != 0 || c == '+' || c == '-' || c == '.';
  });
}

std::optional<UrlParts> split_url(const std::string& url)
{
  auto sep = url.find("://");
  if (sep == std::string::npos || sep == 0) { return std::nullopt; }
  UrlParts p;
  p.scheme = lower(url.substr(0, sep));
  if (!std::all_of(p.scheme.begin(), p.scheme.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '+' || c == '-' || c == '.';
      })) {
    return std::nullopt;
  }
  std::string rest = url.substr(sep + 3);
  if (auto hash = rest.find('#'); hash != std::string::npos) { rest.resize(hash); }
  auto auth_end     = rest.find_first_of("/?");
  std::string auth  = rest.substr(0, auth_end);
  std::string after = auth_end == std::string::npos ? "" : rest.substr(auth_end);
  if (auto at = auth.rfind('@'); at != std::string::npos) {
    p.userinfo = auth.substr(0, at);
    auth       = auth.substr(at + 1);
  }
  // An IPv6 literal keeps its brackets; the port follows the last ':' outside them.
  auto colon = auth.rfind(':');
  if (colon != std::string::npos && auth.find(']', colon) == std::string::npos) {
    p.port = auth.substr(colon + 1);
    auth   = auth.substr(0, colon);
    if (p.port.empty() || !std::all_of(p.port.begin(), p.port.end(), [](unsigned char c) {
          return std::isdigit(c);
        })) {
      return std::nullopt;
    }
  }
  p.host = lower(auth);
  if (p.host.empty()) { return std::nullopt; }
  auto q = after.find('?');
  p.path = after.substr(0, q);
  if (q != std::string::npos) { p.query = after.substr(q + 1); }
  return p;
}

bool is_http_url(const std::string& url) noexcept
{
  try {
    auto p = split_url(url);
    return p && (p->scheme == "http" || p->scheme == "https");
  } catch (...) {
    return false;
  }
}

std::string percent_encode(const std::string& s, bool keep_slash)
{
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::optional<std::string> query_param(const std::string& query, const std::string& name)
{
  std::string_view q(query);
  while (!q.empty()) {
    auto amp              = q.find('&');
    std::string_view item = q.substr(0, amp);
    auto eq               = item.find('=');
    std::string_view key  = item.substr(0, eq);
    if (key == name) {
      return std::string(eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1));
    }
    if (amp == std::string_view::npos) { break; }
    q.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

std::optional<std::string> getenv_nonempty(const char* name)
{
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') { return std::nullopt; }
  return std::string(v);
}

std::string percent_decode(const std::string& s)
{
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') { return c - '0'; }
    if (c >= 'a' && c <= 'f') { return c - 'a' + 10; }
    if (c >= 'A' && c <= 'F') { return c - 'A' + 10; }
    return -1;
  };
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace kvikio::detail

namespace kvikio {

std::string redact_url(const std::string& url)
{
  // Parameter names (lower case substrings) whose values are secrets: SigV4 and SigV2
  // presigned URLs, Azure-style SAS signatures, WebHDFS delegation tokens, generic tokens.
  static constexpr std::string_view secret_words[] = {
    "signature", "credential", "token", "secret", "password", "delegation", "accesskey", "apikey"};
  static constexpr std::string_view secret_names[] = {"sig", "key", "sv", "se"};
  std::string out                                  = url;
  // user:password@ in the authority.
  if (auto sep = out.find("://"); sep != std::string::npos) {
    auto auth_end = out.find_first_of("/?#", sep + 3);
    auto at       = out.rfind('@', auth_end == std::string::npos ? out.size() : auth_end);
    if (at != std::string::npos && at > sep) { out.replace(sep + 3, at - (sep + 3), "REDACTED"); }
  }
  auto q = out.find('?');
  if (q == std::string::npos) { return out; }
  std::string result = out.substr(0, q + 1);
  std::string_view rest(out);
  rest.remove_prefix(q + 1);
  bool first = true;
  while (true) {
    auto amp              = rest.find('&');
    std::string_view item = rest.substr(0, amp);
    auto eq               = item.find('=');
    std::string key(item.substr(0, eq));
    const std::string lkey = detail::lower(key);
    bool secret            = std::any_of(std::begin(secret_words),
                              std::end(secret_words),
                              [&](auto w) { return lkey.find(w) != std::string::npos; }) ||
                  std::any_of(std::begin(secret_names), std::end(secret_names), [&](auto w) {
                    return lkey == w;
                  });
    if (!first) { result += '&'; }
    first = false;
    if (secret && eq != std::string_view::npos) {
      result += key + "=REDACTED";
    } else {
      result += item;
    }
    if (amp == std::string_view::npos) { break; }
    rest.remove_prefix(amp + 1);
  }
  return result;
}

}  // namespace kvikio

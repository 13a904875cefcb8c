// URL helpers (src/remote/url.{hpp,cpp}): splitting, percent-encoding, query parameters and
// the redaction of credentials that every remote error message goes through.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>

#include <kvikio/remote_handle.hpp>

#include "fuzz_common.hpp"
#include "remote/url.hpp"

using kvikio::fuzz::show;

namespace {

constexpr std::string_view secret = "sEcReT-fUzZ-42";

bool none_of_chars(const std::string& s, std::string_view chars)
{
  return s.find_first_of(chars) == std::string::npos;
}

void check_split(const std::string& url)
{
  auto p = kvikio::detail::split_url(url);  // never throws for any text
  KVIKIO_FUZZ_CHECK(
    kvikio::detail::is_http_url(url) == (p && (p->scheme == "http" || p->scheme == "https")),
    "url " + show(url));
  if (!p) { return; }
  const auto ctx = "url " + show(url);
  KVIKIO_FUZZ_CHECK(!p->scheme.empty() && std::all_of(p->scheme.begin(),
                                                      p->scheme.end(),
                                                      [](unsigned char c) {
                                                        return std::islower(c) || std::isdigit(c) ||
                                                               c == '+' || c == '-' || c == '.';
                                                      }),
                    ctx + " scheme " + show(p->scheme));
  KVIKIO_FUZZ_CHECK(!p->host.empty() && p->host == kvikio::detail::lower(p->host),
                    ctx + " host " + show(p->host));
  // The authority ends at the first '/', '?' or '#': none of them (nor a userinfo '@') can be
  // part of the host, or a URL could name one host to a check and another to libcurl.
  KVIKIO_FUZZ_CHECK(none_of_chars(p->host, "/?#@"), ctx + " host " + show(p->host));
  KVIKIO_FUZZ_CHECK(none_of_chars(p->userinfo, "/?#"), ctx + " userinfo " + show(p->userinfo));
  KVIKIO_FUZZ_CHECK(
    std::all_of(p->port.begin(), p->port.end(), [](unsigned char c) { return std::isdigit(c); }),
    ctx + " port " + show(p->port));
  KVIKIO_FUZZ_CHECK(p->path.empty() || p->path.front() == '/', ctx + " path " + show(p->path));
  KVIKIO_FUZZ_CHECK(none_of_chars(p->path, "?#"), ctx + " path " + show(p->path));
  KVIKIO_FUZZ_CHECK(none_of_chars(p->query, "#"), ctx + " query " + show(p->query));
  // The parts come from the URL, in order: the host is in the authority, lower-cased.
  KVIKIO_FUZZ_CHECK(kvikio::detail::lower(url).find(p->host) != std::string::npos, ctx);
}

int hex_value(char c)
{
  if (c >= '0' && c <= '9') { return c - '0'; }
  if (c >= 'A' && c <= 'F') { return c - 'A' + 10; }
  return -1;  // percent_encode writes upper-case digits only
}

void check_percent_encode(const std::string& s, bool keep_slash)
{
  auto e = kvikio::detail::percent_encode(s, keep_slash);
  std::string decoded;
  for (std::size_t i = 0; i < e.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(e[i]);
    if (c == '%') {
      KVIKIO_FUZZ_CHECK(i + 2 < e.size() && hex_value(e[i + 1]) >= 0 && hex_value(e[i + 2]) >= 0,
                        "encoded " + show(e));
      decoded += static_cast<char>(hex_value(e[i + 1]) * 16 + hex_value(e[i + 2]));
      i += 2;
      continue;
    }
    KVIKIO_FUZZ_CHECK(
      std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/'),
      "encoded " + show(e) + " keeps " + show(std::string(1, char(c))));
    decoded += static_cast<char>(c);
  }
  KVIKIO_FUZZ_CHECK(decoded == s, "percent_encode(" + show(s) + ") decodes to " + show(decoded));
}

void check_query_param(const std::string& query, const std::string& name)
{
  if (name.empty()) { return; }  // never asked for; empty items are skipped differently
  auto v = kvikio::detail::query_param(query, name);
  // Reference: the first '&'-separated item whose key is `name`.
  std::optional<std::string> want;
  std::size_t start = 0;
  while (start <= query.size()) {
    auto amp  = query.find('&', start);
    auto item = query.substr(start, amp == std::string::npos ? std::string::npos : amp - start);
    auto eq   = item.find('=');
    if (item.substr(0, eq) == name) {
      want = eq == std::string::npos ? "" : item.substr(eq + 1);
      break;
    }
    if (amp == std::string::npos) { break; }
    start = amp + 1;
  }
  KVIKIO_FUZZ_CHECK(v == want,
                    "query_param(" + show(query) + ", " + show(name) +
                      ") = " + (v ? show(*v) : "nullopt") + ", expected " +
                      (want ? show(*want) : "nullopt"));
}

// Each parameter of the redacted URL's query whose name marks a secret has the value REDACTED,
// and a userinfo in the authority is REDACTED.
void check_redacted_form(const std::string& url, const std::string& r)
{
  const auto ctx = "redact_url(" + show(url) + ") = " + show(r);
  // For URLs only: text whose first "://" is in the query may lose it to the redaction, and
  // then be redacted differently a second time (more, never less).
  if (!kvikio::detail::split_url(url)) { return; }
  KVIKIO_FUZZ_CHECK(kvikio::redact_url(r) == r, ctx + " is not a fixed point");
  if (auto sep = r.find("://"); sep != std::string::npos) {
    auto auth_end = r.find_first_of("/?#", sep + 3);
    auto auth = r.substr(sep + 3, auth_end == std::string::npos ? auth_end : auth_end - sep - 3);
    if (auto at = auth.rfind('@'); at != std::string::npos) {
      KVIKIO_FUZZ_CHECK(auth.substr(0, at) == "REDACTED", ctx);
    }
  }
}

// A URL built around a known secret in the places credentials go: it never shows.
void check_secret_hidden(const std::vector<std::string>& f, std::uint8_t choice)
{
  static constexpr std::string_view names[] = {"X-Amz-Signature",
                                               "X-Amz-Credential",
                                               "X-Amz-Security-Token",
                                               "Signature",
                                               "AWSAccessKeyId",
                                               "sig",
                                               "delegation",
                                               "password",
                                               "api_token"};
  auto scheme = f[1], user = f[2], host = f[3], before = f[4], after = f[5];
  if (scheme.empty() ||
      !std::all_of(scheme.begin(), scheme.end(), [](unsigned char c) { return std::isalnum(c); }) ||
      !none_of_chars(user, "/?#@") || !none_of_chars(host, "/?#@") ||
      !none_of_chars(before, "#&") || !none_of_chars(after, "#")) {
    return;
  }
  for (const auto& part : f) {
    if (part.find("sEcReT") != std::string::npos) { return; }
  }
  std::string name(names[choice % std::size(names)]);
  if (choice & 0x80) { name = kvikio::detail::lower(name); }
  std::string url;
  if (choice & 0x40) {  // credentials in the authority
    url = scheme + "://" + user + ":" + std::string(secret) + "@" + host + "/p?" + before;
  } else {  // in the query
    url =
      scheme + "://" + host + "/p?" + before + "&" + name + "=" + std::string(secret) + "&" + after;
  }
  auto r = kvikio::redact_url(url);
  KVIKIO_FUZZ_CHECK(r.find(secret) == std::string::npos,
                    "redact_url(" + show(url) + ") = " + show(r) + " shows the secret");
  check_redacted_form(url, r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  if (size == 0) { return 0; }
  const std::uint8_t choice = data[0];
  std::string all(reinterpret_cast<const char*>(data) + 1, size - 1);
  check_split(all);
  check_percent_encode(all, (choice & 1) != 0);
  auto r = kvikio::redact_url(all);
  check_redacted_form(all, r);
  auto f = kvikio::fuzz::fields(data + 1, size - 1, 6);
  check_query_param(f[0], f[1]);
  check_secret_hidden(f, choice);
  return 0;
}

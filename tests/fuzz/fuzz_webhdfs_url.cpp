// WebHDFS URL handling (src/remote/webhdfs.cpp): the URL to REST-path mapping. Whatever the
// input, an endpoint that is built talks to the host it was given, under /webhdfs/v1/, with
// the request parameters (op, offset, length) its own, and its messages hide credentials.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <kvikio/hdfs.hpp>

#include "fuzz_common.hpp"
#include "remote/url.hpp"

using kvikio::WebHdfsEndpoint;
using kvikio::fuzz::show;

namespace {

constexpr std::string_view secret = "sEcReT-fUzZ-42";
constexpr std::string_view prefix = "/webhdfs/v1/";

int hex(char c)
{
  if (c >= '0' && c <= '9') { return c - '0'; }
  c = static_cast<char>(c | 0x20);
  if (c >= 'a' && c <= 'f') { return c - 'a' + 10; }
  return -1;
}

// `s` with every %XX decoded once, as a server that decodes the path before routing sees it.
std::string decoded(std::string_view s)
{
  std::string out;
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

// The URL's path stays under /webhdfs/v1/ after a server decodes it and removes dot segments.
void check_stays_under_prefix(const std::string& url, const std::string& ctx)
{
  auto p = kvikio::detail::split_url(url);
  KVIKIO_FUZZ_CHECK(p && (p->scheme == "http" || p->scheme == "https"), ctx + ": url " + show(url));
  KVIKIO_FUZZ_CHECK(p->path.rfind(prefix, 0) == 0 && p->path.size() > prefix.size(),
                    ctx + ": url " + show(url) + " has path " + show(p->path));
  auto rest         = decoded(std::string_view(p->path).substr(prefix.size()));
  std::size_t start = 0;
  while (true) {
    auto slash = rest.find('/', start);
    auto seg   = rest.substr(start, slash == std::string::npos ? slash : slash - start);
    KVIKIO_FUZZ_CHECK(seg != "." && seg != "..",
                      ctx + ": url " + show(url) + " leaves " + std::string(prefix));
    if (slash == std::string::npos) { break; }
    start = slash + 1;
  }
  // op/offset/length are the endpoint's to set per request: the URL itself carries none, and
  // at most one user.name.
  std::size_t users = 0;
  std::string_view q(p->query);
  while (!q.empty()) {
    auto amp = q.find('&');
    auto key = kvikio::detail::lower(std::string(q.substr(0, std::min(amp, q.find('=')))));
    KVIKIO_FUZZ_CHECK(key != "op" && key != "offset" && key != "length",
                      ctx + ": url " + show(url) + " carries " + show(key));
    users += key == "user.name";
    if (amp == std::string_view::npos) { break; }
    q.remove_prefix(amp + 1);
  }
  KVIKIO_FUZZ_CHECK(users <= 1, ctx + ": url " + show(url));
}

// `secret_placed`: the URL holds the secret only where credentials go (userinfo, delegation).
void check_from_url(const std::string& url, bool secret_placed)
{
  const auto ctx = "WebHdfsEndpoint(" + show(url) + ")";
  try {
    WebHdfsEndpoint ep(url);
    check_stays_under_prefix(ep.url(), ctx);
    auto in  = kvikio::detail::split_url(url);
    auto out = kvikio::detail::split_url(ep.url());
    KVIKIO_FUZZ_CHECK(
      in && out->host == in->host && out->port == in->port && out->scheme == in->scheme,
      ctx + ": url() " + show(ep.url()) + " names another server");
    if (secret_placed) {
      KVIKIO_FUZZ_CHECK(ep.str().find(secret) == std::string::npos, ctx + ": " + ep.str());
    }
  } catch (const std::invalid_argument& e) {
    KVIKIO_FUZZ_CHECK(
      !secret_placed || std::string_view(e.what()).find(secret) == std::string_view::npos,
      ctx + ": message " + show(e.what()));
  } catch (const std::exception& e) {
    KVIKIO_FUZZ_CHECK(false, ctx + ": threw " + typeid(e).name() + ": " + e.what());
  }
}

void check_from_parts(const std::string& host,
                      const std::string& port,
                      const std::string& path,
                      const std::string& user)
{
  const auto ctx = "WebHdfsEndpoint(" + show(host) + ", " + show(port) + ", " + show(path) + ", " +
                   show(user) + ")";
  try {
    WebHdfsEndpoint ep(host, port, path, user);
    check_stays_under_prefix(ep.url(), ctx);
    auto out = kvikio::detail::split_url(ep.url());
    KVIKIO_FUZZ_CHECK(
      out->host == kvikio::detail::lower(host) && out->port == port && out->userinfo.empty(),
      ctx + ": url() " + show(ep.url()) + " names another server (host " + show(out->host) +
        ", port " + show(out->port) + ")");
    auto name = kvikio::detail::query_param(out->query, "user.name");
    KVIKIO_FUZZ_CHECK(name == kvikio::detail::percent_encode(user, false),
                      ctx + ": url() " + show(ep.url()));
  } catch (const std::invalid_argument&) {
  } catch (const std::exception& e) {
    KVIKIO_FUZZ_CHECK(false, ctx + ": threw " + typeid(e).name() + ": " + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
  ::unsetenv("KVIKIO_WEBHDFS_USERNAME");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  if (size == 0) { return 0; }
  const std::uint8_t choice = data[0];
  std::string all(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (choice % 3) {
    case 0:
      check_from_url(all, false);
      break;
    case 1: {
      auto f = kvikio::fuzz::fields(data + 1, size - 1, 4);
      check_from_parts(f[0], f[1], f[2], f[3]);
      break;
    }
    case 2: {
      // A delegation token and a password in the URL: kept out of str() and messages.
      if (all.find(secret) != std::string::npos) { break; }
      auto f = kvikio::fuzz::fields(data + 1, size - 1, 2);
      // The host ends the authority, the path ends before our '?': else the token would be
      // in some other parameter's value (still redacted where the name says so, but not ours).
      if (f[0].find_first_of("/?#@") != std::string::npos ||
          f[1].find_first_of("?#") != std::string::npos) {
        break;
      }
      check_from_url("http://hdfs:" + std::string(secret) + "@" + f[0] + "/webhdfs/v1/" + f[1] +
                       "?delegation=" + std::string(secret),
                     true);
      break;
    }
  }
  return 0;
}

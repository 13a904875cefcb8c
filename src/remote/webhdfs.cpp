// WebHDFS: the size from GETFILESTATUS, ranges from OPEN through the data-node redirect.
#include <algorithm>
#include <cctype>
#include <string_view>
#include <stdexcept>

#include <kvikio/hdfs.hpp>

#include "remote/curl_handle.hpp"
#include "remote/response_parse.hpp"
#include "remote/transfer.hpp"
#include "remote/url.hpp"

namespace kvikio {
namespace {

constexpr std::string_view webhdfs_prefix = "/webhdfs/v1/";

// "." or ".." once percent-decoded ("%2e", "%2E%2e", ...).
bool is_dot_segment(std::string_view seg)
{
  std::size_t dots = 0;
  for (std::size_t i = 0; i < seg.size(); ++dots) {
    if (seg[i] == '.') {
      i += 1;
    } else if (seg.substr(i, 3) == "%2e" || seg.substr(i, 3) == "%2E") {
      i += 3;
    } else {
      return false;
    }
  }
  return dots == 1 || dots == 2;
}

// The file path after /webhdfs/v1/ must stay below it: a "." or ".." segment would be removed
// by a server or proxy that normalises paths and could reach another REST root (/webhdfs/admin).
void check_path_segments(std::string_view raw_path, const std::string& shown)
{
  // An encoded slash ("..%2F..%2Fadmin") becomes a separator on servers that decode first.
  std::string path;
  for (std::size_t i = 0; i < raw_path.size(); ++i) {
    if (raw_path.substr(i, 3) == "%2f" || raw_path.substr(i, 3) == "%2F") {
      path += '/';
      i += 2;
    } else {
      path += raw_path[i];
    }
  }
  std::size_t start = 0;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    auto seg =
      std::string_view(path).substr(start, slash == std::string::npos ? slash : slash - start);
    if (is_dot_segment(seg)) {
      throw std::invalid_argument("WebHdfsEndpoint: the path of '" + shown +
                                  "' has a '.' or '..' segment; WebHDFS paths must stay below " +
                                  std::string(webhdfs_prefix));
    }
    if (slash == std::string::npos) { break; }
    start = slash + 1;
  }
}

// The host and port go into the URL's authority: a '/', '?', '#' or '@' in either, or a port
// that is no number, would send the requests to another host or outside /webhdfs/v1/.
void check_host_and_port(const std::string& host, const std::string& port)
{
  const bool bracketed = host.size() > 2 && host.front() == '[' && host.back() == ']';
  auto name_char       = [&](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '.' || c == '_' ||
           (bracketed && (c == ':' || c == '%'));  // an IPv6 literal, with a zone
  };
  if (!std::all_of(
        host.begin() + (bracketed ? 1 : 0), host.end() - (bracketed ? 1 : 0), name_char)) {
    throw std::invalid_argument("WebHdfsEndpoint: invalid host '" + host +
                                "': expected a host name, an IPv4 address or a bracketed IPv6 "
                                "address");
  }
  if (!port.empty() &&
      (port.size() > 5 ||
       !std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); }) ||
       std::stoul(port) == 0 || std::stoul(port) > 65535)) {
    throw std::invalid_argument("WebHdfsEndpoint: invalid port '" + port +
                                "': expected a number from 1 to 65535");
  }
}

// Query parameters that the endpoint sets per request; every other one of the URL (doas,
// delegation, ...) is kept on every request.
bool is_request_param(const std::string& name)
{
  auto n = detail::lower(name);
  return n == "op" || n == "offset" || n == "length" || n == "user.name";
}

}  // namespace

std::string WebHdfsEndpoint::request_url(const std::string& op_params) const
{
  std::string url = base_url_;
  char sep        = '?';
  auto add        = [&](const std::string& p) {
    if (p.empty()) { return; }
    url += sep;
    url += p;
    sep = '&';
  };
  add(op_params);
  if (username_) { add("user.name=" + detail::percent_encode(*username_, false)); }
  add(extra_query_);
  return url;
}

namespace {

/// "http://namenode:9870/path" -> "http://namenode:9870/webhdfs/v1/path": a file path on the
/// name node, as the seed's example writes it, gets the REST API's prefix. Other URLs are
/// returned unchanged (the constructor then says what is wrong with them).
std::string with_webhdfs_prefix(std::string url)
{
  auto p = detail::split_url(url);
  if (!p || (p->scheme != "http" && p->scheme != "https") || p->path.size() < 2 ||
      p->path.rfind(webhdfs_prefix, 0) == 0 || p->path.rfind("/webhdfs/", 0) == 0) {
    return url;
  }
  const auto authority = url.find("://") + 3;
  const auto path      = url.find('/', authority);
  if (path == std::string::npos) { return url; }
  url.insert(path, webhdfs_prefix.substr(0, webhdfs_prefix.size() - 1));
  return url;
}

}  // namespace

WebHdfsEndpoint::WebHdfsEndpoint(std::string url)
  : RemoteEndpoint(RemoteEndpointType::WEBHDFS, with_webhdfs_prefix(std::move(url)))
{
  if (!is_url_valid(url_)) {
    throw std::invalid_argument("WebHdfsEndpoint: '" + redact_url(url_) +
                                "' is not an http(s)://<host>:<port>/webhdfs/v1/<path> URL");
  }
  auto parts = *detail::split_url(url_);
  check_path_segments(std::string_view(parts.path).substr(webhdfs_prefix.size()), redact_url(url_));
  base_url_ =
    parts.scheme + "://" + parts.host + (parts.port.empty() ? "" : ":" + parts.port) + parts.path;
  username_ = detail::query_param(parts.query, "user.name");
  if (!username_) { username_ = detail::getenv_nonempty("KVIKIO_WEBHDFS_USERNAME"); }
  std::string_view q(parts.query);
  while (!q.empty()) {
    auto amp  = q.find('&');
    auto item = std::string(q.substr(0, amp));
    if (!item.empty() && !is_request_param(item.substr(0, item.find('=')))) {
      extra_query_ += (extra_query_.empty() ? "" : "&") + item;
    }
    if (amp == std::string_view::npos) { break; }
    q.remove_prefix(amp + 1);
  }
  url_ = request_url({});
}

WebHdfsEndpoint::WebHdfsEndpoint(std::string host,
                                 std::string port,
                                 std::string remote_file_path,
                                 std::optional<std::string> username)
  : RemoteEndpoint(RemoteEndpointType::WEBHDFS, {})
{
  while (!remote_file_path.empty() && remote_file_path.front() == '/') {
    remote_file_path.erase(0, 1);
  }
  if (host.empty() || remote_file_path.empty()) {
    throw std::invalid_argument("WebHdfsEndpoint: host ('" + host + "') and path ('" +
                                remote_file_path + "') must not be empty");
  }
  check_host_and_port(host, port);
  check_path_segments(remote_file_path, remote_file_path);
  base_url_ = "http://" + host + (port.empty() ? "" : ":" + port) + std::string(webhdfs_prefix) +
              detail::percent_encode(remote_file_path, true);
  username_ = username ? username : detail::getenv_nonempty("KVIKIO_WEBHDFS_USERNAME");
  url_      = request_url({});
}

void WebHdfsEndpoint::setopt(CurlHandle& curl)
{
  curl.setopt(CURLOPT_URL, url_.c_str());
  // OPEN answers with a redirect to the data node that holds the bytes.
  detail::follow_redirects(curl, url_);
}

std::string WebHdfsEndpoint::str() const { return "WebHdfsEndpoint(" + redact_url(url_) + ")"; }

std::size_t WebHdfsEndpoint::get_file_size()
{
  std::string status_url = request_url("op=GETFILESTATUS");
  auto r                 = detail::fetch_meta(*this, detail::MetaKind::get, [&](CurlHandle& curl) {
    curl.setopt(CURLOPT_URL, status_url.c_str());
  });
  if (auto length = detail::webhdfs_file_length(r.body)) { return *length; }
  auto shown = redact_url(url_);
  throw RemoteError("kvikio: GETFILESTATUS of " + shown + " (HTTP status " +
                      std::to_string(r.status) +
                      ") has no FileStatus length (Regular expression search failed. Cannot "
                      "extract file length from the JSON response.)",
                    shown,
                    r.status);
}

void WebHdfsEndpoint::setup_range_request(CurlHandle& curl,
                                          std::size_t file_offset,
                                          std::size_t size)
{
  std::string open_url = request_url("op=OPEN&offset=" + std::to_string(file_offset) +
                                     "&length=" + std::to_string(size));
  curl.setopt(CURLOPT_URL, open_url.c_str());  // libcurl copies the string
  curl.range_style = RangeStyle::url;
}

bool WebHdfsEndpoint::is_url_valid(const std::string& url) noexcept
{
  try {
    auto p = detail::split_url(url);
    return p && (p->scheme == "http" || p->scheme == "https") &&
           p->path.rfind(webhdfs_prefix, 0) == 0 && p->path.size() > webhdfs_prefix.size();
  } catch (...) {
    return false;
  }
}

}  // namespace kvikio

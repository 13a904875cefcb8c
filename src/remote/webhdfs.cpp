// WebHDFS: the size from GETFILESTATUS, ranges from OPEN through the data-node redirect.
#include <cctype>
#include <stdexcept>

#include <kvikio/hdfs.hpp>

#include "remote/curl_handle.hpp"
#include "remote/transfer.hpp"
#include "remote/url.hpp"

namespace kvikio {
namespace {

constexpr std::string_view webhdfs_prefix = "/webhdfs/v1/";

std::string with_user(std::string url, const std::optional<std::string>& user, bool has_query)
{
  if (user) {
    url += std::string(has_query ? "&" : "?") + "user.name=" + detail::percent_encode(*user, false);
  }
  return url;
}

}  // namespace

WebHdfsEndpoint::WebHdfsEndpoint(std::string url)
  : RemoteEndpoint(RemoteEndpointType::WEBHDFS, std::move(url))
{
  if (!is_url_valid(url_)) {
    throw std::invalid_argument("WebHdfsEndpoint: '" + redact_url(url_) +
                                "' is not an http(s)://<host>:<port>/webhdfs/v1/<path> URL");
  }
  auto parts = *detail::split_url(url_);
  base_url_ =
    parts.scheme + "://" + parts.host + (parts.port.empty() ? "" : ":" + parts.port) + parts.path;
  username_ = detail::query_param(parts.query, "user.name");
  if (!username_) { username_ = detail::getenv_nonempty("KVIKIO_WEBHDFS_USERNAME"); }
  url_ = with_user(base_url_, username_, false);
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
  base_url_ = "http://" + host + (port.empty() ? "" : ":" + port) + std::string(webhdfs_prefix) +
              detail::percent_encode(remote_file_path, true);
  username_ = username ? username : detail::getenv_nonempty("KVIKIO_WEBHDFS_USERNAME");
  url_      = with_user(base_url_, username_, false);
}

void WebHdfsEndpoint::setopt(CurlHandle& curl)
{
  curl.setopt(CURLOPT_URL, url_.c_str());
  // OPEN answers with a redirect to the data node that holds the bytes.
  curl.setopt(CURLOPT_FOLLOWLOCATION, 1L);
  curl.setopt(CURLOPT_MAXREDIRS, 5L);
}

std::string WebHdfsEndpoint::str() const { return "WebHdfsEndpoint(" + redact_url(url_) + ")"; }

std::size_t WebHdfsEndpoint::get_file_size()
{
  std::string status_url = with_user(base_url_ + "?op=GETFILESTATUS", username_, true);
  auto r                 = detail::fetch_meta(*this, detail::MetaKind::get, [&](CurlHandle& curl) {
    curl.setopt(CURLOPT_URL, status_url.c_str());
  });
  // {"FileStatus":{..., "length":1234, ...}}: a flat search is enough for this one field.
  auto key = r.body.find("\"length\"");
  if (key != std::string::npos) {
    auto colon = r.body.find(':', key);
    if (colon != std::string::npos) {
      auto pos = colon + 1;
      while (pos < r.body.size() && std::isspace(static_cast<unsigned char>(r.body[pos]))) {
        ++pos;
      }
      std::size_t n = 0;
      bool digits   = false;
      while (pos < r.body.size() && std::isdigit(static_cast<unsigned char>(r.body[pos]))) {
        n      = n * 10 + static_cast<std::size_t>(r.body[pos] - '0');
        digits = true;
        ++pos;
      }
      if (digits) { return n; }
    }
  }
  auto shown = redact_url(url_);
  throw RemoteError("kvikio: GETFILESTATUS of " + shown + " (HTTP status " +
                      std::to_string(r.status) + ") has no FileStatus length",
                    shown,
                    r.status);
}

void WebHdfsEndpoint::setup_range_request(CurlHandle& curl,
                                          std::size_t file_offset,
                                          std::size_t size)
{
  std::string open_url = with_user(base_url_ + "?op=OPEN&offset=" + std::to_string(file_offset) +
                                     "&length=" + std::to_string(size),
                                   username_,
                                   true);
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

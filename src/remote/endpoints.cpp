// The HTTP and S3 endpoints, endpoint-type inference.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <vector>

#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "remote/curl_handle.hpp"
#include "remote/transfer.hpp"
#include "remote/url.hpp"

namespace kvikio {

std::string to_string(RemoteEndpointType type)
{
  switch (type) {
    case RemoteEndpointType::AUTO:
      return "AUTO";
    case RemoteEndpointType::S3:
      return "S3";
    case RemoteEndpointType::S3_PUBLIC:
      return "S3_PUBLIC";
    case RemoteEndpointType::S3_PRESIGNED_URL:
      return "S3_PRESIGNED_URL";
    case RemoteEndpointType::WEBHDFS:
      return "WEBHDFS";
    case RemoteEndpointType::HTTP:
      return "HTTP";
  }
  return "UNKNOWN";
}

RemoteEndpoint::RemoteEndpoint(RemoteEndpointType type, std::string url)
  : type_(type), url_(std::move(url)), state_(std::make_shared<detail::EndpointState>())
{
}

detail::EndpointState& detail::endpoint_state(const RemoteEndpoint& endpoint) noexcept
{
  return *endpoint.state_;
}

void RemoteEndpoint::setup_range_request(CurlHandle& curl,
                                         std::size_t file_offset,
                                         std::size_t size)
{
  std::string range = std::to_string(file_offset) + "-" + std::to_string(file_offset + size - 1);
  curl.setopt(CURLOPT_RANGE, range.c_str());
  curl.range_style = RangeStyle::header;
}

namespace {

void require_http_url(const std::string& url, const char* who)
{
  if (!detail::is_http_url(url)) {
    throw std::invalid_argument(std::string(who) + ": '" + redact_url(url) +
                                "' is not an http:// or https:// URL");
  }
}

bool is_amazonaws_host(const std::string& host)
{
  auto ends_with = [&](std::string_view suffix) {
    return host.size() >= suffix.size() &&
           host.compare(host.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".amazonaws.com") || ends_with(".amazonaws.com.cn");
}

bool is_aws_s3_host(const std::string& host)
{
  return is_amazonaws_host(host) &&
         (host.rfind("s3.", 0) == 0 || host.rfind("s3-", 0) == 0 ||
          host.find(".s3.") != std::string::npos || host.find(".s3-") != std::string::npos);
}

// The bucket goes into the host name of a virtual-hosted URL: anything outside S3's bucket
// rules (3-63 of [a-z0-9.-], alphanumeric at both ends, no "..", not an IPv4 address) could
// move the signed request to another host ("127.0.0.1:8080#", "evil.example?").
void check_bucket_for_host(const std::string& bucket)
{
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("S3: invalid bucket name '" + bucket + "': " + why);
  };
  if (bucket.size() < 3 || bucket.size() > 63) { throw bad("it must be 3 to 63 characters long"); }
  auto alnum = [](unsigned char c) { return std::islower(c) || std::isdigit(c); };
  if (!std::all_of(bucket.begin(), bucket.end(), [&](unsigned char c) {
        return alnum(c) || c == '.' || c == '-';
      })) {
    throw bad("only lower-case letters, digits, '.' and '-' are allowed");
  }
  if (!alnum(bucket.front()) || !alnum(bucket.back())) {
    throw bad("it must begin and end with a letter or a digit");
  }
  if (bucket.find("..") != std::string::npos) { throw bad("it must not contain '..'"); }
  int a = 0, b = 0, c = 0, d = 0;
  char end = 0;
  if (std::sscanf(bucket.c_str(), "%d.%d.%d.%d%c", &a, &b, &c, &d, &end) == 4) {
    throw bad("it must not be an IP address");
  }
}

// A path-style bucket is one path segment (percent-encoded); "." and ".." would leave it.
void check_bucket_for_path(const std::string& bucket)
{
  if (bucket == "." || bucket == "..") {
    throw std::invalid_argument("S3: invalid bucket name '" + bucket + "'");
  }
}

// The region goes into the host name and into the SigV4 scope ("aws:amz:<region>:s3").
void check_region(const std::string& region)
{
  if (region.empty() || region.size() > 32 ||
      !std::all_of(region.begin(), region.end(), [](unsigned char c) {
        return std::islower(c) || std::isdigit(c) || c == '-';
      })) {
    throw std::invalid_argument("S3: invalid AWS region '" + region +
                                "': only lower-case letters, digits and '-' are allowed");
  }
}

// The last line of defence for URLs built from a bucket and a region: a signed request goes
// to AWS, nowhere else.
std::string require_aws_host(std::string url, const std::string& bucket)
{
  auto parts = detail::split_url(url);
  if (!parts || !is_amazonaws_host(parts->host) || !parts->userinfo.empty() ||
      !parts->port.empty()) {
    throw std::invalid_argument("S3: bucket '" + bucket + "' gives the URL '" + redact_url(url) +
                                "', whose host is not an amazonaws.com host");
  }
  return url;
}

bool is_presigned_query(const std::string& query)
{
  using detail::query_param;
  return (query_param(query, "X-Amz-Algorithm") && query_param(query, "X-Amz-Signature")) ||
         (query_param(query, "AWSAccessKeyId") && query_param(query, "Signature") &&
          query_param(query, "Expires"));
}

// "https://bucket.s3.us-west-2.amazonaws.com/.." or "https://s3.us-west-2.amazonaws.com/..":
// the region in the host, for S3 URLs given without a region.
std::optional<std::string> region_from_host(const std::string& host)
{
  std::vector<std::string> labels;
  std::size_t start = 0;
  while (true) {
    auto dot = host.find('.', start);
    labels.push_back(host.substr(start, dot - start));
    if (dot == std::string::npos) { break; }
    start = dot + 1;
  }
  for (std::size_t i = 0; i + 2 < labels.size(); ++i) {
    if (labels[i] == "s3" && labels[i + 1].find('-') != std::string::npos &&
        labels[i + 2] == "amazonaws") {
      return labels[i + 1];
    }
  }
  return std::nullopt;
}

}  // namespace

// ----------------------------------------------------------------------------- HttpEndpoint

HttpEndpoint::HttpEndpoint(std::string url)
  : RemoteEndpoint(RemoteEndpointType::HTTP, std::move(url))
{
  require_http_url(url_, "HttpEndpoint");
}

void HttpEndpoint::setopt(CurlHandle& curl)
{
  curl.setopt(CURLOPT_URL, url_.c_str());
  // Download links often redirect (to a CDN or mirror); libcurl keeps the Range header and
  // does not forward credentials to another host.
  detail::follow_redirects(curl, url_);
}

std::string HttpEndpoint::str() const { return "HttpEndpoint(" + redact_url(url_) + ")"; }

std::size_t HttpEndpoint::get_file_size()
{
  // Some servers allow only GET (405/501 to HEAD) or omit Content-Length on HEAD; a one-byte
  // range GET then gives the size in its Content-Range.
  auto r = detail::fetch_meta(*this, detail::MetaKind::head_or_status);
  if (r.status >= 200 && r.status < 300 && r.content_length >= 0) {
    detail::pin_version(*this, r, static_cast<std::size_t>(r.content_length));
    return static_cast<std::size_t>(r.content_length);
  }
  if (r.status == 405 || r.status == 501 || (r.status >= 200 && r.status < 300)) {
    return detail::size_from_first_byte(*this);
  }
  return detail::size_from_head(*this);  // throws the error that fits the status
}

bool HttpEndpoint::is_url_valid(const std::string& url) noexcept
{
  return detail::is_http_url(url);
}

// ----------------------------------------------------------------------------- S3Endpoint

std::string S3Endpoint::url_from_bucket_and_object(std::string bucket_name,
                                                   std::string object_name,
                                                   std::optional<std::string> aws_region,
                                                   std::optional<std::string> aws_endpoint_url)
{
  if (bucket_name.empty() || object_name.empty()) {
    throw std::invalid_argument("S3: bucket and object names must not be empty (bucket '" +
                                bucket_name + "', object '" + object_name + "')");
  }
  // S3 refuses keys longer than 1024 bytes (KeyTooLongError); say so before any request.
  if (object_name.size() > 1024) {
    throw std::invalid_argument("S3: invalid object key in bucket '" + bucket_name + "': it is " +
                                std::to_string(object_name.size()) +
                                " bytes long, S3 allows at most 1024");
  }
  auto key = detail::percent_encode(object_name, /*keep_slash=*/true);
  if (!aws_endpoint_url) { aws_endpoint_url = detail::getenv_nonempty("AWS_ENDPOINT_URL"); }
  if (aws_endpoint_url) {
    // S3-compatible servers (MinIO, moto, Ceph) are addressed path-style.
    std::string base = *aws_endpoint_url;
    while (!base.empty() && base.back() == '/') {
      base.pop_back();
    }
    require_http_url(base, "S3 endpoint URL (AWS_ENDPOINT_URL)");
    // The bucket and key are appended: after a '?' or '#' they would not be the path.
    if (base.find_first_of("?#") != std::string::npos) {
      throw std::invalid_argument("S3 endpoint URL (AWS_ENDPOINT_URL): '" + redact_url(base) +
                                  "' has a query or a fragment; expected "
                                  "http(s)://<host>[:<port>][/<path>]");
    }
    check_bucket_for_path(bucket_name);
    return base + "/" + detail::percent_encode(bucket_name, false) + "/" + key;
  }
  if (!aws_region) { aws_region = detail::getenv_nonempty("AWS_DEFAULT_REGION"); }
  if (!aws_region) {
    throw std::invalid_argument("S3: no region for " +
                                redact_url("s3://" + bucket_name + "/" + object_name) +
                                ": pass aws_region or set AWS_DEFAULT_REGION");
  }
  check_bucket_for_host(bucket_name);
  check_region(*aws_region);
  return require_aws_host("https://" + bucket_name + ".s3." + *aws_region + ".amazonaws.com/" + key,
                          bucket_name);
}

std::pair<std::string, std::string> S3Endpoint::parse_s3_url(const std::string& s3_url)
{
  auto bad = [&](const std::string& why) {
    return std::invalid_argument("S3: '" + redact_url(s3_url) +
                                 "' is not an s3://<bucket>/<object> URL: " + why);
  };
  if (!detail::is_s3_url(s3_url)) { throw bad("the scheme must be s3://"); }
  std::string rest = s3_url.substr(5);
  auto slash       = rest.find('/');
  if (slash == 0 || rest.empty()) { throw bad("no bucket name"); }
  if (slash == std::string::npos || slash + 1 == rest.size()) { throw bad("no object name"); }
  // "s3://KEY:SECRET@bucket/..": no bucket has an '@', and quoting it as a bad bucket name
  // would put the secret into the message.
  if (rest.find('@') < slash) {
    throw bad(
      "credentials in the URL are not supported: pass aws_access_key and aws_secret_access_key "
      "or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }
  return {rest.substr(0, slash), rest.substr(slash + 1)};
}

S3Endpoint::S3Endpoint(std::string url,
                       std::optional<std::string> aws_region,
                       std::optional<std::string> aws_access_key,
                       std::optional<std::string> aws_secret_access_key,
                       std::optional<std::string> aws_session_token)
  : RemoteEndpoint(RemoteEndpointType::S3, std::move(url))
{
  if (detail::is_s3_url(url_)) {
    url_ = url_from_bucket_and_object(
      parse_s3_url(url_).first, parse_s3_url(url_).second, aws_region, std::nullopt);
  }
  require_http_url(url_, "S3Endpoint");
  auto shown = redact_url(url_);
  if (!aws_region) { aws_region = detail::getenv_nonempty("AWS_DEFAULT_REGION"); }
  if (!aws_region) { aws_region = region_from_host(detail::split_url(url_)->host); }
  if (!aws_region) {
    throw std::invalid_argument("S3Endpoint(" + shown +
                                "): no AWS region: pass aws_region or set AWS_DEFAULT_REGION");
  }
  if (!aws_access_key) { aws_access_key = detail::getenv_nonempty("AWS_ACCESS_KEY_ID"); }
  if (!aws_access_key) {
    throw std::invalid_argument("S3Endpoint(" + shown +
                                "): no AWS access key: pass aws_access_key or set "
                                "AWS_ACCESS_KEY_ID");
  }
  if (!aws_secret_access_key) {
    aws_secret_access_key = detail::getenv_nonempty("AWS_SECRET_ACCESS_KEY");
  }
  if (!aws_secret_access_key) {
    throw std::invalid_argument("S3Endpoint(" + shown +
                                "): no AWS secret access key: pass aws_secret_access_key or set "
                                "AWS_SECRET_ACCESS_KEY");
  }
  if (!aws_session_token) { aws_session_token = detail::getenv_nonempty("AWS_SESSION_TOKEN"); }
  check_region(*aws_region);
  region_        = *aws_region;
  sigv4_         = "aws:amz:" + region_ + ":s3";
  access_key_    = std::move(*aws_access_key);
  secret_key_    = std::move(*aws_secret_access_key);
  session_token_ = std::move(aws_session_token);
}

S3Endpoint::S3Endpoint(std::pair<std::string, std::string> bucket_and_object_names,
                       std::optional<std::string> aws_region,
                       std::optional<std::string> aws_access_key,
                       std::optional<std::string> aws_secret_access_key,
                       std::optional<std::string> aws_endpoint_url,
                       std::optional<std::string> aws_session_token)
  : S3Endpoint(url_from_bucket_and_object(std::move(bucket_and_object_names.first),
                                          std::move(bucket_and_object_names.second),
                                          aws_region,
                                          std::move(aws_endpoint_url)),
               aws_region,
               std::move(aws_access_key),
               std::move(aws_secret_access_key),
               std::move(aws_session_token))
{
}

void S3Endpoint::setopt(CurlHandle& curl)
{
  curl.setopt(CURLOPT_URL, url_.c_str());
  curl.setopt(CURLOPT_AWS_SIGV4, sigv4_.c_str());
  // Separate user name and password: a colon-joined USERPWD would break on a ':' in either.
  curl.setopt(CURLOPT_USERNAME, access_key_.c_str());
  curl.setopt(CURLOPT_PASSWORD, secret_key_.c_str());
  // S3 wants the payload hash header on every signed request; GET/HEAD have no payload.
  curl.append_header("x-amz-content-sha256: UNSIGNED-PAYLOAD");
  if (session_token_) { curl.append_header("x-amz-security-token: " + *session_token_); }
}

std::string S3Endpoint::str() const
{
  return "S3Endpoint(" + redact_url(url_) + ", region " + region_ + ")";
}

std::size_t S3Endpoint::get_file_size() { return detail::size_from_head(*this); }

bool S3Endpoint::is_url_valid(const std::string& url) noexcept
{
  try {
    if (detail::is_s3_url(url)) {
      parse_s3_url(url);
      return true;
    }
    auto p = detail::split_url(url);
    return p && (p->scheme == "http" || p->scheme == "https") && is_aws_s3_host(p->host) &&
           !is_presigned_query(p->query);
  } catch (...) {
    return false;
  }
}

// ----------------------------------------------------------------------------- S3PublicEndpoint

namespace {
std::string public_url(const std::string& url)
{
  if (!detail::is_s3_url(url)) {
    require_http_url(url, "S3PublicEndpoint");
    return url;
  }
  auto [bucket, object] = S3Endpoint::parse_s3_url(url);
  auto endpoint_url     = detail::getenv_nonempty("AWS_ENDPOINT_URL");
  auto region           = detail::getenv_nonempty("AWS_DEFAULT_REGION");
  if (!endpoint_url && !region) {
    // No region: the global endpoint answers for (and redirects to) any region's bucket.
    check_bucket_for_host(bucket);
    return require_aws_host(
      "https://" + bucket + ".s3.amazonaws.com/" + detail::percent_encode(object, true), bucket);
  }
  return S3Endpoint::url_from_bucket_and_object(bucket, object, region, endpoint_url);
}
}  // namespace

S3PublicEndpoint::S3PublicEndpoint(std::string url)
  : RemoteEndpoint(RemoteEndpointType::S3_PUBLIC, public_url(url))
{
}

void S3PublicEndpoint::setopt(CurlHandle& curl) { curl.setopt(CURLOPT_URL, url_.c_str()); }

std::string S3PublicEndpoint::str() const { return "S3PublicEndpoint(" + redact_url(url_) + ")"; }

std::size_t S3PublicEndpoint::get_file_size() { return detail::size_from_head(*this); }

bool S3PublicEndpoint::is_url_valid(const std::string& url) noexcept
{
  return S3Endpoint::is_url_valid(url) || detail::is_http_url(url);
}

// ----------------------------------------------------------------------------- presigned URL

S3EndpointWithPresignedUrl::S3EndpointWithPresignedUrl(std::string presigned_url)
  : RemoteEndpoint(RemoteEndpointType::S3_PRESIGNED_URL, std::move(presigned_url))
{
  if (!is_url_valid(url_)) {
    throw std::invalid_argument("S3EndpointWithPresignedUrl: '" + redact_url(url_) +
                                "' is not a presigned http(s) URL (X-Amz-Algorithm and "
                                "X-Amz-Signature query parameters expected)");
  }
}

void S3EndpointWithPresignedUrl::setopt(CurlHandle& curl)
{
  curl.setopt(CURLOPT_URL, url_.c_str());
}

std::string S3EndpointWithPresignedUrl::str() const
{
  return "S3EndpointWithPresignedUrl(" + redact_url(url_) + ")";
}

std::size_t S3EndpointWithPresignedUrl::get_file_size()
{
  return detail::size_from_first_byte(*this);
}

bool S3EndpointWithPresignedUrl::is_url_valid(const std::string& url) noexcept
{
  try {
    auto p = detail::split_url(url);
    return p && (p->scheme == "http" || p->scheme == "https") && is_presigned_query(p->query);
  } catch (...) {
    return false;
  }
}

// ----------------------------------------------------------------------------- inference

RemoteEndpointType infer_remote_endpoint_type(const std::string& url)
{
  if (S3Endpoint::is_url_valid(url)) {
    // As upstream: S3 when the environment has credentials, else S3_PUBLIC. No request is
    // sent; RemoteHandle::open falls back from S3 to S3_PUBLIC when signing fails.
    const bool has_credentials = detail::getenv_nonempty("AWS_ACCESS_KEY_ID").has_value() &&
                                 detail::getenv_nonempty("AWS_SECRET_ACCESS_KEY").has_value();
    return has_credentials ? RemoteEndpointType::S3 : RemoteEndpointType::S3_PUBLIC;
  }
  if (S3EndpointWithPresignedUrl::is_url_valid(url)) {
    return RemoteEndpointType::S3_PRESIGNED_URL;
  }
  if (WebHdfsEndpoint::is_url_valid(url)) { return RemoteEndpointType::WEBHDFS; }
  if (HttpEndpoint::is_url_valid(url)) { return RemoteEndpointType::HTTP; }
  // "Bad scheme" / "Unsupported endpoint URL": the phrases upstream's callers match.
  throw std::invalid_argument(
    "infer_remote_endpoint_type: '" + redact_url(url) + "' is not a supported remote URL (" +
    (detail::has_url_scheme(url) ? "Unsupported endpoint URL" : "Bad scheme") +
    "; expected s3://, http:// or https://)");
}

}  // namespace kvikio

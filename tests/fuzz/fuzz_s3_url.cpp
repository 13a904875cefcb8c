// S3 URL handling (src/remote/endpoints.cpp): s3:// parsing, bucket and region checks, the
// URLs built from them, endpoint inference, and credentials kept out of messages.
#include <cstdint>
#include <cstdlib>
#include <cctype>
#include <string>

#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "fuzz_common.hpp"
#include "remote/url.hpp"

using kvikio::S3Endpoint;
using kvikio::fuzz::show;
using kvikio::fuzz::value_or_invalid_argument;

namespace {

constexpr std::string_view secret = "sEcReT-fUzZ-42";

bool shows_secret(const std::string& s) { return s.find(secret) != std::string::npos; }

void check_parse_s3_url(const std::string& url)
{
  auto r = value_or_invalid_argument([&] { return S3Endpoint::parse_s3_url(url); }, show(url));
  KVIKIO_FUZZ_CHECK(S3Endpoint::is_url_valid(url) || !r, "s3 url " + show(url));
  if (!r) { return; }
  const auto& [bucket, object] = *r;
  KVIKIO_FUZZ_CHECK(!bucket.empty() && bucket.find('/') == std::string::npos && !object.empty(),
                    "parse_s3_url(" + show(url) + ") = " + show(bucket) + ", " + show(object));
  // The scheme matches in any case (S3:// as upstream); the rest is kept byte for byte.
  std::string scheme = url.substr(0, 5);
  for (auto& c : scheme) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  KVIKIO_FUZZ_CHECK(scheme == "s3://" && bucket + "/" + object == url.substr(5),
                    "parse_s3_url(" + show(url) + ") = " + show(bucket) + ", " + show(object) +
                      " does not rebuild the URL");
}

// Virtual-hosted AWS URL: the host is exactly <bucket>.s3.<region>.amazonaws.com.
void check_aws_url(const std::string& bucket, const std::string& object, const std::string& region)
{
  const auto ctx = "bucket " + show(bucket) + " object " + show(object) + " region " + show(region);
  auto url       = value_or_invalid_argument(
    [&] { return S3Endpoint::url_from_bucket_and_object(bucket, object, region, std::nullopt); },
    ctx);
  if (!url) { return; }
  auto p = kvikio::detail::split_url(*url);
  KVIKIO_FUZZ_CHECK(p.has_value(), ctx + " gives " + show(*url));
  KVIKIO_FUZZ_CHECK(p->scheme == "https" && p->userinfo.empty() && p->port.empty() &&
                      p->host == bucket + ".s3." + region + ".amazonaws.com" &&
                      p->path == "/" + kvikio::detail::percent_encode(object, true) &&
                      p->query.empty() && url->find('#') == std::string::npos,
                    ctx + " gives " + show(*url) + " (host " + show(p->host) + ")");
}

// Path-style URL under AWS_ENDPOINT_URL: the endpoint's host and port, then /bucket/key.
void check_endpoint_url(const std::string& bucket,
                        const std::string& object,
                        const std::string& endpoint)
{
  const auto ctx =
    "bucket " + show(bucket) + " object " + show(object) + " endpoint " + show(endpoint);
  auto url = value_or_invalid_argument(
    [&] { return S3Endpoint::url_from_bucket_and_object(bucket, object, std::nullopt, endpoint); },
    ctx);
  if (!url) { return; }
  auto p = kvikio::detail::split_url(*url);
  auto e = kvikio::detail::split_url(endpoint);
  KVIKIO_FUZZ_CHECK(p && e, ctx + " gives " + show(*url));
  const std::string tail = "/" + kvikio::detail::percent_encode(bucket, false) + "/" +
                           kvikio::detail::percent_encode(object, true);
  KVIKIO_FUZZ_CHECK(p->host == e->host && p->port == e->port && p->userinfo == e->userinfo,
                    ctx + " gives " + show(*url) + " (host " + show(p->host) + ")");
  KVIKIO_FUZZ_CHECK(
    p->path.size() >= tail.size() &&
      p->path.compare(p->path.size() - tail.size(), tail.size(), tail) == 0 && p->query.empty() &&
      url->find('#') == std::string::npos,
    ctx + " gives " + show(*url) + ": the bucket and key are not its path " + show(p->path));
}

// S3Endpoint from a URL with credentials in it: built or refused, the secret never shows.
void check_endpoint(const std::string& url, const std::string& region)
{
  const auto ctx = "url " + show(url) + " region " + show(region);
  std::optional<std::string> message;
  try {
    S3Endpoint ep(url, region, "AKIAFUZZ", std::string(secret), std::string(secret));
    KVIKIO_FUZZ_CHECK(!shows_secret(ep.str()), ctx + ": str() = " + show(ep.str()));
    auto p = kvikio::detail::split_url(ep.url());
    KVIKIO_FUZZ_CHECK(p && (p->scheme == "http" || p->scheme == "https"),
                      ctx + ": url() = " + show(ep.url()));
    if (url.rfind("s3://", 0) == 0) {
      auto bucket = S3Endpoint::parse_s3_url(url).first;
      KVIKIO_FUZZ_CHECK(p->host == bucket + ".s3." + region + ".amazonaws.com" &&
                          p->userinfo.empty() && p->port.empty(),
                        ctx + ": url() = " + show(ep.url()));
    }
  } catch (const std::invalid_argument& e) {
    message = e.what();
  } catch (const std::exception& e) {
    KVIKIO_FUZZ_CHECK(false, ctx + ": threw " + typeid(e).name() + ": " + e.what());
  }
  if (message) { KVIKIO_FUZZ_CHECK(!shows_secret(*message), ctx + ": message " + show(*message)); }
}

void check_infer(const std::string& url)
{
  auto type =
    value_or_invalid_argument([&] { return kvikio::infer_remote_endpoint_type(url); }, show(url));
  if (!type) { return; }
  bool valid = false;
  switch (*type) {
    case kvikio::RemoteEndpointType::S3:
      valid = S3Endpoint::is_url_valid(url);
      break;
    case kvikio::RemoteEndpointType::S3_PUBLIC:  // inferred for s3:// without credentials
      valid = kvikio::S3PublicEndpoint::is_url_valid(url);
      break;
    case kvikio::RemoteEndpointType::S3_PRESIGNED_URL:
      valid = kvikio::S3EndpointWithPresignedUrl::is_url_valid(url);
      break;
    case kvikio::RemoteEndpointType::WEBHDFS:
      valid = kvikio::WebHdfsEndpoint::is_url_valid(url);
      break;
    case kvikio::RemoteEndpointType::HTTP:
      valid = kvikio::HttpEndpoint::is_url_valid(url);
      break;
    default:
      break;
  }
  KVIKIO_FUZZ_CHECK(valid,
                    "infer_remote_endpoint_type(" + show(url) + ") = " + kvikio::to_string(*type) +
                      ", whose is_url_valid refuses it");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
  // The endpoints read these when arguments are absent; the checks pass them explicitly.
  for (const char* v : {"AWS_ENDPOINT_URL",
                        "AWS_DEFAULT_REGION",
                        "AWS_ACCESS_KEY_ID",
                        "AWS_SECRET_ACCESS_KEY",
                        "AWS_SESSION_TOKEN"}) {
    ::unsetenv(v);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  if (size == 0) { return 0; }
  const std::uint8_t choice = data[0];
  std::string all(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto f = kvikio::fuzz::fields(data + 1, size - 1, 3);
  switch (choice % 5) {
    case 0:
      check_parse_s3_url(all);
      break;
    case 1:
      check_aws_url(f[0], f[1], f[2]);
      break;
    case 2:
      check_endpoint_url(f[0], f[1], f[2]);
      break;
    case 3: {
      if (shows_secret(all)) { break; }
      // Credentials in the authority of an s3:// or https:// URL.
      std::string url = ((choice & 0x80) ? "https://AKIA:" : "s3://AKIA:") + std::string(secret) +
                        "@" + f[0] + "/" + f[1];
      check_endpoint(url, f[2].empty() ? "us-east-1" : f[2]);
      check_endpoint(all, f[2].empty() ? "us-east-1" : f[2]);
      break;
    }
    case 4:
      check_infer(all);
      break;
  }
  return 0;
}

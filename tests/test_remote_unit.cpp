// Remote endpoints without a server: URL inference, S3 URL building, redaction, argument
// checks. (Tests that talk to servers are in test_remote_*.cpp, label "remote".)
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "remote/curl_handle.hpp"
#include "remote/response_parse.hpp"
#include "remote/url.hpp"
#include "remote_servers.hpp"
#include "test_utils.hpp"

using namespace kvikio;
using kvikio::test::ScopedEnv;

namespace {
template <typename F>
std::string invalid_argument_message(F&& f)
{
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return {};
}
}  // namespace

// What fuzz_s3_url checks, for the inputs it reported after S3_PUBLIC inference landed: the
// inferred type's own is_url_valid accepts the URL, with and without a region.
TEST(RemoteUrl, InferredTypeAlwaysAcceptsTheUrl)
{
  ScopedEnv k("AWS_ACCESS_KEY_ID", std::nullopt), s("AWS_SECRET_ACCESS_KEY", std::nullopt);
  for (const std::optional<std::string>& region : {std::optional<std::string>{}, {"us-east-1"}}) {
    ScopedEnv r1("AWS_DEFAULT_REGION", region), r2("AWS_REGION", region);
    for (const std::string url : {"s3://:/re=.", "s3://bucket/key"}) {
      const auto type  = infer_remote_endpoint_type(url);
      const bool valid = type == RemoteEndpointType::S3_PUBLIC
                           ? kvikio::S3PublicEndpoint::is_url_valid(url)
                           : kvikio::S3Endpoint::is_url_valid(url);
      EXPECT_TRUE(valid) << url << " inferred as " << kvikio::to_string(type);
    }
  }
}

TEST(RemoteUrl, InferRemoteEndpointType)
{
  ScopedEnv k("AWS_ACCESS_KEY_ID", "key"), s("AWS_SECRET_ACCESS_KEY", "secret"),
    r("AWS_DEFAULT_REGION", "us-east-1");
  EXPECT_EQ(infer_remote_endpoint_type("s3://bucket/key"), RemoteEndpointType::S3);
  EXPECT_EQ(infer_remote_endpoint_type("S3://bucket/key"), RemoteEndpointType::S3);
  EXPECT_EQ(infer_remote_endpoint_type("https://bucket.s3.us-west-2.amazonaws.com/a/b.bin"),
            RemoteEndpointType::S3);
  EXPECT_EQ(infer_remote_endpoint_type("https://s3.us-east-1.amazonaws.com/bucket/b.bin"),
            RemoteEndpointType::S3);
  EXPECT_EQ(
    infer_remote_endpoint_type(
      "https://bucket.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab"),
    RemoteEndpointType::S3_PRESIGNED_URL);
  EXPECT_EQ(
    infer_remote_endpoint_type("http://127.0.0.1:9000/b/k?X-Amz-Algorithm=A&X-Amz-Signature=s"),
    RemoteEndpointType::S3_PRESIGNED_URL);
  EXPECT_EQ(infer_remote_endpoint_type("http://namenode:9870/webhdfs/v1/user/f.bin"),
            RemoteEndpointType::WEBHDFS);
  EXPECT_EQ(infer_remote_endpoint_type("https://example.com/data.bin"), RemoteEndpointType::HTTP);
  EXPECT_EQ(infer_remote_endpoint_type("HTTP://EXAMPLE.com:8080/x"), RemoteEndpointType::HTTP);
  for (std::string bad : {"ftp://example.com/x", "example.com/x", "", "s3://", "http://"}) {
    auto msg = invalid_argument_message([&] { infer_remote_endpoint_type(bad); });
    EXPECT_NE(msg.find("'" + bad + "'"), std::string::npos) << msg;
  }
}

// Issue 13: as upstream, an S3 URL with no credentials in the environment is S3_PUBLIC, and
// the scheme's case does not matter.
TEST(RemoteUrl, InferS3PublicWithoutCredentials)
{
  ScopedEnv k("AWS_ACCESS_KEY_ID", std::nullopt), s("AWS_SECRET_ACCESS_KEY", std::nullopt),
    r("AWS_DEFAULT_REGION", std::nullopt), e("AWS_ENDPOINT_URL", std::nullopt);
  EXPECT_EQ(infer_remote_endpoint_type("s3://bucket/key"), RemoteEndpointType::S3_PUBLIC);
  EXPECT_EQ(infer_remote_endpoint_type("S3://bucket/key"), RemoteEndpointType::S3_PUBLIC);
  EXPECT_EQ(infer_remote_endpoint_type("https://bucket.s3.us-west-2.amazonaws.com/a/b.bin"),
            RemoteEndpointType::S3_PUBLIC);
  EXPECT_EQ(infer_remote_endpoint_type("http://namenode:9870/user/f.bin"),
            RemoteEndpointType::HTTP);
  EXPECT_TRUE(detail::is_s3_url("S3://b/k"));
  EXPECT_FALSE(detail::is_s3_url("s3:/b/k"));
  auto [b, o] = S3Endpoint::parse_s3_url("S3://my-bucket/key");
  EXPECT_EQ(b, "my-bucket");
  EXPECT_EQ(o, "key");
}

TEST(RemoteUrl, WebHdfsEndpointAddsTheRestPrefix)
{
  WebHdfsEndpoint plain("http://namenode:9870/user/data.bin?user.name=alice");
  EXPECT_EQ(plain.url(), "http://namenode:9870/webhdfs/v1/user/data.bin?user.name=alice");
  WebHdfsEndpoint full("http://namenode:9870/webhdfs/v1/user/data.bin");
  EXPECT_EQ(full.url(), "http://namenode:9870/webhdfs/v1/user/data.bin");
  EXPECT_THROW(WebHdfsEndpoint("http://namenode:9870/"), std::invalid_argument);
  EXPECT_THROW(WebHdfsEndpoint("ftp://namenode:9870/user/x"), std::invalid_argument);
}

TEST(RemoteUrl, ParseS3Url)
{
  auto [b, o] = S3Endpoint::parse_s3_url("s3://my-bucket/dir/file name.bin");
  EXPECT_EQ(b, "my-bucket");
  EXPECT_EQ(o, "dir/file name.bin");
  for (std::string bad : {"s3://", "s3://bucket", "s3://bucket/", "s3:///key", "http://b/k"}) {
    auto msg = invalid_argument_message([&] { S3Endpoint::parse_s3_url(bad); });
    EXPECT_NE(msg.find(bad), std::string::npos) << msg;
  }
}

TEST(RemoteUrl, S3UrlIsVirtualHostedOrPathStyleWithEncodedKey)
{
  ScopedEnv e("AWS_ENDPOINT_URL", std::nullopt), r("AWS_DEFAULT_REGION", std::nullopt);
  EXPECT_EQ(
    S3Endpoint::url_from_bucket_and_object("bkt", "a b/c+d=e&f~.bin", "eu-west-1", std::nullopt),
    "https://bkt.s3.eu-west-1.amazonaws.com/a%20b/c%2Bd%3De%26f~.bin");
  EXPECT_EQ(
    S3Endpoint::url_from_bucket_and_object("bkt", "k", std::nullopt, "http://127.0.0.1:9000/"),
    "http://127.0.0.1:9000/bkt/k");
  {
    ScopedEnv u("AWS_ENDPOINT_URL", "http://minio:9000");
    EXPECT_EQ(
      S3Endpoint::url_from_bucket_and_object("bkt", "d\xC3\xA4.bin", std::nullopt, std::nullopt),
      "http://minio:9000/bkt/d%C3%A4.bin");
  }
  {
    ScopedEnv reg("AWS_DEFAULT_REGION", "ap-south-1");
    EXPECT_EQ(S3Endpoint::url_from_bucket_and_object("bkt", "k", std::nullopt, std::nullopt),
              "https://bkt.s3.ap-south-1.amazonaws.com/k");
  }
  auto msg = invalid_argument_message(
    [] { S3Endpoint::url_from_bucket_and_object("bkt", "k", std::nullopt, std::nullopt); });
  EXPECT_NE(msg.find("AWS_DEFAULT_REGION"), std::string::npos) << msg;
  EXPECT_NE(msg.find("s3://bkt/k"), std::string::npos) << msg;
}

TEST(RemoteUrl, MissingCredentialsOrRegionNameTheVariable)
{
  ScopedEnv k("AWS_ACCESS_KEY_ID", std::nullopt), s("AWS_SECRET_ACCESS_KEY", std::nullopt),
    t("AWS_SESSION_TOKEN", std::nullopt), r("AWS_DEFAULT_REGION", std::nullopt),
    u("AWS_ENDPOINT_URL", std::nullopt);
  const std::string url = "http://127.0.0.1:1/bkt/key.bin";
  auto msg              = invalid_argument_message([&] { S3Endpoint e(url); });
  EXPECT_NE(msg.find("AWS_DEFAULT_REGION"), std::string::npos) << msg;
  EXPECT_NE(msg.find(url), std::string::npos) << msg;
  msg = invalid_argument_message([&] { S3Endpoint e(url, "us-east-1"); });
  EXPECT_NE(msg.find("AWS_ACCESS_KEY_ID"), std::string::npos) << msg;
  EXPECT_NE(msg.find(url), std::string::npos) << msg;
  {
    ScopedEnv k2("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEYID");
    msg = invalid_argument_message([&] { S3Endpoint e(url, "us-east-1"); });
    EXPECT_NE(msg.find("AWS_SECRET_ACCESS_KEY"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("AKIAEXAMPLEKEYID"), std::string::npos) << msg;
  }
  // The region is read from an AWS host name when not given.
  S3Endpoint from_host("https://bkt.s3.us-west-2.amazonaws.com/k", std::nullopt, "id", "secret");
  EXPECT_NE(from_host.str().find("us-west-2"), std::string::npos) << from_host.str();
  EXPECT_EQ(from_host.str().find("secret"), std::string::npos) << from_host.str();
  // s3:// through open() needs the same (without S3_PUBLIC to fall back to, issue 13).
  msg = invalid_argument_message([] {
    RemoteHandle::open(
      "s3://bkt/key.bin", RemoteEndpointType::AUTO, std::vector{RemoteEndpointType::S3});
  });
  EXPECT_NE(msg.find("s3://bkt/key.bin"), std::string::npos) << msg;
}

TEST(RemoteUrl, RedactUrlRemovesCredentialsSignaturesAndTokens)
{
  auto r = redact_url(
    "https://user:pa55@host:8443/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F2024"
    "&X-Amz-Date=20240101T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=deadbeef"
    "&X-Amz-Security-Token=tok123&AWSAccessKeyId=AKID2&Signature=sig2&sig=sas&delegation=dt"
    "&user.name=alice&op=OPEN");
  for (std::string secret :
       {"pa55", "user:", "AKID", "deadbeef", "tok123", "sig2", "=sas", "=dt"}) {
    EXPECT_EQ(r.find(secret), std::string::npos) << secret << " in " << r;
  }
  for (std::string kept : {"https://REDACTED@host:8443/b/k?",
                           "X-Amz-Algorithm=AWS4-HMAC-SHA256",
                           "X-Amz-Date=20240101T000000Z",
                           "X-Amz-SignedHeaders=host",
                           "user.name=alice",
                           "op=OPEN",
                           "X-Amz-Signature=REDACTED"}) {
    EXPECT_NE(r.find(kept), std::string::npos) << kept << " not in " << r;
  }
  EXPECT_EQ(redact_url("http://host/plain.bin"), "http://host/plain.bin");
}

TEST(RemoteUrl, AllowListAndExplicitTypes)
{
  auto msg = invalid_argument_message([] {
    RemoteHandle::open(
      "https://example.com/x.bin",
      RemoteEndpointType::AUTO,
      std::vector<RemoteEndpointType>{RemoteEndpointType::S3, RemoteEndpointType::WEBHDFS});
  });
  EXPECT_NE(msg.find("https://example.com/x.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("S3, WEBHDFS"), std::string::npos) << msg;
  msg = invalid_argument_message([] {
    RemoteHandle::open("https://example.com/x.bin",
                       RemoteEndpointType::HTTP,
                       std::vector<RemoteEndpointType>{RemoteEndpointType::S3});
  });
  EXPECT_NE(msg.find("HTTP is not in the allowlist"), std::string::npos) << msg;
  msg = invalid_argument_message(
    [] { RemoteHandle::open("https://example.com/x.bin", RemoteEndpointType::WEBHDFS); });
  EXPECT_NE(msg.find("WEBHDFS"), std::string::npos) << msg;
  msg = invalid_argument_message(
    [] { RemoteHandle::open("https://example.com/x.bin", RemoteEndpointType::S3_PRESIGNED_URL); });
  EXPECT_NE(msg.find("S3_PRESIGNED_URL"), std::string::npos) << msg;
  EXPECT_THROW(RemoteHandle(nullptr, 10), std::invalid_argument);
}

TEST(RemoteUrl, KnownSizeOpenSendsNothingAndChecksRanges)
{
  // Port 1 on loopback: any request would fail; none is made.
  auto h =
    RemoteHandle::open("http://127.0.0.1:1/x.bin", RemoteEndpointType::AUTO, std::nullopt, 100);
  EXPECT_EQ(h.nbytes(), 100U);
  EXPECT_EQ(h.remote_endpoint_type(), RemoteEndpointType::HTTP);
  char buf[8];
  EXPECT_EQ(h.read(buf, 0, 100), 0U);
  EXPECT_THROW(h.read(buf, 1, 100), EndOfFileError);
  EXPECT_THROW(h.read(buf, 8, std::size_t(-4)), EndOfFileError);
  EXPECT_THROW(h.read(nullptr, 8, 0), std::invalid_argument);
  EXPECT_THROW(h.pread(buf, 8, 0, 0), std::invalid_argument);
}

TEST(RemoteS3Names, BucketsAndRegionsThatCouldChangeTheHostAreRejected)
{
  ScopedEnv k("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEYID"), s("AWS_SECRET_ACCESS_KEY", "secret"),
    t("AWS_SESSION_TOKEN", std::nullopt), r("AWS_DEFAULT_REGION", "us-east-1"),
    u("AWS_ENDPOINT_URL", std::nullopt);
  for (std::string bucket : std::vector<std::string>{"127.0.0.1:1#",
                                                     "evil.example?",
                                                     "evil.example/",
                                                     "user@evil.example",
                                                     "Upper-Case",
                                                     "under_score",
                                                     "ab",
                                                     std::string(64, 'a'),
                                                     "-dash-first",
                                                     "dot-last.",
                                                     "a..b",
                                                     "192.168.1.1",
                                                     "sp ace",
                                                     "[::1]"}) {
    SCOPED_TRACE(bucket);
    auto msg = invalid_argument_message(
      [&] { S3Endpoint::url_from_bucket_and_object(bucket, "k", "us-east-1", std::nullopt); });
    EXPECT_NE(msg.find("invalid bucket name '" + bucket + "'"), std::string::npos) << msg;
    msg = invalid_argument_message([&] {
      S3Endpoint e(std::pair<std::string, std::string>{bucket, "k"}, "us-east-1", "id", "secret");
    });
    EXPECT_NE(msg.find("invalid bucket name '" + bucket + "'"), std::string::npos) << msg;
  }
  // Through the URL forms, with credentials in the environment: refused before any request
  // (port 1 has no listener: a request would have been a RemoteTransportError).
  for (std::string url : {"s3://127.0.0.1:1#/any/key", "s3://evil.example?/k"}) {
    SCOPED_TRACE(url);
    EXPECT_EQ(infer_remote_endpoint_type(url), RemoteEndpointType::S3);
    auto msg = invalid_argument_message([&] { RemoteHandle::open(url); });
    EXPECT_NE(msg.find("invalid bucket name"), std::string::npos) << msg;
    msg = invalid_argument_message([&] {
      RemoteHandle::open(url, RemoteEndpointType::AUTO, std::vector{RemoteEndpointType::S3});
    });
    EXPECT_NE(msg.find("invalid bucket name"), std::string::npos) << msg;
    msg = invalid_argument_message([&] { S3Endpoint e(url); });
    EXPECT_NE(msg.find("invalid bucket name"), std::string::npos) << msg;
    msg = invalid_argument_message([&] { S3PublicEndpoint e(url); });
    EXPECT_NE(msg.find("invalid bucket name"), std::string::npos) << msg;
    ScopedEnv no_region("AWS_DEFAULT_REGION", std::nullopt);
    msg = invalid_argument_message([&] { S3PublicEndpoint e(url); });
    EXPECT_NE(msg.find("invalid bucket name"), std::string::npos) << msg;
  }
  for (std::string region : {"us-east-1.evil.example#", "us-east-1:9", "US-EAST-1", "", "a/b"}) {
    SCOPED_TRACE(region);
    auto msg = invalid_argument_message(
      [&] { S3Endpoint::url_from_bucket_and_object("bkt", "k", region, std::nullopt); });
    EXPECT_NE(msg.find("invalid AWS region '" + region + "'"), std::string::npos) << msg;
    // The region is also the SigV4 scope, with an endpoint URL too.
    msg = invalid_argument_message(
      [&] { S3Endpoint e("http://127.0.0.1:1/bkt/k", region, "id", "secret"); });
    EXPECT_NE(msg.find("invalid AWS region"), std::string::npos) << msg;
  }
  // Valid names pass; path-style buckets are one encoded path segment, but not "." or "..".
  EXPECT_EQ(S3Endpoint::url_from_bucket_and_object("my.bucket-1", "k", "cn-north-1", std::nullopt),
            "https://my.bucket-1.s3.cn-north-1.amazonaws.com/k");
  EXPECT_EQ(
    S3Endpoint::url_from_bucket_and_object("Legacy_Bucket", "k", std::nullopt, "http://minio:9000"),
    "http://minio:9000/Legacy_Bucket/k");
  for (std::string bucket : {".", ".."}) {
    auto msg = invalid_argument_message([&] {
      S3Endpoint::url_from_bucket_and_object(bucket, "k", std::nullopt, "http://minio:9000");
    });
    EXPECT_NE(msg.find("invalid bucket name '" + bucket + "'"), std::string::npos) << msg;
  }
}

// Found by tests/fuzz/fuzz_s3_url: "s3://KEY:SECRET@bucket/key" was split at the first '/',
// and the bucket "KEY:SECRET@bucket" was quoted, secret and all, as an invalid bucket name.
TEST(RemoteS3Names, CredentialsInAnS3UrlAreRefusedWithoutShowingThem)
{
  ScopedEnv k("AWS_ACCESS_KEY_ID", "AKIAEXAMPLEKEYID"), s("AWS_SECRET_ACCESS_KEY", "secret"),
    t("AWS_SESSION_TOKEN", std::nullopt), r("AWS_DEFAULT_REGION", "us-east-1"),
    u("AWS_ENDPOINT_URL", std::nullopt);
  const std::string url = "s3://AKIAID:wJalrXUtnFEMI@my-bucket/dir/key.bin";
  std::vector<std::string> messages{
    invalid_argument_message([&] { S3Endpoint::parse_s3_url(url); }),
    invalid_argument_message([&] { S3Endpoint e(url); }),
    invalid_argument_message([&] { S3Endpoint e(url, "us-east-1", "id", "key"); }),
    invalid_argument_message([&] { S3PublicEndpoint e(url); }),
    invalid_argument_message([&] { RemoteHandle::open(url); })};
  for (const auto& msg : messages) {
    EXPECT_EQ(msg.find("wJalrXUtnFEMI"), std::string::npos) << msg;
  }
  EXPECT_NE(messages[0].find("s3://REDACTED@my-bucket/dir/key.bin"), std::string::npos)
    << messages[0];
  EXPECT_NE(messages[0].find("credentials in the URL are not supported"), std::string::npos)
    << messages[0];
  EXPECT_FALSE(S3Endpoint::is_url_valid(url));
}

// Found by tests/fuzz/fuzz_s3_url: an endpoint URL with a query or fragment took the bucket
// and key out of the path ("http://minio:9000/?x" + "/bkt/k" is a query; after '#' libcurl
// sends neither).
TEST(RemoteS3Names, EndpointUrlWithQueryOrFragmentIsRejected)
{
  for (std::string endpoint : {"http://minio:9000/?x", "http://minio:9000#f", "http://m/p?a=1#"}) {
    SCOPED_TRACE(endpoint);
    auto msg = invalid_argument_message(
      [&] { S3Endpoint::url_from_bucket_and_object("bkt", "k", std::nullopt, endpoint); });
    EXPECT_NE(msg.find("'" + endpoint + "' has a query or a fragment"), std::string::npos) << msg;
  }
  EXPECT_EQ(S3Endpoint::url_from_bucket_and_object("bkt", "k", std::nullopt, "http://m:1/base/"),
            "http://m:1/base/bkt/k");
}

// Reliability audit #1: keys are not paths. The URL keeps "." and ".." segments as they are
// (and libcurl is told to send them so: CURLOPT_PATH_AS_IS; see RemoteS3 for the server side).
TEST(RemoteS3Names, DotSegmentsInKeysStayInTheUrl)
{
  EXPECT_EQ(S3Endpoint::url_from_bucket_and_object("bkt", "a/../b", "us-east-1", std::nullopt),
            "https://bkt.s3.us-east-1.amazonaws.com/a/../b");
  EXPECT_EQ(S3Endpoint::url_from_bucket_and_object("bkt", "./x", std::nullopt, "http://h:1"),
            "http://h:1/bkt/./x");
}

// Reliability audit #15: the thread's cached easy handle kept the finished request's options
// (its stack error buffer, body and header state) until the next request.
TEST(RemoteCurlHandle, CachedHandleIsResetWhenHandedBack)
{
  CURL* raw  = nullptr;
  int marker = 0;
  {
    CurlHandle curl;
    raw = curl.get();
    curl.setopt(CURLOPT_PRIVATE, static_cast<void*>(&marker));
    curl.append_header("X-Test: 1");
    void* p = nullptr;
    curl_easy_getinfo(raw, CURLINFO_PRIVATE, &p);
    ASSERT_EQ(p, &marker);
  }
  // The handle lives on in this thread's cache: every option is back to its default.
  void* p = &marker;
  ASSERT_EQ(curl_easy_getinfo(raw, CURLINFO_PRIVATE, &p), CURLE_OK);
  EXPECT_EQ(p, nullptr);
  // And the next request on this thread gets the same (cached) handle.
  CurlHandle again;
  EXPECT_EQ(again.get(), raw);
}

// Found by tests/fuzz/fuzz_response: sscanf took any Content-Range with three numbers in
// front ("bytes 5-9/1" with last past the total, negative numbers, trailing junk, numbers past
// long long), and a negative total became a size near 2^64 in size_from_first_byte.
TEST(RemoteResponse, InvalidContentRangesAreNone)
{
  for (std::string bad : {"bytes 5-9/1",
                          "bytes 0-0/0",
                          "bytes 9-5/10",
                          "bytes -5-3/10",
                          "bytes 0-0/-1",
                          "bytes */-1",
                          "bytes 0-9/10junk",
                          "bytes 0-9/10/",
                          "bytes 0-99999999999999999999/100000000000000000000",
                          "bytes 0-/10",
                          "bytes */*",
                          "items 0-1/2",
                          "bytes0-1/2",
                          ""}) {
    SCOPED_TRACE(bad);
    EXPECT_FALSE(detail::parse_content_range(bad).has_value());
    // A response whose Content-Range is invalid has none, even after a valid one.
    detail::HeaderState st;
    detail::parse_header_line("Content-Range: bytes 0-0/7\r\n", st);
    ASSERT_EQ(st.range_total, 7);
    detail::parse_header_line("content-range: " + bad + "\r\n", st);
    EXPECT_FALSE(st.range_start || st.range_end || st.range_total);
  }
}

TEST(RemoteResponse, ValidContentRanges)
{
  auto r = detail::parse_content_range(" bytes 0-99/1000\r\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 0);
  EXPECT_EQ(r->last, 99);
  EXPECT_EQ(r->total, 1000);
  r = detail::parse_content_range("Bytes 5-9/*");  // the unit is case-insensitive
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 5);
  EXPECT_EQ(r->last, 9);
  EXPECT_FALSE(r->total);
  r = detail::parse_content_range("bytes */0");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->first || r->last);
  EXPECT_EQ(r->total, 0);
  r = detail::parse_content_range(
    "bytes 9223372036854775806-9223372036854775806/"
    "9223372036854775807");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->total, 9223372036854775807LL);
  detail::HeaderState st;
  detail::parse_header_line("Content-Range: bytes 3-4/5\r\n", st);
  EXPECT_EQ(st.range_start, 3);
  EXPECT_EQ(st.range_end, 4);
  EXPECT_EQ(st.range_total, 5);
  detail::parse_header_line("HTTP/1.1 206 Partial Content\r\n", st);  // a redirect's answer
  EXPECT_FALSE(st.range_start || st.range_end || st.range_total);
}

// Found by tests/fuzz/fuzz_response: a GETFILESTATUS length past 2^64 wrapped to a small size.
TEST(RemoteResponse, WebHdfsLengthThatDoesNotFitIsNone)
{
  EXPECT_EQ(detail::webhdfs_file_length(R"({"FileStatus":{"length":1234,"type":"FILE"}})"), 1234U);
  EXPECT_EQ(detail::webhdfs_file_length(R"({"FileStatus":{"length" : 18446744073709551615}})"),
            18446744073709551615ULL);
  EXPECT_FALSE(detail::webhdfs_file_length(R"({"FileStatus":{"length":18446744073709551616}})"));
  EXPECT_FALSE(detail::webhdfs_file_length(R"({"FileStatus":{"length":99999999999999999999999}})"));
  EXPECT_FALSE(detail::webhdfs_file_length(R"({"FileStatus":{"length":-1}})"));
  EXPECT_FALSE(detail::webhdfs_file_length(R"({"RemoteException":{}})"));
}

// RemoteHandle against a WebHDFS-protocol server (tests/servers/webhdfs_server.py): the size
// from GETFILESTATUS, ranges from OPEN through the name node's redirect to a data node.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "remote_servers.hpp"
#include "test_utils.hpp"

using namespace kvikio;
using kvikio::test::ScopedEnv;
using kvikio::test::ScopedHttpSettings;
using kvikio::test::ServerProcess;

namespace {

class RemoteWebHdfs : public ::testing::Test {
 protected:
  void start(std::vector<std::string> extra = {})
  {
    data_ = test::random_bytes(250'001, 3);
    std::filesystem::create_directories(dir_.file("user/data"));
    test::write_file(dir_.file("user/data/file.bin"), data_);
    std::vector<std::string> args{"--root", dir_.file(""), "--port", "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    server_.emplace("webhdfs_server.py", args, dir_.file("webhdfs.log"));
    defaults::set_http_timeout(10);
  }
  std::string url(const std::string& query = "") const
  {
    return server_->base_url() + "/webhdfs/v1/user/data/file.bin" +
           (query.empty() ? "" : "?" + query);
  }
  void expect_round_trip(RemoteHandle& h)
  {
    ASSERT_EQ(h.nbytes(), data_.size());
    std::vector<char> buf(data_.size());
    EXPECT_EQ(h.read(buf.data(), buf.size()), buf.size());
    EXPECT_EQ(buf, data_);
    std::vector<char> part(77'777);
    EXPECT_EQ(h.read(part.data(), part.size(), 4099), part.size());
    EXPECT_TRUE(std::equal(part.begin(), part.end(), data_.begin() + 4099));
    std::vector<char> all(data_.size() - 11);
    EXPECT_EQ(h.pread(all.data(), all.size(), 11, 30'001).get(), all.size());
    EXPECT_TRUE(std::equal(all.begin(), all.end(), data_.begin() + 11));
  }

  ScopedEnv user_env_{"KVIKIO_WEBHDFS_USERNAME", std::nullopt};
  ScopedHttpSettings settings_;
  test::TempDir dir_;
  std::vector<char> data_;
  std::optional<ServerProcess> server_;
};

}  // namespace

TEST_F(RemoteWebHdfs, OpenInfersWebHdfsAndReadsThroughTheRedirect)
{
  start();
  defaults::set_num_threads(3);
  EXPECT_EQ(infer_remote_endpoint_type(url()), RemoteEndpointType::WEBHDFS);
  auto h = RemoteHandle::open(url());
  EXPECT_EQ(h.remote_endpoint_type(), RemoteEndpointType::WEBHDFS);
  expect_round_trip(h);
}

TEST_F(RemoteWebHdfs, HostPortPathConstructor)
{
  start();
  RemoteHandle h(std::make_unique<WebHdfsEndpoint>(
    "127.0.0.1", std::to_string(server_->port()), "/user/data/file.bin"));
  expect_round_trip(h);
}

TEST_F(RemoteWebHdfs, UserNameFromArgumentUrlOrEnvironment)
{
  start({"--require-user", "alice"});
  {
    RemoteHandle h(std::make_unique<WebHdfsEndpoint>(
      "127.0.0.1", std::to_string(server_->port()), "user/data/file.bin", "alice"));
    expect_round_trip(h);
  }
  {
    auto h = RemoteHandle::open(url("user.name=alice"));
    EXPECT_EQ(dynamic_cast<const WebHdfsEndpoint&>(h.endpoint()).username(), "alice");
    expect_round_trip(h);
  }
  {
    ScopedEnv env("KVIKIO_WEBHDFS_USERNAME", "alice");
    auto h = RemoteHandle::open(url());
    expect_round_trip(h);
    // The URL's user name comes before the environment's.
    WebHdfsEndpoint from_url(url("user.name=bob"));
    EXPECT_EQ(from_url.username(), "bob");
  }
  try {
    RemoteHandle::open(url());
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    EXPECT_EQ(e.http_status(), 401) << e.what();
    EXPECT_NE(std::string(e.what()).find(url()), std::string::npos) << e.what();
  }
}

TEST_F(RemoteWebHdfs, MissingFileIs404)
{
  start();
  auto missing = server_->base_url() + "/webhdfs/v1/user/data/none.bin";
  try {
    RemoteHandle::open(missing);
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    EXPECT_EQ(e.http_status(), 404) << e.what();
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
}

TEST_F(RemoteWebHdfs, ReadPastEndIsEndOfFileError)
{
  start();
  auto h = RemoteHandle::open(url());
  std::vector<char> buf(10);
  EXPECT_THROW(h.read(buf.data(), 10, data_.size() - 9), EndOfFileError);
}

TEST(RemoteWebHdfsUrl, MalformedUrlsAreRejected)
{
  // Not a REST URL (inference says HTTP), but the constructor adds the prefix (issue 13).
  EXPECT_FALSE(WebHdfsEndpoint::is_url_valid("http://host:9870/notwebhdfs/file"));
  EXPECT_EQ(WebHdfsEndpoint("http://host:9870/notwebhdfs/file").url(),
            "http://host:9870/webhdfs/v1/notwebhdfs/file");
  for (std::string bad : {"s3://bucket/key", "http://host:9870/webhdfs/v1/", "http://host:9870/"}) {
    EXPECT_FALSE(WebHdfsEndpoint::is_url_valid(bad)) << bad;
    try {
      WebHdfsEndpoint e(bad);
      FAIL() << "expected std::invalid_argument for " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

// Found by tests/fuzz/fuzz_webhdfs_url: the host and port went into the URL unchecked, so a
// port "80/../../admin" or a host "evil.example/x?" moved the requests to another path or host.
TEST(RemoteWebHdfsUrl, HostsAndPortsThatCouldChangeTheUrlAreRejected)
{
  for (std::string host : {"evil.example/x?", "h:1", "a@b", "h#", "h ost", "[::1", "[]", "::1"}) {
    SCOPED_TRACE(host);
    try {
      WebHdfsEndpoint e(host, "9870", "user/file", "alice");
      FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("invalid host '" + host + "'"), std::string::npos)
        << e.what();
    }
  }
  for (std::string port : {"80/../../admin", "9870?op=DELETE", "x", "-1", "0", "65536", "123456"}) {
    SCOPED_TRACE(port);
    try {
      WebHdfsEndpoint e("namenode", port, "user/file", "alice");
      FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("invalid port '" + port + "'"), std::string::npos)
        << e.what();
    }
  }
  EXPECT_EQ(WebHdfsEndpoint("Name-Node.example_1", "65535", "f", "u").url(),
            "http://Name-Node.example_1:65535/webhdfs/v1/f?user.name=u");
  EXPECT_EQ(WebHdfsEndpoint("[fe80::1%25eth0]", "", "f", "u").url(),
            "http://[fe80::1%25eth0]/webhdfs/v1/f?user.name=u");
}

// Reliability audit #8: doas (a proxy user) and delegation (a secure cluster's token) were
// dropped from the URL, so the request ran as the proxy service itself or got 401.
TEST_F(RemoteWebHdfs, DoasDelegationAndOtherParametersAreSentOnEveryRequest)
{
  start({"--require-user",
         "svc",
         "--require-param",
         "doas=alice",
         "--require-param",
         "delegation=SECRETTOKEN",
         "--require-param",
         "custom=1"});
  auto h =
    RemoteHandle::open(url("op=OPEN&user.name=svc&doas=alice&delegation=SECRETTOKEN&"
                           "custom=1&offset=5&length=3"));
  EXPECT_EQ(h.remote_endpoint_type(), RemoteEndpointType::WEBHDFS);
  // op, offset and length are each request's own; everything else stays, in order.
  EXPECT_EQ(h.endpoint().url(), url("user.name=svc&doas=alice&delegation=SECRETTOKEN&custom=1"));
  expect_round_trip(h);

  // Messages keep the identities (user.name, doas) but never the delegation token.
  auto missing =
    server_->base_url() +
    "/webhdfs/v1/user/data/none.bin?user.name=svc&doas=alice&delegation=SECRETTOKEN&custom=1";
  try {
    RemoteHandle::open(missing);
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.http_status(), 404) << what;
    EXPECT_NE(what.find("/webhdfs/v1/user/data/none.bin?user.name=svc&doas=alice&"
                        "delegation=REDACTED&custom=1"),
              std::string::npos)
      << what;
    EXPECT_EQ(what.find("SECRETTOKEN"), std::string::npos) << what;
    EXPECT_EQ(e.url().find("SECRETTOKEN"), std::string::npos) << e.url();
  }
  EXPECT_EQ(WebHdfsEndpoint(url("user.name=svc&delegation=SECRETTOKEN")).str().find("SECRETTOKEN"),
            std::string::npos);
}

// Reliability audit #1: "user/alice/../../../admin/x" was sent as "/webhdfs/admin/x" (libcurl
// removes dot segments), out of /webhdfs/v1/.
TEST(RemoteWebHdfsUrl, DotSegmentsThatCouldLeaveTheWebHdfsRootAreRejected)
{
  for (std::string path : {"user/alice/../../../admin/x",
                           "../x",
                           "./x",
                           "a/./b",
                           "a/..",
                           "a/%2e%2E/b",
                           "a/%2E/b",
                           "a/.%2e/b",
                           "a/..%2F..%2Fadmin/x"}) {
    SCOPED_TRACE(path);
    auto full = "http://host:9870/webhdfs/v1/" + path + "?user.name=alice";
    try {
      WebHdfsEndpoint e(full);
      FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(full), std::string::npos) << what;
      EXPECT_NE(what.find("'.' or '..' segment"), std::string::npos) << what;
      EXPECT_NE(what.find("/webhdfs/v1/"), std::string::npos) << what;
    }
    try {
      WebHdfsEndpoint e("host", "9870", path, "alice");
      FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("'.' or '..' segment"), std::string::npos) << e.what();
    }
    EXPECT_THROW(RemoteHandle::open(full, RemoteEndpointType::WEBHDFS), std::invalid_argument);
  }
  // Dots inside a name are just names.
  for (std::string path : {"a/..b/c", "a/.hidden", "a/b.", "a/...", "a/%2e%2e%2e"}) {
    SCOPED_TRACE(path);
    WebHdfsEndpoint e("http://host:9870/webhdfs/v1/" + path);
    EXPECT_EQ(e.url(), "http://host:9870/webhdfs/v1/" + path);
    WebHdfsEndpoint e2("host", "9870", path);
  }
}

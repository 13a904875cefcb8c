// Remote writes under server faults (issue 23): every write path (S3 multipart, S3 PutObject,
// presigned PUT, WebHDFS create and append) against a fault-injecting proxy
// (tests/servers/fault_proxy.py) in front of moto and the WebHDFS server. Whatever the fault,
// the object is the old one or the new one, whole, and the call says which. Also the write
// handle's lifetime: close() and abort() while other threads write.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/hdfs.hpp>
#include <kvikio/remote_handle.hpp>

#include "remote/writer.hpp"
#include "remote_servers.hpp"
#include "test_utils.hpp"

using namespace kvikio;
using kvikio::test::ScopedEnv;
using kvikio::test::ScopedHttpSettings;
using kvikio::test::ServerProcess;

namespace {

constexpr std::size_t kib    = std::size_t{1} << 10;
constexpr std::size_t mib    = std::size_t{1} << 20;
constexpr std::size_t part   = 5 * mib;
constexpr const char* bucket = "kvikio-faults";

std::string json_field(const std::string& json, const std::string& name)
{
  const std::string key = "\"" + name + "\": \"";
  auto start            = json.find(key);
  if (start == std::string::npos) { throw std::runtime_error("no field " + name + " in " + json); }
  start += key.size();
  return json.substr(start, json.find('"', start) - start);
}

std::string port_of(const ServerProcess& s)
{
  auto url = s.base_url();
  return url.substr(url.rfind(':') + 1);
}

// One moto server and one WebHDFS server for the whole suite, each behind a fault proxy.
struct Servers {
  test::TempDir dir;
  std::optional<ServerProcess> moto, s3_proxy, webhdfs, hdfs_proxy;
  std::string key, secret;

  Servers()
  {
    moto.emplace("s3_server.py", std::vector<std::string>{}, dir.file("moto.log"), 60000);
    auto creds = moto->command(R"({"cmd": "setup", "bucket": ")" + std::string(bucket) + "\"}");
    key        = json_field(creds, "key");
    secret     = json_field(creds, "secret");
    moto->command(R"({"cmd": "auth", "on": true})");
    s3_proxy.emplace("fault_proxy.py",
                     std::vector<std::string>{"--upstream", port_of(*moto)},
                     dir.file("s3_proxy.log"));
    std::filesystem::create_directories(dir.file("hdfs/user"));
    webhdfs.emplace("webhdfs_server.py",
                    std::vector<std::string>{"--root", dir.file("hdfs"), "--port", "0"},
                    dir.file("webhdfs.log"));
    hdfs_proxy.emplace("fault_proxy.py",
                       std::vector<std::string>{"--upstream", port_of(*webhdfs)},
                       dir.file("hdfs_proxy.log"));
  }
};

class RemoteFaults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { servers_ = new Servers(); }
  static void TearDownTestSuite()
  {
    delete servers_;
    servers_ = nullptr;
  }
  void SetUp() override
  {
    defaults::set_http_timeout(10);
    defaults::set_http_max_attempts(3);
    defaults::set_num_threads(2);
  }
  void TearDown() override
  {
    proxy(*servers_->s3_proxy, R"({"cmd": "clear"})");
    proxy(*servers_->hdfs_proxy, R"({"cmd": "clear"})");
  }

  static std::string proxy(ServerProcess& p, const std::string& cmd) { return p.command(cmd); }
  static void arm(ServerProcess& p,
                  const std::string& kind,
                  const std::string& match,
                  int count    = 1,
                  double delay = 0,
                  int status   = 0)
  {
    auto r = p.command(R"({"cmd": "fault", "kind": ")" + kind + R"(", "match": ")" + match +
                       R"(", "count": )" + std::to_string(count) + R"(, "delay": )" +
                       std::to_string(delay) + R"(, "status": )" + std::to_string(status) + "}");
    ASSERT_NE(r.find("\"ok\""), std::string::npos) << r;
  }
  static int armed(ServerProcess& p)
  {
    auto r = p.command(R"({"cmd": "armed"})");
    return std::stoi(r.substr(r.find(':') + 1));
  }

  // S3, through the proxy (faults) or straight to moto (to set up and check).
  static std::unique_ptr<S3Endpoint> s3(const std::string& key, bool faulty = true)
  {
    auto& s = *servers_;
    return std::make_unique<S3Endpoint>(std::pair<std::string, std::string>{bucket, key},
                                        "us-east-1",
                                        s.key,
                                        s.secret,
                                        (faulty ? s.s3_proxy : s.moto)->base_url());
  }
  static void s3_put(const std::string& key, const std::vector<char>& data)
  {
    RemoteHandle h(s3(key, false), RemoteOpenMode::WRITE, {.part_size = part});
    h.write(data.data(), data.size());
    h.close();
  }
  static std::vector<char> s3_get(const std::string& key)
  {
    RemoteHandle h(s3(key, false));
    std::vector<char> out(h.nbytes());
    if (!out.empty()) { h.read(out.data(), out.size()); }
    return out;
  }
  static std::size_t open_uploads()
  {
    auto r =
      servers_->moto->command(R"({"cmd": "uploads", "bucket": ")" + std::string(bucket) + "\"}");
    return std::stoul(r.substr(r.find(':') + 1));
  }
  static std::string presigned_put(const std::string& key)
  {
    auto r = servers_->moto->command(
      R"({"cmd": "presign", "bucket": ")" + std::string(bucket) + R"(", "key": ")" + key +
      R"(", "method": "put_object", "endpoint_url": ")" + servers_->s3_proxy->base_url() + "\"}");
    return json_field(r, "url");
  }

  static std::string hdfs_url(const std::string& name)
  {
    return servers_->hdfs_proxy->base_url() + "/webhdfs/v1/user/" + name;
  }
  static std::vector<char> on_disk(const std::string& name)
  {
    std::ifstream f(servers_->dir.file("hdfs/user/" + name), std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  // Files in the WebHDFS root other than `keep` (a hidden file left behind, say).
  static std::vector<std::string> leftovers()
  {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(servers_->dir.file("hdfs/user"))) {
      auto n = e.path().filename().string();
      if (n.find("kvikio-partial") != std::string::npos) { out.push_back(n); }
    }
    return out;
  }

  static Servers* servers_;
  ScopedHttpSettings settings_;
  ScopedEnv e1_{"AWS_ACCESS_KEY_ID", std::nullopt};
  ScopedEnv e2_{"AWS_SECRET_ACCESS_KEY", std::nullopt};
  ScopedEnv e3_{"AWS_ENDPOINT_URL", std::nullopt};
  ScopedEnv e4_{"KVIKIO_WEBHDFS_USERNAME", std::nullopt};
};
Servers* RemoteFaults::servers_ = nullptr;

}  // namespace

// ------------------------------------------------------------------ the handle's lifetime

// F14: abort() and close() while other threads copy into the part buffers freed them under
// the copies (SIGSEGV). Now they wait for the writes under way; later writes are refused.
TEST(RemoteWriteLifetime, AbortAndCloseWhileOtherThreadsWriteAreSafeAndTyped)
{
  ScopedHttpSettings settings;
  defaults::set_http_timeout(2);
  defaults::set_http_max_attempts(1);
  constexpr std::size_t size = 64 * mib;
  const auto data            = test::random_bytes(4 * mib, 5);
  for (bool use_close : {false, true}) {
    SCOPED_TRACE(use_close ? "close" : "abort");
    // Declared to fit one part: nothing goes out before close, so no server is needed.
    RemoteHandle h(std::make_unique<S3Endpoint>(std::pair<std::string, std::string>{"b", "k"},
                                                "us-east-1",
                                                "key",
                                                "secret",
                                                "http://127.0.0.1:1"),
                   RemoteOpenMode::WRITE,
                   {.part_size = size, .nbytes = size});
    std::atomic<int> refused{0}, other{0};
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        try {
          for (int round = 0; round < 1000; ++round) {
            for (std::size_t at = t * 16 * mib; at < (t + 1) * 16 * mib; at += data.size()) {
              h.write(data.data(), data.size(), at);
            }
          }
        } catch (const RemoteModeError&) {
          ++refused;
        } catch (...) {
          ++other;
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
    if (use_close) {
      // Every byte was written at least once: close commits, and fails to reach the server.
      EXPECT_THROW(h.close(), RemoteError);
    } else {
      h.abort();
    }
    for (auto& t : threads) {
      t.join();
    }
    EXPECT_EQ(refused.load(), 4);
    EXPECT_EQ(other.load(), 0);
    KVIKIO_EXPECT_THROW_WITH(h.write(data.data(), 1, 0), RemoteModeError, "closed");
  }
}

// F10: a presigned PUT is one request of at most 5 GiB; a write past that is refused at once
// rather than buffered until close.
TEST(RemoteWriteLimits, PresignedPutPastFiveGibIsRefusedAtTheWrite)
{
  RemoteHandle h(std::make_unique<S3EndpointWithPresignedUrl>(
                   "http://127.0.0.1:1/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab"),
                 RemoteOpenMode::WRITE);
  const std::vector<char> data(101, 'x');
  KVIKIO_EXPECT_THROW_WITH(h.write(data.data(), data.size(), (std::size_t{5} << 30)),
                           RemoteWritePastEndError,
                           "5 GiB limit of a single PUT");
  KVIKIO_EXPECT_THROW_WITH(h.write(data.data(), data.size(), (std::size_t{5} << 30) - 100),
                           RemoteWritePastEndError,
                           "127.0.0.1:1/b/k");
  h.write(data.data(), data.size(), (std::size_t{5} << 30) - 101);  // ends at the limit
  h.abort();
}

// F12: the ETag S3 gives a multipart object, against hashlib's MD5 of the parts' MD5s.
TEST(RemoteWriteChecksum, MultipartEtagIsTheMd5OfThePartMd5s)
{
  // md5("") and md5("abc") as part ETags; python3 -c 'import hashlib; print(hashlib.md5(
  // bytes.fromhex("d41d8cd98f00b204e9800998ecf8427e900150983cd24fb0d6963f7d28e17f72"))
  // .hexdigest())'
  EXPECT_EQ(detail::s3_multipart_etag(
              {"\"d41d8cd98f00b204e9800998ecf8427e\"", "900150983cd24fb0d6963f7d28e17f72"}),
            "66027c6d92d43d01c4f2aa8759629be3-2");
  EXPECT_EQ(detail::s3_multipart_etag({"\"not-an-md5\""}), "");
}

// F4: whole parts written at once by several threads, at the max_buffered_parts bound, wait
// for the copies under way instead of failing with "none is complete".
TEST_F(RemoteFaults, WholePartsWrittenConcurrentlyAtTheBoundWaitInsteadOfFailing)
{
  defaults::set_num_threads(1);
  constexpr std::size_t big = 32 * mib;
  const auto data           = test::random_bytes(3 * big, 41);
  RemoteHandle h(
    s3("bound", false), RemoteOpenMode::WRITE, {.part_size = big, .max_buffered_parts = 2});
  std::thread a([&] { h.write(data.data(), big, 0); });
  std::thread b([&] { h.write(data.data() + big, big, big); });
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  EXPECT_NO_THROW(h.write(data.data() + 2 * big, big, 2 * big));
  a.join();
  b.join();
  h.close();
  EXPECT_EQ(s3_get("bound"), data);
}

// ------------------------------------------------------------------ targeted faults

// F13: a small POST body (CompleteMultipartUpload) on a reused keep-alive connection that the
// server had closed: libcurl re-sends it on a new connection by itself, which needs the body
// rewound (curl error 65, not retried, before).
TEST_F(RemoteFaults, KeepAliveCloseBeforeASmallPostIsResentWithTheBodyRewound)
{
  defaults::set_num_threads(1);
  const auto data = test::random_bytes(part + 70 * kib + 3, 2);
  // CreateMultipartUpload goes out on this thread (at the first complete part), so Complete
  // finds that connection to reuse.
  arm(*servers_->s3_proxy, "drop_reused", "POST /kvikio-faults/keepalive?uploadId");
  RemoteHandle h(s3("keepalive"), RemoteOpenMode::WRITE, {.part_size = part});
  h.write(data.data(), data.size());
  h.close();
  EXPECT_EQ(armed(*servers_->s3_proxy), 0) << "the connection was not reused";
  EXPECT_EQ(s3_get("keepalive"), data);
}

// F12: CompleteMultipartUpload committed, its answer lost: the retry gets 404 NoSuchUpload,
// and the object (same size, same multipart ETag) is recognised as ours.
TEST_F(RemoteFaults, LostCompleteAnswerIsRecognisedAsCommitted)
{
  const auto data = test::random_bytes(2 * part + 1234, 3);
  arm(*servers_->s3_proxy, "store_drop", "POST /kvikio-faults/lost-complete?uploadId");
  RemoteHandle h(s3("lost-complete"), RemoteOpenMode::WRITE, {.part_size = part});
  h.write(data.data(), data.size());
  EXPECT_NO_THROW(h.close());
  EXPECT_EQ(armed(*servers_->s3_proxy), 0);
  EXPECT_EQ(s3_get("lost-complete"), data);
  EXPECT_EQ(open_uploads(), 0U);
}

// F12: a 200 answer whose body is an <Error> (InternalError) is retried.
TEST_F(RemoteFaults, CompleteAnswered200WithAnErrorBodyIsRetried)
{
  const auto data = test::random_bytes(part + 77, 4);
  arm(*servers_->s3_proxy, "error_200", "POST /kvikio-faults/error-200?uploadId");
  RemoteHandle h(s3("error-200"), RemoteOpenMode::WRITE, {.part_size = part});
  h.write(data.data(), data.size());
  EXPECT_NO_THROW(h.close());
  EXPECT_EQ(armed(*servers_->s3_proxy), 0);
  EXPECT_EQ(s3_get("error-200"), data);
}

// F1: an APPEND that the data node stored, then answered 500 (or too late), is not sent again.
TEST_F(RemoteFaults, StoredAppendAnswered500OrLateIsNotAppendedTwice)
{
  for (const char* kind : {"store_500", "store_slow"}) {
    SCOPED_TRACE(kind);
    if (std::string(kind) == "store_slow") { defaults::set_http_timeout(1); }
    const std::string name = std::string("twice-") + kind;
    const auto data        = test::random_bytes(3 * 64 * kib + 5, 5);
    arm(*servers_->hdfs_proxy, kind, "POST /datanode/webhdfs/v1/user/", 1, 1.5);
    RemoteHandle h(std::make_unique<WebHdfsEndpoint>(hdfs_url(name)),
                   RemoteOpenMode::WRITE,
                   {.part_size = 64 * kib});
    h.write(data.data(), data.size());
    h.close();
    EXPECT_EQ(armed(*servers_->hdfs_proxy), 0);
    EXPECT_EQ(on_disk(name), data);
  }
}

// F2: a failed or aborted overwrite keeps the old file (the bytes went to a hidden sibling,
// renamed onto the file only at close), and leaves no hidden file behind.
TEST_F(RemoteFaults, FailedOrAbortedWebHdfsOverwriteKeepsTheOldFile)
{
  const auto old  = test::random_bytes(1000, 6);
  const auto data = test::random_bytes(3 * 64 * kib, 7);
  test::write_file(servers_->dir.file("hdfs/user/kept.bin"), old);
  {
    RemoteHandle h(std::make_unique<WebHdfsEndpoint>(hdfs_url("kept.bin")),
                   RemoteOpenMode::WRITE,
                   {.part_size = 64 * kib});
    h.write(data.data(), 2 * 64 * kib);  // two parts go out now
    EXPECT_EQ(on_disk("kept.bin"), old) << "the upload is visible before close";
    h.abort();
  }
  EXPECT_EQ(on_disk("kept.bin"), old);
  arm(*servers_->hdfs_proxy, "status", "POST /datanode/webhdfs/v1/user/", 1, 0, 403);
  {
    RemoteHandle h(std::make_unique<WebHdfsEndpoint>(hdfs_url("kept.bin")),
                   RemoteOpenMode::WRITE,
                   {.part_size = 64 * kib});
    h.write(data.data(), data.size());
    KVIKIO_EXPECT_THROW_WITH(h.close(), RemoteHttpError, "403");
  }
  EXPECT_EQ(on_disk("kept.bin"), old);
  EXPECT_TRUE(leftovers().empty()) << leftovers().front();
  // overwrite=false onto an existing file: refused at close, the file kept.
  {
    RemoteHandle h(std::make_unique<WebHdfsEndpoint>(hdfs_url("kept.bin")),
                   RemoteOpenMode::WRITE,
                   {.overwrite = false});
    h.write(data.data(), 10);
    KVIKIO_EXPECT_THROW_WITH(h.close(), RemoteWriteError, "overwrite is false");
  }
  EXPECT_EQ(on_disk("kept.bin"), old);
  EXPECT_TRUE(leftovers().empty());
}

// F3: the bytes of a first APPEND that reached the file, answered with an error, are cut off.
TEST_F(RemoteFaults, FailedFirstAppendThatWasStoredIsTruncatedBack)
{
  const auto base = test::random_bytes(45000, 8);
  const auto more = test::random_bytes(64 * kib, 9);
  test::write_file(servers_->dir.file("hdfs/user/append.bin"), base);
  arm(*servers_->hdfs_proxy, "store_status", "POST /datanode/webhdfs/v1/user/", 1, 0, 403);
  RemoteHandle h(std::make_unique<WebHdfsEndpoint>(hdfs_url("append.bin")),
                 RemoteOpenMode::APPEND,
                 {.part_size = 64 * kib});
  h.write(more.data(), more.size());
  KVIKIO_EXPECT_THROW_WITH(h.close(), RemoteHttpError, "403");
  EXPECT_EQ(on_disk("append.bin"), base);
}

// ------------------------------------------------------------------ the fault matrix

namespace {

enum class Path { s3_multipart, s3_put, presigned_put, webhdfs_create, webhdfs_append };

struct Case {
  Path path;
  std::string fault;
  std::string target;  // which request of the write (a substring of "METHOD /path?query")
};

std::string path_name(Path p)
{
  switch (p) {
    case Path::s3_multipart:
      return "S3Multipart";
    case Path::s3_put:
      return "S3Put";
    case Path::presigned_put:
      return "PresignedPut";
    case Path::webhdfs_create:
      return "WebHdfsCreate";
    case Path::webhdfs_append:
      return "WebHdfsAppend";
  }
  return "";
}

// gtest's name for a failing case: "WebHdfsCreate, store_drop on op=RENAME".
void PrintTo(const Case& c, std::ostream* os)
{
  *os << path_name(c.path) << ", " << c.fault << " on " << c.target;
}

std::vector<Case> all_cases()
{
  const std::vector<std::string> faults = {
    "store_500", "store_slow", "store_drop", "drop_reused", "reset_body", "status"};
  std::vector<std::pair<Path, std::string>> targets = {
    {Path::s3_multipart, "PUT /kvikio-faults/m-?partNumber=2"},
    {Path::s3_multipart, "POST /kvikio-faults/m-?uploadId"},
    {Path::s3_put, "PUT /kvikio-faults/p-"},
    {Path::presigned_put, "PUT /kvikio-faults/u-?"},
    {Path::webhdfs_create, "PUT /datanode/webhdfs/v1/user/"},
    {Path::webhdfs_create, "POST /datanode/webhdfs/v1/user/"},
    {Path::webhdfs_create, "op=RENAME"},
    {Path::webhdfs_append, "POST /datanode/webhdfs/v1/user/"},
  };
  std::vector<Case> out;
  for (const auto& [path, target] : targets) {
    for (const auto& f : faults) {
      out.push_back({path, f, target});
    }
    if (path != Path::webhdfs_create && path != Path::webhdfs_append) {
      out.push_back({path, "error_200", target});  // S3's 200 with an <Error> body
    }
  }
  return out;
}

class RemoteFaultMatrix : public RemoteFaults, public ::testing::WithParamInterface<Case> {};

}  // namespace

// The object is the old one or the new one, whole, never a mix or doubled; the call says
// which. Each fault is armed once, so the retries recover, and the new object must be there.
TEST_P(RemoteFaultMatrix, ObjectIsOldOrNewAndTheCallSaysWhich)
{
  const auto& c      = GetParam();
  const bool slow    = c.fault == "store_slow";
  const bool s3_path = c.path != Path::webhdfs_create && c.path != Path::webhdfs_append;
  if (slow) { defaults::set_http_timeout(1); }
  static int serial     = 0;
  const std::string id  = std::to_string(++serial);
  std::string target    = c.target;
  const std::string key = std::string(c.path == Path::s3_multipart    ? "m-"
                                      : c.path == Path::s3_put        ? "p-"
                                      : c.path == Path::presigned_put ? "u-"
                                                                      : "h-") +
                          id;
  if (s3_path) { target.insert(target.find('-', target.rfind('/')) + 1, id); }
  const auto old_data = test::random_bytes(c.path == Path::s3_multipart ? 10 : 300 * kib, 100);
  const auto new_data =
    test::random_bytes(c.path == Path::s3_multipart ? 2 * part + 999 : 200 * kib + 7, 200 + serial);
  std::vector<char> expected_new = new_data;

  if (s3_path) {
    s3_put(key, old_data);
  } else {
    test::write_file(servers_->dir.file("hdfs/user/" + key), old_data);
  }
  if (c.path == Path::webhdfs_append) {
    expected_new = old_data;
    expected_new.insert(expected_new.end(), new_data.begin(), new_data.end());
  }

  std::unique_ptr<RemoteEndpoint> ep;
  RemoteWriteOptions options;
  switch (c.path) {
    case Path::s3_multipart:
      ep                = s3(key);
      options.part_size = part;
      break;
    case Path::s3_put:
      ep             = s3(key);
      options.nbytes = new_data.size();  // fits one part: a single PutObject at close
      break;
    case Path::presigned_put:
      ep = std::make_unique<S3EndpointWithPresignedUrl>(presigned_put(key));
      // moto 5.2.5 answers 500 to a presigned PUT signed for another host (the proxy) while it
      // checks IAM auth; signatures are checked by the other S3 cases.
      servers_->moto->command(R"({"cmd": "auth", "on": false})");
      break;
    case Path::webhdfs_create:
    case Path::webhdfs_append:
      ep                = std::make_unique<WebHdfsEndpoint>(hdfs_url(key));
      options.part_size = 64 * kib;
      break;
  }
  // A request on this thread first, so that drop_reused finds a connection to reuse.
  if (s3_path) {
    (void)RemoteHandle(s3(key)).nbytes();
  } else {
    (void)RemoteHandle(std::make_unique<WebHdfsEndpoint>(hdfs_url(key))).nbytes();
  }
  auto& proxy_server = s3_path ? *servers_->s3_proxy : *servers_->hdfs_proxy;
  proxy(proxy_server, R"({"cmd": "log"})");  // from here on
  arm(proxy_server, c.fault, target, 1, 1.5, 503);

  std::exception_ptr error;
  try {
    RemoteHandle h(std::move(ep),
                   c.path == Path::webhdfs_append ? RemoteOpenMode::APPEND : RemoteOpenMode::WRITE,
                   options);
    h.write(new_data.data(), new_data.size());
    h.close();
  } catch (const RemoteError&) {
    error = std::current_exception();
  }
  if (c.path == Path::presigned_put) { servers_->moto->command(R"({"cmd": "auth", "on": true})"); }
  const auto now = s3_path ? s3_get(key) : on_disk(key);
  if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "a fault armed once was not recovered from: " << e.what();
    }
    EXPECT_TRUE(now == old_data) << "failed, yet the object is not the old one (" << now.size()
                                 << " bytes)";
  } else {
    EXPECT_TRUE(now == expected_new)
      << "succeeded, yet the object is not the new one (" << now.size() << " bytes, expected "
      << expected_new.size() << ")";
  }
  if (c.fault != "drop_reused") {
    EXPECT_EQ(armed(proxy_server), 0) << "the fault was not hit: the test tests nothing";
  }
  if (s3_path) {
    EXPECT_EQ(open_uploads(), 0U);
  } else {
    EXPECT_TRUE(leftovers().empty()) << leftovers().front();
  }
  if (HasFailure()) {
    std::cerr << "the proxy's log: " << proxy(proxy_server, R"({"cmd": "log"})") << "\n";
  }
}

INSTANTIATE_TEST_SUITE_P(AllWritePaths,
                         RemoteFaultMatrix,
                         ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           return path_name(p.param.path) + "_" + p.param.fault + "_" +
                                  std::to_string(p.index);
                         });

// Remote writes (issue 15): S3 multipart and single PUT against moto's S3 server with
// signature checking on (tests/servers/s3_server.py), presigned PUT URLs, and WebHDFS
// CREATE/APPEND through the data-node redirect (tests/servers/webhdfs_server.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/device_memory.hpp>
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

constexpr std::size_t mib  = std::size_t{1} << 20;
constexpr std::size_t part = 5 * mib;

std::string json_field(const std::string& json, const std::string& name)
{
  const std::string key = "\"" + name + "\": \"";
  auto start            = json.find(key);
  if (start == std::string::npos) { throw std::runtime_error("no field " + name + " in " + json); }
  start += key.size();
  return json.substr(start, json.find('"', start) - start);
}

class RemoteWriteS3 : public ::testing::Test {
 protected:
  static constexpr const char* bucket = "kvikio-bucket";

  void SetUp() override
  {
    server_.emplace("s3_server.py", std::vector<std::string>{}, dir_.file("moto.log"), 60000);
    auto creds = server_->command(R"({"cmd": "setup", "bucket": ")" + std::string(bucket) + "\"}");
    key_       = json_field(creds, "key");
    secret_    = json_field(creds, "secret");
    role_key_  = json_field(creds, "role_key");
    role_secret_ = json_field(creds, "role_secret");
    role_token_  = json_field(creds, "role_token");
    auth(true);
    defaults::set_http_timeout(30);
    defaults::set_num_threads(4);
  }
  void TearDown() override
  {
    server_.reset();
    if (HasFailure()) {  // the server's side of the story
      std::ifstream f(dir_.file("moto.log"));
      std::string log{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
      std::cerr << "moto.log (tail):\n" << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
    }
  }

  void auth(bool on)
  {
    auto r =
      server_->command(std::string(R"({"cmd": "auth", "on": )") + (on ? "true" : "false") + "}");
    ASSERT_NE(r.find("\"ok\""), std::string::npos) << r;
  }
  std::size_t open_uploads()
  {
    auto r = server_->command(R"({"cmd": "uploads", "bucket": ")" + std::string(bucket) + "\"}");
    return std::stoul(r.substr(r.find(':') + 1));
  }
  bool exists(const std::string& key)
  {
    auto r = server_->command(R"({"cmd": "exists", "bucket": ")" + std::string(bucket) +
                              R"(", "key": ")" + key + "\"}");
    return r.find("true") != std::string::npos;
  }
  void fail_next(const std::string& query, int status, int count = 1)
  {
    auto r =
      server_->command(R"({"cmd": "fail", "query": ")" + query + R"(", "status": )" +
                       std::to_string(status) + R"(, "count": )" + std::to_string(count) + "}");
    ASSERT_NE(r.find("\"ok\""), std::string::npos) << r;
  }
  std::unique_ptr<S3Endpoint> endpoint(const std::string& key, const std::string& secret = "")
  {
    return std::make_unique<S3Endpoint>(std::pair<std::string, std::string>{bucket, key},
                                        "us-east-1",
                                        key_,
                                        secret.empty() ? secret_ : secret,
                                        server_->base_url());
  }
  std::vector<char> read_back(const std::string& key)
  {
    RemoteHandle h(endpoint(key));
    std::vector<char> out(h.nbytes());
    if (!out.empty()) { EXPECT_EQ(h.pread(out.data(), out.size()).get(), out.size()); }
    return out;
  }

  ScopedEnv e1_{"AWS_ACCESS_KEY_ID", std::nullopt};
  ScopedEnv e2_{"AWS_SECRET_ACCESS_KEY", std::nullopt};
  ScopedEnv e3_{"AWS_SESSION_TOKEN", std::nullopt};
  ScopedEnv e4_{"AWS_DEFAULT_REGION", std::nullopt};
  ScopedEnv e5_{"AWS_ENDPOINT_URL", std::nullopt};
  ScopedHttpSettings settings_;
  test::TempDir dir_;
  std::optional<ServerProcess> server_;
  std::string key_, secret_, role_key_, role_secret_, role_token_;
};

}  // namespace

// Multipart parts carry x-amz-checksum-crc32 (and the completion lists them): the CRC must be
// S3's CRC32 in S3's encoding, or real S3 refuses every part.
TEST(RemoteWriteChecksum, Crc32IsS3sCrc32InItsBase64Encoding)
{
  EXPECT_EQ(kvikio::detail::crc32(std::span<const char>("123456789", 9)), 0xCBF43926U);
  EXPECT_EQ(kvikio::detail::s3_crc32_text(0xCBF43926U), "y/Q5Jg==");
  EXPECT_EQ(kvikio::detail::crc32({}), 0U);
  EXPECT_EQ(kvikio::detail::s3_crc32_text(0), "AAAAAA==");
  EXPECT_EQ(kvikio::detail::s3_crc32_text(0xFFFFFFFFU), "/////w==");
  // The sliced loop against the bitwise definition, over every tail length.
  std::vector<char> data(1000);
  std::mt19937 rng(15);
  for (auto& c : data) {
    c = static_cast<char>(rng());
  }
  for (std::size_t n : {1UL, 7UL, 8UL, 9UL, 15UL, 16UL, 999UL, 1000UL}) {
    std::uint32_t c = 0xFFFFFFFFU;
    for (std::size_t i = 0; i < n; ++i) {
      c ^= static_cast<unsigned char>(data[i]);
      for (int k = 0; k < 8; ++k) {
        c = (c & 1U) != 0 ? 0xEDB88320U ^ (c >> 1) : c >> 1;
      }
    }
    EXPECT_EQ(kvikio::detail::crc32(std::span<const char>(data.data(), n)), c ^ 0xFFFFFFFFU) << n;
  }
}

TEST_F(RemoteWriteS3, RoundTripsByteForByteAroundThePartSize)
{
  for (std::size_t size :
       {std::size_t{0}, std::size_t{1}, part - 1, part, part + 1, 3 * part + 12'345}) {
    SCOPED_TRACE("size " + std::to_string(size));
    const auto data = test::random_bytes(size, size + 1);
    const auto key  = "obj-" + std::to_string(size);
    RemoteHandle h(endpoint(key), RemoteOpenMode::WRITE, {.part_size = part});
    EXPECT_EQ(h.mode(), RemoteOpenMode::WRITE);
    // Sequential writes in pieces that straddle part boundaries.
    for (std::size_t pos = 0; pos < size;) {
      const std::size_t n = std::min<std::size_t>(mib + 4097, size - pos);
      EXPECT_EQ(h.write(data.data() + pos, n), n);
      pos += n;
    }
    EXPECT_EQ(h.nbytes(), size);
    EXPECT_FALSE(exists(key));  // nothing visible before close
    h.close();
    EXPECT_FALSE(h.is_open());
    EXPECT_EQ(read_back(key), data);
    EXPECT_EQ(open_uploads(), 0U);
  }
}

TEST_F(RemoteWriteS3, OutOfOrderPwritesFromSeveralThreads)
{
  const std::size_t size = 3 * part + 4567;
  const auto data        = test::random_bytes(size, 5);
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  for (std::size_t pos = 0; pos < size; pos += 700'001) {
    pieces.emplace_back(pos, std::min<std::size_t>(700'001, size - pos));
  }
  std::shuffle(pieces.begin(), pieces.end(), std::mt19937(7));
  RemoteHandle h(endpoint("shuffled"), RemoteOpenMode::WRITE, {.part_size = part});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (std::size_t i = t; i < pieces.size(); i += 4) {
        auto [off, n] = pieces[i];
        try {
          h.pwrite(data.data() + off, n, off).get();
        } catch (const std::exception& e) {
          ADD_FAILURE() << e.what();
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  h.close();
  EXPECT_EQ(read_back("shuffled"), data);
}

TEST_F(RemoteWriteS3, S3UrlWithSessionTokenAndHttpsUrlFromTheEnvironment)
{
  const auto data = test::random_bytes(part + 99, 9);
  {
    ScopedEnv k("AWS_ACCESS_KEY_ID", role_key_), s("AWS_SECRET_ACCESS_KEY", role_secret_),
      t("AWS_SESSION_TOKEN", role_token_), r("AWS_DEFAULT_REGION", "us-east-1"),
      u("AWS_ENDPOINT_URL", server_->base_url());
    RemoteHandle h(std::make_unique<S3Endpoint>(std::string("s3://") + bucket + "/by-s3-url"),
                   RemoteOpenMode::WRITE);
    h.write(data.data(), data.size());
    h.close();
    RemoteHandle h2(
      std::make_unique<S3Endpoint>(server_->base_url() + "/" + bucket + "/by%20https%20url"),
      RemoteOpenMode::WRITE);
    h2.write(data.data(), 10);
    h2.close();
  }
  EXPECT_EQ(read_back("by-s3-url"), data);
  EXPECT_EQ(read_back("by https url"), std::vector<char>(data.begin(), data.begin() + 10));
}

TEST_F(RemoteWriteS3, HoleAtCloseIsIncompleteWriteErrorAndLeavesNothing)
{
  const auto data = test::random_bytes(2 * part + 5, 2);
  RemoteHandle h(endpoint("holey"), RemoteOpenMode::WRITE, {.part_size = part});
  h.pwrite(data.data(), part, 0).get();  // part 1 goes out as a multipart part
  h.pwrite(data.data() + part + 100, part - 95, part + 100).get();
  try {
    h.close();
    FAIL() << "expected RemoteIncompleteWriteError";
  } catch (const RemoteIncompleteWriteError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[5242880, 5242980)"), std::string::npos) << what;
    EXPECT_NE(what.find("100 bytes missing"), std::string::npos) << what;
    EXPECT_NE(what.find(server_->base_url() + "/" + bucket + "/holey"), std::string::npos) << what;
  }
  EXPECT_FALSE(exists("holey"));
  EXPECT_EQ(open_uploads(), 0U);
  KVIKIO_EXPECT_THROW_WITH(h.write(data.data(), 1, 0), RemoteModeError, "closed");
}

TEST_F(RemoteWriteS3, InjectedPartFailureAbortsTheUploadAndLeavesNothing)
{
  defaults::set_http_max_attempts(2);
  const auto data = test::random_bytes(4 * part, 3);
  fail_next("partNumber=2&", 400);  // not a retried status: the part fails at once
  RemoteHandle h(endpoint("failing"), RemoteOpenMode::WRITE, {.part_size = part});
  try {
    h.write(data.data(), data.size());
    h.close();
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.http_status(), 400) << what;
    EXPECT_NE(what.find("UploadPart 2"), std::string::npos) << what;
    EXPECT_NE(what.find("InjectedFault"), std::string::npos) << what;
    EXPECT_EQ(what.find(secret_), std::string::npos) << what;
  }
  h.abort();  // the write may have thrown before close: abort is what `with` would do
  EXPECT_FALSE(exists("failing"));
  EXPECT_EQ(open_uploads(), 0U);
}

TEST_F(RemoteWriteS3, FailedPartIsRetriedLikeReads)
{
  defaults::set_http_max_attempts(3);
  const auto data = test::random_bytes(2 * part + 1, 4);
  fail_next("partNumber=2&", 503, 2);  // two 503s, then the third attempt succeeds
  RemoteHandle h(endpoint("retried"), RemoteOpenMode::WRITE, {.part_size = part});
  h.write(data.data(), data.size());
  h.close();
  EXPECT_EQ(read_back("retried"), data);
  EXPECT_EQ(open_uploads(), 0U);
}

TEST_F(RemoteWriteS3, AbortAndDestructionWithoutCloseLeaveNothing)
{
  const auto data = test::random_bytes(3 * part, 6);
  {
    RemoteHandle h(endpoint("aborted"), RemoteOpenMode::WRITE, {.part_size = part});
    h.write(data.data(), data.size());
    h.abort();
    h.abort();  // idempotent
    KVIKIO_EXPECT_THROW_WITH(h.write(data.data(), 1), RemoteModeError, "closed");
  }
  {
    RemoteHandle h(endpoint("dropped"), RemoteOpenMode::WRITE, {.part_size = part});
    h.write(data.data(), data.size());
  }
  EXPECT_FALSE(exists("aborted"));
  EXPECT_FALSE(exists("dropped"));
  EXPECT_EQ(open_uploads(), 0U);
}

TEST_F(RemoteWriteS3, PresignedPutUrlTakesTheObjectInOnePut)
{
  auth(false);  // moto cannot check query-string signatures with IAM auth on
  const auto data = test::random_bytes(9 * mib + 3, 8);
  auto url = json_field(server_->command(R"({"cmd": "presign", "bucket": ")" + std::string(bucket) +
                                         R"(", "key": "presigned", "method": "put_object"})"),
                        "url");
  RemoteHandle h(std::make_unique<S3EndpointWithPresignedUrl>(url), RemoteOpenMode::WRITE);
  h.pwrite(data.data() + mib, data.size() - mib, mib).get();
  h.pwrite(data.data(), mib, 0).get();
  h.close();
  EXPECT_EQ(read_back("presigned"), data);
}

TEST_F(RemoteWriteS3, MissingBucketAndDeniedAccessAreTypedAndNameTheUrl)
{
  const auto data = test::random_bytes(100, 1);
  {
    RemoteHandle h(
      std::make_unique<S3Endpoint>(std::pair<std::string, std::string>{"no-such-bucket", "k"},
                                   "us-east-1",
                                   key_,
                                   secret_,
                                   server_->base_url()),
      RemoteOpenMode::WRITE);
    h.write(data.data(), data.size());
    try {
      h.close();
      FAIL() << "expected RemoteHttpError";
    } catch (const RemoteHttpError& e) {
      EXPECT_EQ(e.http_status(), 404) << e.what();
      EXPECT_NE(std::string(e.what()).find("NoSuchBucket"), std::string::npos) << e.what();
      EXPECT_EQ(e.url(), server_->base_url() + "/no-such-bucket/k");
    }
  }
  const std::string wrong = secret_.substr(0, 8) + "WRONGWRONG";
  RemoteHandle h(endpoint("denied", wrong), RemoteOpenMode::WRITE, {.part_size = part});
  try {
    h.write(data.data(), data.size());
    h.close();
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.http_status(), 403) << what;
    EXPECT_NE(what.find(server_->base_url() + "/" + bucket + "/denied"), std::string::npos);
    EXPECT_EQ(what.find(wrong), std::string::npos) << what;
  }
  EXPECT_FALSE(exists("denied"));
}

TEST_F(RemoteWriteS3, BadArgumentsAndWrongModesAreTyped)
{
  KVIKIO_EXPECT_THROW_WITH(
    RemoteHandle(endpoint("k"), RemoteOpenMode::WRITE, {.part_size = part - 1}),
    std::invalid_argument,
    "outside S3's limits");
  KVIKIO_EXPECT_THROW_WITH(endpoint(std::string(1025, 'k')), std::invalid_argument, "1024");
  KVIKIO_EXPECT_THROW_WITH(RemoteHandle(endpoint("k"), RemoteOpenMode::APPEND),
                           std::invalid_argument,
                           "append mode is for WebHDFS only");
  KVIKIO_EXPECT_THROW_WITH(
    RemoteHandle(std::make_unique<HttpEndpoint>(server_->base_url() + "/x"), RemoteOpenMode::WRITE),
    std::invalid_argument,
    "cannot be written");

  const auto data = test::random_bytes(11, 1);
  RemoteHandle w(endpoint("declared"), RemoteOpenMode::WRITE, {.nbytes = 10});
  KVIKIO_EXPECT_THROW_WITH(w.write(data.data(), 11), RemoteWritePastEndError, "declared size (10");
  std::vector<char> buf(10);
  KVIKIO_EXPECT_THROW_WITH(w.read(buf.data(), 10), RemoteModeError, "opened for writing");
  KVIKIO_EXPECT_THROW_WITH(w.pread(buf.data(), 10), RemoteModeError, "opened for writing");
  w.write(data.data(), 10);
  w.close();
  EXPECT_EQ(read_back("declared"), std::vector<char>(data.begin(), data.begin() + 10));

  RemoteHandle r(endpoint("declared"));
  KVIKIO_EXPECT_THROW_WITH(r.write(data.data(), 1), RemoteModeError, "opened for reading");
}

TEST_F(RemoteWriteS3, TooManyPartlyWrittenPartsIsAnErrorNotUnboundedMemory)
{
  const auto data = test::random_bytes(10, 1);
  RemoteHandle h(
    endpoint("sparse"), RemoteOpenMode::WRITE, {.part_size = part, .max_buffered_parts = 2});
  h.write(data.data(), 10, 0);
  h.write(data.data(), 10, part);
  KVIKIO_EXPECT_THROW_WITH(
    h.write(data.data(), 10, 2 * part), RemoteWriteError, "max_buffered_parts = 2");
  h.abort();
}

// Device memory: through the stand-in driver in CI (ctest remote.write_device_standin),
// through the real one on the GPU machine.
TEST_F(RemoteWriteS3, DeviceMemoryRoundTripThroughTheBounceBuffer)
{
  if (kvikio::device_count() == 0) {
    GTEST_SKIP() << "needs a CUDA device (or the stand-in driver)";
  }
  test::ScopedSettings restore;
  defaults::set_bounce_buffer_size(256 * 1024);  // many rounds through both halves
  const auto data = test::random_bytes(2 * part + 777, 12);
  DeviceBuffer device(data.size());
  device.copy_from_host(data.data(), data.size());
  RemoteHandle h(endpoint("from-device"), RemoteOpenMode::WRITE, {.part_size = part});
  auto* src = static_cast<const char*>(device.data());
  h.pwrite(src + part + 1, data.size() - part - 1, part + 1).get();
  h.write(src, part + 1, 0);
  h.close();
  EXPECT_EQ(read_back("from-device"), data);
}

// ------------------------------------------------------------------------------ WebHDFS

namespace {

class RemoteWriteWebHdfs : public ::testing::Test {
 protected:
  void SetUp() override
  {
    std::filesystem::create_directories(dir_.file("user"));
    server_.emplace("webhdfs_server.py",
                    std::vector<std::string>{"--root", dir_.file(""), "--port", "0"},
                    dir_.file("webhdfs.log"));
    defaults::set_http_timeout(10);
  }
  std::string url(const std::string& name) const
  {
    return server_->base_url() + "/webhdfs/v1/user/" + name;
  }
  std::vector<char> on_disk(const std::string& name) const
  {
    std::ifstream f(dir_.file("user/" + name), std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }

  ScopedEnv user_env_{"KVIKIO_WEBHDFS_USERNAME", std::nullopt};
  ScopedHttpSettings settings_;
  test::TempDir dir_;
  std::optional<ServerProcess> server_;
};

}  // namespace

TEST_F(RemoteWriteWebHdfs, CreateThenAppendThroughTheDataNodeRedirect)
{
  defaults::set_num_threads(4);
  const auto data = test::random_bytes(3 * mib + 5, 21);
  {
    RemoteHandle h(
      std::make_unique<WebHdfsEndpoint>(url("new.bin")), RemoteOpenMode::WRITE, {.part_size = mib});
    // Out of order: the appends still go in file order.
    h.pwrite(data.data() + 2 * mib, data.size() - 2 * mib, 2 * mib).get();
    h.pwrite(data.data(), 2 * mib, 0).get();
    h.close();
  }
  EXPECT_EQ(on_disk("new.bin"), data);
  const auto more = test::random_bytes(mib + 17, 22);
  {
    RemoteHandle h(std::make_unique<WebHdfsEndpoint>(url("new.bin")),
                   RemoteOpenMode::APPEND,
                   {.part_size = mib});
    h.write(more.data(), more.size());
    h.close();
  }
  auto both = data;
  both.insert(both.end(), more.begin(), more.end());
  EXPECT_EQ(on_disk("new.bin"), both);
  RemoteHandle r(std::make_unique<WebHdfsEndpoint>(url("new.bin")));
  std::vector<char> back(r.nbytes());
  r.read(back.data(), back.size());
  EXPECT_EQ(back, both);

  // Empty file, and the overwrite flag.
  {
    RemoteHandle h(std::make_unique<WebHdfsEndpoint>(url("empty.bin")), RemoteOpenMode::WRITE);
    h.close();
  }
  EXPECT_TRUE(std::filesystem::exists(dir_.file("user/empty.bin")));
  EXPECT_TRUE(on_disk("empty.bin").empty());
  RemoteHandle no(
    std::make_unique<WebHdfsEndpoint>(url("new.bin")), RemoteOpenMode::WRITE, {.overwrite = false});
  no.write(data.data(), 10);
  // The bytes go to a hidden file, renamed onto the target at close: the rename is refused.
  KVIKIO_EXPECT_THROW_WITH(no.close(), RemoteWriteError, "overwrite is false");
  EXPECT_EQ(on_disk("new.bin"), both);
}

TEST_F(RemoteWriteWebHdfs, AbortDeletesACreatedFileAndTruncatesAnAppend)
{
  const auto data = test::random_bytes(3 * mib, 23);
  {
    RemoteHandle h(std::make_unique<WebHdfsEndpoint>(url("gone.bin")),
                   RemoteOpenMode::WRITE,
                   {.part_size = mib});
    h.write(data.data(), data.size());
    h.abort();
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.file("user/gone.bin")));
  test::write_file(dir_.file("user/kept.bin"), std::vector<char>(100, 'k'));
  {
    RemoteHandle h(std::make_unique<WebHdfsEndpoint>(url("kept.bin")),
                   RemoteOpenMode::APPEND,
                   {.part_size = mib});
    h.write(data.data(), data.size());
    h.write(data.data(), 10, 4 * mib);  // a hole: close aborts
    KVIKIO_EXPECT_THROW_WITH(h.close(), RemoteIncompleteWriteError, "[3145728, 4194304)");
  }
  EXPECT_EQ(on_disk("kept.bin"), std::vector<char>(100, 'k'));
}

TEST_F(RemoteWriteWebHdfs, DeviceMemoryRoundTrip)
{
  if (kvikio::device_count() == 0) {
    GTEST_SKIP() << "needs a CUDA device (or the stand-in driver)";
  }
  const auto data = test::random_bytes(2 * mib + 3, 24);
  DeviceBuffer device(data.size());
  device.copy_from_host(data.data(), data.size());
  RemoteHandle h(
    std::make_unique<WebHdfsEndpoint>(url("dev.bin")), RemoteOpenMode::WRITE, {.part_size = mib});
  h.write(device.data(), data.size());
  h.close();
  EXPECT_EQ(on_disk("dev.bin"), data);
}

// RemoteHandle against a local HTTP server with Range support and fault injection
// (tests/servers/range_server.py), started and stopped by each test.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <filesystem>
#include <string>
#include <vector>

#include <kvikio/device_memory.hpp>
#include <kvikio/remote_handle.hpp>

#include "core/logger.hpp"
#include "core/task_split.hpp"
#include "device/staging.hpp"
#include "remote/transfer.hpp"
#include "remote_servers.hpp"
#include "test_utils.hpp"

using namespace kvikio;
using kvikio::test::http_get;
using kvikio::test::ScopedEnv;
using kvikio::test::ScopedHttpSettings;
using kvikio::test::ServerProcess;

namespace {

std::size_t count_lines_with(const std::string& text, const std::string& needle)
{
  std::size_t n = 0;
  for (std::size_t pos = text.find(needle); pos != std::string::npos;
       pos             = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

class RemoteHttp : public ::testing::Test {
 protected:
  void SetUp() override
  {
    data_ = test::random_bytes(1'000'003, 7);
    test::write_file(dir_.file("data.bin"), data_);
    server_.emplace("range_server.py",
                    std::vector<std::string>{"--root", dir_.file(""), "--port", "0"},
                    dir_.file("server.log"));
    defaults::set_http_timeout(10);
  }
  void TearDown() override { server_.reset(); }

  std::string url(const std::string& query = "") const
  {
    return server_->base_url() + "/data.bin" + (query.empty() ? "" : "?" + query);
  }
  /// How many requests the server saw for /data.bin.
  std::size_t requests() const
  {
    auto stats            = http_get(server_->base_url() + "/_stats");
    const std::string key = "\"/data.bin\": ";
    auto pos              = stats.find(key);
    return pos == std::string::npos ? 0 : std::stoul(stats.substr(pos + key.size()));
  }

  ScopedHttpSettings settings_;
  test::TempDir dir_;
  std::vector<char> data_;
  std::optional<ServerProcess> server_;
};

void expect_bytes(const std::vector<char>& expected,
                  const std::vector<char>& got,
                  std::size_t offset,
                  std::size_t size)
{
  ASSERT_GE(got.size(), size);
  ASSERT_TRUE(std::equal(got.begin(),
                         got.begin() + static_cast<std::ptrdiff_t>(size),
                         expected.begin() + static_cast<std::ptrdiff_t>(offset)))
    << "mismatch reading " << size << " bytes at " << offset;
}

}  // namespace

TEST_F(RemoteHttp, OpenInfersHttpAndReadsOddRangesByteForByte)
{
  auto h = RemoteHandle::open(url());
  EXPECT_EQ(h.remote_endpoint_type(), RemoteEndpointType::HTTP);
  ASSERT_EQ(h.nbytes(), data_.size());
  std::vector<char> buf(data_.size());
  EXPECT_EQ(h.read(buf.data(), buf.size()), data_.size());
  expect_bytes(data_, buf, 0, data_.size());
  for (auto [off, size] : std::vector<std::pair<std::size_t, std::size_t>>{
         {1, 1}, {4095, 4097}, {12345, 77777}, {data_.size() - 3, 3}, {999'000, 1003}}) {
    std::vector<char> part(size);
    EXPECT_EQ(h.read(part.data(), size, off), size);
    expect_bytes(data_, part, off, size);
  }
}

TEST_F(RemoteHttp, PreadSplitsIntoParallelRangeRequests)
{
  defaults::set_num_threads(4);
  auto h                = RemoteHandle::open(url());
  const std::size_t off = 333, size = data_.size() - 333 - 17;
  std::vector<char> buf(size);
  auto before = requests();
  auto fut    = h.pread(buf.data(), size, off, 65'537);
  EXPECT_EQ(fut.get(), size);
  expect_bytes(data_, buf, off, size);
  // One request per task: ceil(size / task_size) pieces, give or take page alignment.
  EXPECT_GE(requests() - before, size / 65'537);
  EXPECT_LE(requests() - before, size / (65'537 - 4096) + 2);
}

TEST_F(RemoteHttp, ReadIssuesOneBoundedRequestPerTaskSizePiece)
{
  test::ScopedSettings restore;
  defaults::set_task_size(100'000);
  auto h = RemoteHandle::open(url(), RemoteEndpointType::AUTO, std::nullopt, data_.size());
  std::vector<char> buf(data_.size() - 1);
  EXPECT_EQ(h.read(buf.data(), buf.size(), 1), buf.size());
  expect_bytes(data_, buf, 1, buf.size());
  EXPECT_EQ(requests(), detail::split_into_tasks(buf.size(), 1, 100'000).size());
  EXPECT_GE(requests(), 10U);
}

TEST_F(RemoteHttp, KnownSizeAndZeroByteReadsSendNoRequest)
{
  auto h = RemoteHandle::open(url(), RemoteEndpointType::AUTO, std::nullopt, data_.size());
  EXPECT_EQ(h.nbytes(), data_.size());
  char c = 0;
  EXPECT_EQ(h.read(&c, 0, 5), 0U);
  EXPECT_EQ(h.read(nullptr, 0, data_.size()), 0U);
  EXPECT_EQ(h.pread(&c, 0, 5).get(), 0U);
  EXPECT_EQ(requests(), 0U);
  EXPECT_EQ(h.read(&c, 1, 5), 1U);
  EXPECT_EQ(c, data_[5]);
  EXPECT_EQ(requests(), 1U);
}

TEST_F(RemoteHttp, ReadPastEndIsEndOfFileErrorWithoutRequest)
{
  auto h      = RemoteHandle::open(url());
  auto before = requests();
  std::vector<char> buf(100);
  try {
    h.read(buf.data(), 100, data_.size() - 50);
    FAIL() << "expected EndOfFileError";
  } catch (const EndOfFileError& e) {
    EXPECT_NE(std::string(e.what()).find(url()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(data_.size())), std::string::npos);
  }
  EXPECT_THROW(h.pread(buf.data(), 1, data_.size()), EndOfFileError);
  EXPECT_EQ(requests(), before);
}

TEST_F(RemoteHttp, ReadPastTheRealEndWithAWrongKnownSizeIs416)
{
  // The caller claimed a larger size than the object has: the server refuses the range.
  auto h = RemoteHandle::open(url(), RemoteEndpointType::HTTP, std::nullopt, data_.size() + 100);
  std::vector<char> buf(50);
  try {
    h.read(buf.data(), buf.size(), data_.size() + 10);
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    EXPECT_EQ(e.http_status(), 416);
    EXPECT_NE(std::string(e.what()).find("HTTP status 416"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(url()), std::string::npos) << e.what();
  }
  // Straddling the real end: the body is shorter than the range asked for.
  EXPECT_THROW(h.read(buf.data(), buf.size(), data_.size() - 10), RemoteTruncatedError);
}

TEST_F(RemoteHttp, RedirectsAreFollowedForSizeAndRanges)
{
  for (const char* code : {"301", "302", "307"}) {
    SCOPED_TRACE(code);
    auto h = RemoteHandle::open(url(std::string("redirect=") + code));
    ASSERT_EQ(h.nbytes(), data_.size());
    std::vector<char> buf(33'333);
    EXPECT_EQ(h.read(buf.data(), buf.size(), 4321), buf.size());
    expect_bytes(data_, buf, 4321, buf.size());
  }
}

TEST_F(RemoteHttp, ServerRefusingHeadGivesSizeThroughOneByteGet)
{
  auto h = RemoteHandle::open(url("nohead=1"));
  ASSERT_EQ(h.nbytes(), data_.size());
  std::vector<char> buf(1000);
  EXPECT_EQ(h.read(buf.data(), buf.size(), data_.size() - 1000), buf.size());
  expect_bytes(data_, buf, data_.size() - 1000, buf.size());
  EXPECT_EQ(requests(), 2U);  // GETs: the one-byte range for the size, then the read
}

TEST_F(RemoteHttp, MissingObjectIs404NamingUrl)
{
  auto missing = server_->base_url() + "/nope.bin";
  try {
    RemoteHandle::open(missing);
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    EXPECT_EQ(e.http_status(), 404);
    EXPECT_EQ(e.url(), missing);
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("HTTP status 404"), std::string::npos) << e.what();
    // Issue 24: libcurl's words, which upstream's callers match; not a retry that ran out.
    EXPECT_NE(std::string(e.what()).find("URL returned error: 404"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("maximum number of attempts"), std::string::npos)
      << e.what();
  }
}

TEST_F(RemoteHttp, ForbiddenIs403AndNotRetried)
{
  defaults::set_http_max_attempts(3);
  auto h =
    RemoteHandle::open(url("fail=403"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(10);
  try {
    h.read(buf.data(), 10, 0);
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    EXPECT_EQ(e.http_status(), 403);
    EXPECT_NE(std::string(e.what()).find("HTTP status 403"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(url("fail=403")), std::string::npos) << e.what();
  }
  EXPECT_EQ(requests(), 1U);
}

TEST_F(RemoteHttp, ListedStatusIsRetriedWithBackoffThenSucceeds)
{
  defaults::set_http_max_attempts(3);
  auto h = RemoteHandle::open(url(), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(5000);
  testing::internal::CaptureStderr();
  EXPECT_EQ(h.read(buf.data(), 5000, 77), 5000U);
  std::string err = testing::internal::GetCapturedStderr();
  expect_bytes(data_, buf, 77, 5000);
  EXPECT_EQ(count_lines_with(err, "retrying"), 0U);

  auto flaky = RemoteHandle::open(
    url("fail=503&count=2&fid=a"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  testing::internal::CaptureStderr();
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(flaky.read(buf.data(), 5000, 1234), 5000U);
  auto waited = std::chrono::steady_clock::now() - t0;
  err         = testing::internal::GetCapturedStderr();
  expect_bytes(data_, buf, 1234, 5000);
  EXPECT_EQ(count_lines_with(err, "retrying"), 2U) << err;
  EXPECT_EQ(count_lines_with(err, "HTTP status 503"), 2U) << err;
  EXPECT_GE(waited, std::chrono::milliseconds(200 + 400));  // exponential back-off
}

// The retry lines go through the library's log: to KVIKIO_LOG_FILE when it is set (not to
// stderr), at level warn, so KVIKIO_LOG_LEVEL=error silences them.
TEST_F(RemoteHttp, RetryLinesGoToTheLogFile)
{
  defaults::set_http_max_attempts(3);
  const auto log_path = dir_.file("kvikio.log");
  ::setenv("KVIKIO_LOG_FILE", log_path.c_str(), 1);
  detail::reload_log_from_environment();
  std::vector<char> buf(5000);
  auto flaky = RemoteHandle::open(
    url("fail=503&count=2&fid=log"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  testing::internal::CaptureStderr();
  std::size_t n = 0;
  EXPECT_NO_THROW(n = flaky.read(buf.data(), 5000, 99));
  auto err = testing::internal::GetCapturedStderr();
  detail::set_log_level(detail::LogLevel::error);
  auto quiet = RemoteHandle::open(
    url("fail=503&count=1&fid=quiet"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  EXPECT_NO_THROW(quiet.read(buf.data(), 10, 0));
  ::unsetenv("KVIKIO_LOG_FILE");
  detail::reload_log_from_environment();  // back to stderr, level warn
  EXPECT_EQ(n, 5000U);
  EXPECT_EQ(count_lines_with(err, "retrying"), 0U) << err;
  std::ifstream f(log_path);
  std::string log{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  EXPECT_EQ(count_lines_with(log, "retrying"), 2U) << log;
  EXPECT_EQ(count_lines_with(log, "[kvikio] [warning]"), 2U) << log;
  EXPECT_EQ(count_lines_with(log, "HTTP status 503"), 2U) << log;
  EXPECT_NE(log.find("fid=log"), std::string::npos) << log;
  EXPECT_EQ(log.find("fid=quiet"), std::string::npos) << log;
}

// KVIKIO_REMOTE_VERBOSE turns on libcurl's trace (CURLOPT_VERBOSE) of each request.
TEST_F(RemoteHttp, RemoteVerbosePrintsLibcurlsTrace)
{
  auto h = RemoteHandle::open(url(), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(100);
  testing::internal::CaptureStderr();
  EXPECT_EQ(h.read(buf.data(), 100, 5), 100U);
  auto quiet = testing::internal::GetCapturedStderr();
  EXPECT_EQ(quiet.find("> GET /data.bin"), std::string::npos) << quiet;
  defaults::set_remote_verbose(true);
  testing::internal::CaptureStderr();
  std::size_t n = 0;
  try {
    n = h.read(buf.data(), 100, 5);
  } catch (...) {
    defaults::set_remote_verbose(false);
    testing::internal::GetCapturedStderr();
    throw;
  }
  defaults::set_remote_verbose(false);
  auto verbose = testing::internal::GetCapturedStderr();
  EXPECT_EQ(n, 100U);
  expect_bytes(data_, buf, 5, 100);
  EXPECT_NE(verbose.find("> GET /data.bin"), std::string::npos) << verbose;
  EXPECT_NE(verbose.find("Range: bytes=5-104"), std::string::npos) << verbose;
}

TEST_F(RemoteHttp, ListedStatusFailsAfterMaxAttempts)
{
  defaults::set_http_max_attempts(2);
  auto h =
    RemoteHandle::open(url("fail=503"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(10);
  testing::internal::CaptureStderr();
  try {
    h.read(buf.data(), 10, 0);
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    EXPECT_EQ(e.http_status(), 503);
    EXPECT_NE(std::string(e.what()).find("after 2 attempts"), std::string::npos) << e.what();
    // Issue 24: upstream's words, which its callers match.
    EXPECT_NE(std::string(e.what()).find(
                "KvikIO: HTTP request reached maximum number of attempts (2). Got HTTP code 503"),
              std::string::npos)
      << e.what();
  }
  auto err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_lines_with(err, "retrying"), 1U) << err;
  EXPECT_EQ(requests(), 2U);
}

TEST_F(RemoteHttp, StatusNotInListFailsAtOnce)
{
  defaults::set_http_max_attempts(5);
  defaults::set_http_status_codes({500});
  auto h =
    RemoteHandle::open(url("fail=503"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(10);
  EXPECT_THROW(h.read(buf.data(), 10, 0), RemoteHttpError);
  EXPECT_EQ(requests(), 1U);
}

TEST_F(RemoteHttp, TimeoutIsRetriedThenSucceeds)
{
  defaults::set_http_timeout(1);
  defaults::set_http_max_attempts(2);
  auto h = RemoteHandle::open(
    url("delay=2.5&count=1&fid=t"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(100'000);
  testing::internal::CaptureStderr();
  EXPECT_EQ(h.read(buf.data(), buf.size(), 10), buf.size());
  auto err = testing::internal::GetCapturedStderr();
  expect_bytes(data_, buf, 10, buf.size());
  EXPECT_EQ(count_lines_with(err, "retrying"), 1U) << err;
}

TEST_F(RemoteHttp, TimeoutOnEveryAttemptIsRemoteTimeoutError)
{
  defaults::set_http_timeout(1);
  defaults::set_http_max_attempts(2);
  auto h = RemoteHandle::open(url("delay=3"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(10);
  testing::internal::CaptureStderr();
  try {
    h.read(buf.data(), 10, 0);
    FAIL() << "expected RemoteTimeoutError";
  } catch (const RemoteTimeoutError& e) {
    EXPECT_EQ(e.http_status(), 0);
    EXPECT_NE(std::string(e.what()).find("HTTP status 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(url("delay=3")), std::string::npos) << e.what();
  }
  testing::internal::GetCapturedStderr();
}

TEST_F(RemoteHttp, DroppedConnectionIsRetried)
{
  defaults::set_http_max_attempts(3);
  auto h = RemoteHandle::open(
    url("drop=1&count=2&fid=d"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(4321);
  testing::internal::CaptureStderr();
  EXPECT_EQ(h.read(buf.data(), buf.size(), 99), buf.size());
  auto err = testing::internal::GetCapturedStderr();
  expect_bytes(data_, buf, 99, buf.size());
  EXPECT_EQ(count_lines_with(err, "retrying"), 2U) << err;

  defaults::set_http_max_attempts(1);
  auto dead =
    RemoteHandle::open(url("drop=1"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  try {
    dead.read(buf.data(), 10, 0);
    FAIL() << "expected RemoteTransportError";
  } catch (const RemoteTransportError& e) {
    EXPECT_EQ(e.http_status(), 0);
    EXPECT_NE(std::string(e.what()).find(url("drop=1")), std::string::npos) << e.what();
  }
}

TEST_F(RemoteHttp, TruncatedBodyIsResumedFromWhereItStopped)
{
  defaults::set_http_max_attempts(3);
  auto h = RemoteHandle::open(
    url("truncate=100000&count=1&fid=r"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(700'001);
  auto before = requests();
  testing::internal::CaptureStderr();
  EXPECT_EQ(h.read(buf.data(), buf.size(), 3), buf.size());
  auto err = testing::internal::GetCapturedStderr();
  expect_bytes(data_, buf, 3, buf.size());
  EXPECT_EQ(count_lines_with(err, "retrying"), 1U) << err;
  // The retry asked only for what was missing.
  EXPECT_NE(err.find("bytes=100003-700003"), std::string::npos) << err;
  EXPECT_EQ(requests() - before, 2U);
}

TEST_F(RemoteHttp, BodyShorterThanPromisedOnEveryAttemptIsTruncatedError)
{
  defaults::set_http_max_attempts(2);
  auto h =
    RemoteHandle::open(url("truncate=10"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(5000);
  testing::internal::CaptureStderr();
  try {
    h.read(buf.data(), buf.size(), 0);
    FAIL() << "expected RemoteTruncatedError";
  } catch (const RemoteTruncatedError& e) {
    EXPECT_EQ(e.http_status(), 206);
    EXPECT_NE(std::string(e.what()).find("HTTP status 206"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(url("truncate=10")), std::string::npos) << e.what();
  }
  testing::internal::GetCapturedStderr();
}

TEST_F(RemoteHttp, CompleteButShortResponseIsTruncatedError)
{
  auto h =
    RemoteHandle::open(url("shortrange=10"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(5000);
  try {
    h.read(buf.data(), buf.size(), 1);
    FAIL() << "expected RemoteTruncatedError";
  } catch (const RemoteTruncatedError& e) {
    EXPECT_EQ(e.http_status(), 206);
    EXPECT_NE(std::string(e.what()).find("after 10 bytes"), std::string::npos) << e.what();
  }
  EXPECT_EQ(requests(), 1U);
}

TEST_F(RemoteHttp, ServerIgnoringRangeIsRangeError)
{
  auto h =
    RemoteHandle::open(url("norange=1"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(5000);
  try {
    h.read(buf.data(), buf.size(), 10);
    FAIL() << "expected RemoteRangeError";
  } catch (const RemoteRangeError& e) {
    EXPECT_EQ(e.http_status(), 200);
    EXPECT_NE(std::string(e.what()).find("ignored the Range header"), std::string::npos)
      << e.what();
    EXPECT_NE(std::string(e.what()).find(url("norange=1")), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("maybe the server doesn't support file ranges?"),
              std::string::npos)
      << e.what();
  }
  // Issue 24: from offset 0 too (as upstream): the whole-object answer is more than asked for.
  std::fill(buf.begin(), buf.end(), 0);
  try {
    h.read(buf.data(), buf.size(), 0);
    FAIL() << "expected RemoteRangeError";
  } catch (const RemoteRangeError& e) {
    EXPECT_EQ(e.http_status(), 200);
    EXPECT_NE(std::string(e.what()).find("more than the 5000 bytes asked for"), std::string::npos)
      << e.what();
    EXPECT_NE(std::string(e.what()).find("maybe the server doesn't support file ranges?"),
              std::string::npos)
      << e.what();
  }
  // The whole object is what such a server sends: reading all of it works.
  std::vector<char> whole(data_.size());
  EXPECT_EQ(h.read(whole.data(), whole.size(), 0), whole.size());
  expect_bytes(data_, whole, 0, whole.size());
}

TEST_F(RemoteHttp, PreadRethrowsTheFirstTaskError)
{
  defaults::set_num_threads(3);
  auto h =
    RemoteHandle::open(url("fail=404"), RemoteEndpointType::HTTP, std::nullopt, data_.size());
  std::vector<char> buf(data_.size());
  auto fut = h.pread(buf.data(), buf.size(), 0, 100'000);
  try {
    fut.get();
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    EXPECT_EQ(e.http_status(), 404);
  }
}

TEST_F(RemoteHttp, ConnectionRefusedFailsAtOnceWithTransportError)
{
  defaults::set_http_max_attempts(3);
  // A port that was just free: bind, read its number, close.
  std::string dead_url;
  {
    ServerProcess tmp("range_server.py", {"--root", dir_.file(""), "--port", "0"});
    dead_url = tmp.base_url() + "/data.bin";
  }
  testing::internal::CaptureStderr();
  auto t0 = std::chrono::steady_clock::now();
  try {
    RemoteHandle::open(dead_url);
    FAIL() << "expected RemoteTransportError";
  } catch (const RemoteTransportError& e) {
    EXPECT_EQ(e.http_status(), 0);
    EXPECT_NE(std::string(e.what()).find(dead_url), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("after 1 attempt"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(count_lines_with(testing::internal::GetCapturedStderr(), "retrying"), 0U);
}

TEST_F(RemoteHttp, BadSchemeIsInvalidArgumentNamingUrl)
{
  for (std::string bad : {"ftp://127.0.0.1/data.bin", "file:///etc/passwd", "data.bin", ""}) {
    try {
      RemoteHandle::open(bad);
      FAIL() << "expected std::invalid_argument for " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("'" + bad + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(HttpEndpoint("ftp://127.0.0.1/x"), std::invalid_argument);
}

TEST_F(RemoteHttp, SecretsInUrlNeverAppearInErrors)
{
  const std::string secret = "wJalrXUtnFEMIK7MDENGbPxRfiCYSECRETKEY";
  auto bad_url             = server_->base_url() +
                 "/data.bin?fail=403&X-Amz-Algorithm=AWS4-HMAC-SHA256"
                 "&X-Amz-Credential=AKIDSECRETID%2F20240101&X-Amz-Signature=" +
                 secret + "&X-Amz-Security-Token=TOKENSECRET";
  EXPECT_EQ(infer_remote_endpoint_type(bad_url), RemoteEndpointType::S3_PRESIGNED_URL);
  try {
    RemoteHandle::open(bad_url);
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.http_status(), 403);
    EXPECT_EQ(what.find(secret), std::string::npos) << what;
    EXPECT_EQ(what.find("AKIDSECRETID"), std::string::npos) << what;
    EXPECT_EQ(what.find("TOKENSECRET"), std::string::npos) << what;
    EXPECT_EQ(e.url().find(secret), std::string::npos);
    EXPECT_NE(what.find(server_->base_url() + "/data.bin?fail=403"), std::string::npos) << what;
  }
  auto userinfo_url =
    "http://alice:hunter2@127.0.0.1:" + std::to_string(server_->port()) + "/missing.bin";
  try {
    RemoteHandle::open(userinfo_url);
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    EXPECT_EQ(std::string(e.what()).find("hunter2"), std::string::npos) << e.what();
    EXPECT_EQ(e.http_status(), 404);
  }
}

// ------------------------------------------------------------------------------------ HTTPS

namespace {

class RemoteHttps : public ::testing::Test {
 protected:
  void SetUp() override
  {
    data_ = test::random_bytes(123'457, 5);
    test::write_file(dir_.file("data.bin"), data_);
    std::filesystem::create_directories(dir_.file("certs"));
    cert_ = dir_.file("certs/server.pem");
    auto cmd =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1"
      " -addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout " +
      dir_.file("key.pem") + " -out " + cert_ + " >" + dir_.file("openssl.log") + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << "openssl failed: " << cmd;
    auto rehash =
      "openssl rehash " + dir_.file("certs") + " >>" + dir_.file("openssl.log") + " 2>&1";
    ASSERT_EQ(std::system(rehash.c_str()), 0) << rehash;
    server_.emplace("range_server.py",
                    std::vector<std::string>{"--root",
                                             dir_.file(""),
                                             "--port",
                                             "0",
                                             "--tls-cert",
                                             cert_,
                                             "--tls-key",
                                             dir_.file("key.pem")},
                    dir_.file("server.log"));
    url_ = "https://127.0.0.1:" + std::to_string(server_->port()) + "/data.bin";
    defaults::set_http_timeout(10);
  }
  void expect_round_trip()
  {
    auto h = RemoteHandle::open(url_);
    ASSERT_EQ(h.nbytes(), data_.size());
    std::vector<char> buf(data_.size() - 1);
    EXPECT_EQ(h.pread(buf.data(), buf.size(), 1, 40'000).get(), buf.size());
    EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data_.begin() + 1));
  }

  ScopedEnv e1_{"CURL_CA_BUNDLE", std::nullopt};
  ScopedEnv e2_{"SSL_CERT_FILE", std::nullopt};
  ScopedEnv e3_{"SSL_CERT_DIR", std::nullopt};
  ScopedHttpSettings settings_;
  test::TempDir dir_;
  std::vector<char> data_;
  std::string cert_, url_;
  std::optional<ServerProcess> server_;
};

}  // namespace

TEST_F(RemoteHttps, UntrustedCertificateIsRefusedByDefault)
{
  try {
    RemoteHandle::open(url_);
    FAIL() << "expected RemoteTransportError";
  } catch (const RemoteTransportError& e) {
    EXPECT_EQ(e.http_status(), 0);
    EXPECT_NE(std::string(e.what()).find(url_), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("certificate"), std::string::npos) << e.what();
  }
}

TEST_F(RemoteHttps, CaBundleFromCurlCaBundle)
{
  ScopedEnv e("CURL_CA_BUNDLE", cert_);
  expect_round_trip();
}

TEST_F(RemoteHttps, CaBundleFromSslCertFile)
{
  ScopedEnv e("SSL_CERT_FILE", cert_);
  expect_round_trip();
}

TEST_F(RemoteHttps, CaDirectoryFromSslCertDir)
{
  ScopedEnv e("SSL_CERT_DIR", dir_.file("certs"));
  expect_round_trip();
}

TEST_F(RemoteHttp, RangeStagedThroughTwoBuffersSurvivesAResume)
{
  // The path device reads will take: fetch_range into a StagingSink, here with host memory
  // standing in for the device and a truncated first response forcing a resume.
  defaults::set_http_max_attempts(2);
  HttpEndpoint endpoint(url("truncate=300000&count=1&fid=s"));
  std::vector<char> dest(900'000), b0(65'536), b1(65'536);
  int flushes = 0;
  detail::StagingSink sink(
    b0.data(),
    b1.data(),
    b0.size(),
    [&](const char* p, std::size_t n, std::size_t off) {
      std::memcpy(dest.data() + off, p, n);
      ++flushes;
    },
    [] {});
  testing::internal::CaptureStderr();
  EXPECT_EQ(detail::fetch_range(endpoint, 55, dest.size(), std::ref(sink)), dest.size());
  auto err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(sink.finish(), dest.size());
  expect_bytes(data_, dest, 55, dest.size());
  EXPECT_EQ(flushes, static_cast<int>((dest.size() + 65'535) / 65'536));
  EXPECT_EQ(count_lines_with(err, "retrying"), 1U) << err;
}

TEST_F(RemoteHttp, EveryFailureKindKeepsSecretsOutOfItsMessage)
{
  defaults::set_http_max_attempts(1);
  defaults::set_http_timeout(1);
  const std::string secrets =
    "&X-Amz-Credential=AKIDLEAK&X-Amz-Signature=SIGLEAK"
    "&X-Amz-Security-Token=TOKLEAK";
  struct Case {
    std::string fault;
    long status;
    std::function<void(RemoteHandle&)> check;
  };
  auto read_at = [](std::size_t off) {
    return [off](RemoteHandle& h) {
      std::vector<char> buf(2000);
      h.read(buf.data(), buf.size(), off);
    };
  };
  const std::vector<Case> cases = {
    {"fail=404", 404, read_at(0)},
    {"fail=403", 403, read_at(0)},
    {"fail=503", 503, read_at(0)},
    {"norange=1", 200, read_at(10)},
    {"truncate=10", 206, read_at(0)},
    {"shortrange=10", 206, read_at(0)},
    {"delay=2", 0, read_at(0)},
    {"drop=1", 0, read_at(0)},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fault);
    auto u = server_->base_url() + "/data.bin?" + c.fault + secrets;
    auto h = RemoteHandle::open(u, RemoteEndpointType::HTTP, std::nullopt, data_.size());
    try {
      c.check(h);
      ADD_FAILURE() << "expected a RemoteError";
    } catch (const RemoteError& e) {
      std::string what = e.what();
      EXPECT_EQ(e.http_status(), c.status) << what;
      EXPECT_NE(what.find("HTTP status " + std::to_string(c.status)), std::string::npos) << what;
      EXPECT_NE(what.find(server_->base_url() + "/data.bin?" + c.fault), std::string::npos) << what;
      for (const char* leak : {"AKIDLEAK", "SIGLEAK", "TOKLEAK"}) {
        EXPECT_EQ(what.find(leak), std::string::npos) << what;
        EXPECT_EQ(e.url().find(leak), std::string::npos) << e.url();
      }
    }
  }
}

// Device memory: through the stand-in driver in CI (ctest remote.device_standin), through
// the real one on the GPU machine. Skipped, with the reason, where there is no device.
TEST_F(RemoteHttp, ReadsIntoDeviceMemoryThroughTheBounceBufferByteForByte)
{
  if (kvikio::device_count() == 0) {
    GTEST_SKIP() << "needs a CUDA device (or the stand-in driver)";
  }
  test::ScopedSettings restore;
  defaults::set_num_threads(4);
  defaults::set_bounce_buffer_size(64 * 1024);  // many rounds through both halves
  auto h                   = RemoteHandle::open(url());
  const std::size_t guard  = 4096;
  const std::size_t offset = 12345;
  const std::size_t size   = data_.size() - offset - 11;
  DeviceBuffer device(size + 2 * guard);
  const std::vector<char> poison(device.size(), '\x5a');
  device.copy_from_host(poison.data(), poison.size());
  auto* dst = static_cast<char*>(device.data()) + guard;

  EXPECT_EQ(h.pread(dst, size, offset, 100'000).get(), size);
  std::vector<char> got(device.size());
  device.copy_to_host(got.data(), got.size());
  ASSERT_TRUE(std::equal(got.begin() + guard, got.begin() + guard + size, data_.begin() + offset));
  EXPECT_TRUE(std::all_of(got.begin(), got.begin() + guard, [](char c) { return c == '\x5a'; }));
  EXPECT_TRUE(std::all_of(got.end() - guard, got.end(), [](char c) { return c == '\x5a'; }));

  device.copy_from_host(poison.data(), poison.size());
  EXPECT_EQ(h.read(dst, 70'001, 4095), 70'001U);
  device.copy_to_host(got.data(), got.size());
  ASSERT_TRUE(std::equal(got.begin() + guard, got.begin() + guard + 70'001, data_.begin() + 4095));
  EXPECT_EQ(got[guard + 70'001], '\x5a');
}

TEST_F(RemoteHttp, DeviceRangePastItsAllocationIsRejectedBeforeAnyRequest)
{
  if (kvikio::device_count() == 0) {
    GTEST_SKIP() << "needs a CUDA device (or the stand-in driver)";
  }
  auto h = RemoteHandle::open(url());
  DeviceBuffer device(1000);
  const auto before = requests();
  KVIKIO_EXPECT_THROW_WITH(h.read(device.data(), 1001, 0), std::out_of_range, "1001");
  KVIKIO_EXPECT_THROW_WITH(
    h.pread(static_cast<char*>(device.data()) + 10, 995, 0), std::out_of_range, "data.bin");
  EXPECT_EQ(requests(), before);
}

// ------------------------------------------------------------------ reliability audit fixes

namespace {

/// Replaces `path` atomically (a new inode, so a new ETag on the range server).
void replace_file(const std::string& path, const std::vector<char>& data)
{
  test::write_file(path + ".new", data);
  std::filesystem::rename(path + ".new", path);
}

}  // namespace

// Audit #11: each range was a separate GET with nothing tying it to the size request's
// version, so a file replaced during a read was stitched from both versions.
TEST_F(RemoteHttp, FileReplacedDuringAReadIsObjectChangedErrorThroughIfMatch)
{
  defaults::set_num_threads(4);
  auto h = RemoteHandle::open(url());
  std::vector<char> buf(data_.size());
  EXPECT_EQ(h.pread(buf.data(), buf.size(), 0, 100'000).get(), buf.size());  // If-Match sent
  expect_bytes(data_, buf, 0, buf.size());
  auto other = test::random_bytes(data_.size(), 8);  // same size: only the ETag tells
  replace_file(dir_.file("data.bin"), other);
  for (std::size_t offset : {std::size_t{0}, std::size_t{5000}}) {
    try {
      h.read(buf.data(), 1000, offset);
      FAIL() << "expected RemoteObjectChangedError";
    } catch (const RemoteObjectChangedError& e) {
      std::string what = e.what();
      EXPECT_EQ(e.http_status(), 412) << what;
      EXPECT_NE(what.find("the object changed during the read"), std::string::npos) << what;
      EXPECT_NE(what.find(url()), std::string::npos) << what;
      EXPECT_NE(what.find("bytes=" + std::to_string(offset) + "-"), std::string::npos) << what;
    }
  }
  EXPECT_THROW(h.pread(buf.data(), buf.size(), 0, 100'000).get(), RemoteObjectChangedError);
  // A new handle pins the new version.
  auto h2 = RemoteHandle::open(url());
  EXPECT_EQ(h2.read(buf.data(), buf.size()), buf.size());
  expect_bytes(other, buf, 0, buf.size());
}

// Audit #11, servers without ETags: a Content-Range total other than the size read at open
// means another version.
TEST_F(RemoteHttp, ContentRangeTotalOtherThanTheSizeIsObjectChangedError)
{
  auto h = RemoteHandle::open(url("noetag=1"));
  ASSERT_EQ(h.nbytes(), data_.size());
  std::vector<char> buf(1000);
  EXPECT_EQ(h.read(buf.data(), buf.size(), 7), buf.size());
  auto longer = test::random_bytes(data_.size() + 10, 9);
  replace_file(dir_.file("data.bin"), longer);
  try {
    h.read(buf.data(), buf.size(), 7);
    FAIL() << "expected RemoteObjectChangedError";
  } catch (const RemoteObjectChangedError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.http_status(), 206) << what;
    EXPECT_NE(what.find("is now " + std::to_string(longer.size()) + " bytes long"),
              std::string::npos)
      << what;
    EXPECT_NE(what.find("not the " + std::to_string(data_.size()) + " bytes"), std::string::npos)
      << what;
  }
}

// Audit #16: the one-byte probe kept accepting (and dropping) the body of a server that
// ignores Range, so it downloaded the whole object, then failed without a useful reason.
TEST_F(RemoteHttp, SizeProbeStopsAtTheBodyCapOnAServerIgnoringRange)
{
  defaults::set_http_max_attempts(3);
  test::write_file(dir_.file("big.bin"), test::random_bytes(8 << 20, 4));
  const auto big = server_->base_url() + "/big.bin?nohead=1&norange=1";
  try {
    RemoteHandle::open(big);
    FAIL() << "expected RemoteRangeError";
  } catch (const RemoteRangeError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.http_status(), 200) << what;
    EXPECT_NE(what.find("GET bytes=0-0 of " + big), std::string::npos) << what;
    EXPECT_NE(what.find("ignored the Range header"), std::string::npos) << what;
    EXPECT_NE(what.find("more than 1 MiB"), std::string::npos) << what;
  }
  // One GET (the server counts no HEAD it refuses): no retry.
  auto stats = http_get(server_->base_url() + "/_stats");
  EXPECT_NE(stats.find("\"/big.bin\": 1}"), std::string::npos) << stats;
}

TEST_F(RemoteHttp, RedirectsToOtherProtocolsThanHttpAreRefused)
{
  // Audit #7: libcurl's default would follow http -> ftp.
  try {
    RemoteHandle::open(url("redirect=302&location=ftp://127.0.0.1:1/data.bin"));
    FAIL() << "expected RemoteTransportError";
  } catch (const RemoteTransportError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("(curl error " + std::to_string(CURLE_UNSUPPORTED_PROTOCOL) + ")"),
              std::string::npos)
      << what;
  }
}

TEST_F(RemoteHttps, RedirectFromHttpsToPlainHttpIsRefused)
{
  // Audit #7: an https URL must not continue in clear text.
  ScopedEnv ca("CURL_CA_BUNDLE", cert_);
  ServerProcess plain("range_server.py",
                      std::vector<std::string>{"--root", dir_.file(""), "--port", "0"},
                      dir_.file("plain.log"));
  const auto to_http = url_ + "?redirect=302&location=" + plain.base_url() + "/data.bin";
  try {
    RemoteHandle::open(to_http);
    FAIL() << "expected RemoteTransportError";
  } catch (const RemoteTransportError& e) {
    std::string what = e.what();
    EXPECT_EQ(e.http_status(), 302) << what;
    EXPECT_NE(what.find("(curl error " + std::to_string(CURLE_UNSUPPORTED_PROTOCOL) + ")"),
              std::string::npos)
      << what;
  }
  // https -> https is followed.
  auto h = RemoteHandle::open(url_ + "?redirect=307");
  ASSERT_EQ(h.nbytes(), data_.size());
}

// Audit #12: the CA variables were read with getenv on pool threads at every attempt (racing
// with setenv elsewhere). They are read once, when the endpoint is made.
TEST_F(RemoteHttps, CaVariablesAreReadWhenTheEndpointIsMade)
{
  defaults::set_num_threads(4);
  std::optional<RemoteHandle> h;
  {
    ScopedEnv e("CURL_CA_BUNDLE", cert_);
    h.emplace(RemoteHandle::open(url_));
  }
  // The variable is gone; the handle's requests still trust the bundle it was made with.
  std::vector<char> buf(data_.size());
  EXPECT_EQ(h->pread(buf.data(), buf.size(), 0, 20'000).get(), buf.size());
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data_.begin()));
  // And a handle made without it does not pick up a later setting.
  RemoteHandle untrusted(std::make_unique<HttpEndpoint>(url_), data_.size());
  ScopedEnv later("CURL_CA_BUNDLE", cert_);
  EXPECT_THROW(untrusted.read(buf.data(), 10), RemoteTransportError);
}

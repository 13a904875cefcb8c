// The benchmark library (tools/bench): the plain loop's bytes and errors, the JSON writer,
// the curl baseline's argument checks and the local server's bytes. Not product code, but
// the numbers `kvikio bench` reports are only as good as these.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <kvikio/remote_handle.hpp>

#include "curl_baseline.hpp"
#include "local_server.hpp"
#include "plain_io.hpp"
#include "report.hpp"
#include "test_utils.hpp"
#include "timing.hpp"

using namespace kvikio;

TEST(BenchPlainIo, WritesThenReadsEveryByteWithUnevenPieces)
{
  test::TempDir dir;
  const auto path = dir.file("plain.bin");
  auto data       = test::random_bytes(1000003);
  test::write_file(path, std::vector<char>(data.size()));
  bench::plain_parallel_io(true, path, 0, data.data(), {data.size(), 65537, 3});
  EXPECT_EQ(test::read_file(path), data);
  std::vector<char> back(data.size(), 'x');
  bench::plain_parallel_io(false, path, 0, back.data(), {data.size(), 4096, 5});
  EXPECT_EQ(back, data);
}

TEST(BenchPlainIo, CopiesReadTheFileAgainIntoTheSameBytes)
{
  test::TempDir dir;
  const auto path = dir.file("copies.bin");
  auto data       = test::random_bytes(300000);
  test::write_file(path, data);
  std::vector<char> back(data.size());
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  bench::plain_parallel_io(false, fd, back.data(), {data.size(), 10000, 4, 3});
  ::close(fd);
  EXPECT_EQ(back, data);
}

TEST(BenchPlainIo, ReadPastTheEndIsAnEioNamingThePath)
{
  test::TempDir dir;
  const auto path = dir.file("short.bin");
  test::write_file(path, test::random_bytes(1000));
  std::vector<char> buf(8192);
  try {
    bench::plain_parallel_io(false, path, 0, buf.data(), {buf.size(), 4096, 2});
    FAIL() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), EIO);
    EXPECT_NE(std::string(e.what()).find("plain parallel pread loop on " + path), std::string::npos)
      << e.what();
  }
}

TEST(BenchPlainIo, BadArgumentsAndMissingFileAreErrors)
{
  char buf[16];
  EXPECT_THROW(bench::plain_parallel_io(false, 0, buf, {16, 0, 1}), std::invalid_argument);
  EXPECT_THROW(bench::plain_parallel_io(false, 0, buf, {16, 4, 0}), std::invalid_argument);
  try {
    bench::plain_parallel_io(false, "/nonexistent/kvikio.bin", 0, buf, {16, 4, 1});
    FAIL() << "no error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/kvikio.bin"), std::string::npos);
  }
}

TEST(BenchJson, EscapesStringsAndKeepsTheLayout)
{
  bench::JsonWriter json;
  json.begin_object()
    .field("file", std::string("a\"b\\c\nd"))
    .field("size", std::size_t{3145739})
    .field("threads", 2U)
    .field("direct_io", false)
    .field("server", std::optional<std::string>{})
    .key("results")
    .begin_array()
    .begin_object()
    .field("op", "read")
    .field("kvikio_gbps", 1.23456)
    .field("ratio", std::numeric_limits<double>::infinity())
    .end_object()
    .begin_object()
    .field("device", -1)
    .end_object()
    .end_array()
    .end_object();
  EXPECT_EQ(json.str(),
            "{\"file\": \"a\\\"b\\\\c\\u000ad\", \"size\": 3145739, \"threads\": 2, "
            "\"direct_io\": false, \"server\": null, \"results\": [{\"op\": \"read\", "
            "\"kvikio_gbps\": 1.235, \"ratio\": null}, {\"device\": -1}]}");
}

TEST(BenchTiming, MedianOfOddAndEvenCounts)
{
  EXPECT_EQ(bench::median({3, 1, 2}), 2);
  EXPECT_EQ(bench::median({4, 1, 3, 2}), 2.5);
}

TEST(BenchCurlBaseline, RejectsBadArguments)
{
  char buf[4];
  EXPECT_EQ(bench::curl_parallel_range_get("http://127.0.0.1:1/x", buf, 0, 0, 1, 1), 0U);
  EXPECT_THROW(bench::curl_parallel_range_get("http://127.0.0.1:1/x", buf, 4, 0, 0, 1),
               std::invalid_argument);
  EXPECT_THROW(bench::curl_parallel_range_get("http://127.0.0.1:1/x", buf, 4, 0, 4, 1),
               std::runtime_error);
}

// The python server runs the range_server.py embedded in the library: no source tree needed.
TEST(BenchLocalServer, PythonServesTheRandomBytesToBothReaders)
{
  const std::size_t size = 1 << 20;
  bench::LocalServer server(size, "python", {});
  EXPECT_EQ(server.kind(), "python (range_server.py)");
  auto handle = RemoteHandle::open(server.url());
  ASSERT_EQ(handle.nbytes(), size);
  std::vector<char> ours(size), theirs(size);
  handle.pread(ours.data(), size, 0, 1 << 18).get();
  bench::curl_parallel_range_get(server.url(), theirs.data(), size, 0, 1 << 18, 3);
  EXPECT_EQ(ours, theirs);
  // The same generator and seed as the server's file.
  std::mt19937_64 rng(2026);
  std::uint64_t first = rng();
  EXPECT_EQ(std::memcmp(ours.data(), &first, 8), 0);
}

TEST(BenchServerProcess, AProgramThatPrintsNoPortIsReportedByName)
{
  try {
    bench::ServerProcess p({"sh", "-c", "echo hello"}, "greeter", "/dev/null", 5000);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "server greeter did not start (see /dev/null); got: hello");
  }
}

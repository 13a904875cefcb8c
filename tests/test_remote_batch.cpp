// RemoteHandle::pread_batch and the MULTI_POLL backend (issues 13 and 14) against the local
// range server (tests/servers/range_server.py): byte-for-byte results for random, overlapping,
// adjacent, zero-size and unsorted ranges on both backends, coalescing, errors in the middle of
// a batch, requests checked before anything is sent, and retries through the reactor.
#include <curl/curl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/device_memory.hpp>
#include <kvikio/remote_handle.hpp>

#include "remote_servers.hpp"
#include "test_utils.hpp"

using namespace kvikio;
using kvikio::test::http_get;
using kvikio::test::ScopedHttpSettings;
using kvikio::test::ServerProcess;

namespace {

/// Restores the remote_io_* settings and task_size.
class ScopedRemoteIo {
 public:
  ScopedRemoteIo()
    : backend_(defaults::remote_io_backend()),
      reactors_(defaults::remote_io_num_reactors()),
      dispatch_(defaults::remote_io_reactor_dispatch()),
      max_(defaults::remote_io_max_concurrent_requests()),
      task_size_(defaults::task_size())
  {
  }
  ~ScopedRemoteIo()
  {
    defaults::set_remote_io_backend(backend_);
    defaults::set_remote_io_num_reactors(reactors_);
    defaults::set_remote_io_reactor_dispatch(dispatch_);
    defaults::set_remote_io_max_concurrent_requests(max_);
    defaults::set_task_size(task_size_);
  }
  ScopedRemoteIo(const ScopedRemoteIo&)            = delete;
  ScopedRemoteIo& operator=(const ScopedRemoteIo&) = delete;

 private:
  RemoteIOBackend backend_;
  unsigned int reactors_;
  RemoteReactorDispatch dispatch_;
  std::size_t max_;
  std::size_t task_size_;
};

struct Range {
  std::size_t offset;
  std::size_t size;
};

class RemoteBatch : public ::testing::TestWithParam<RemoteIOBackend> {
 protected:
  void SetUp() override
  {
    data_ = test::random_bytes(1'500'007, 11);
    test::write_file(dir_.file("data.bin"), data_);
    server_.emplace("range_server.py",
                    std::vector<std::string>{"--root", dir_.file(""), "--port", "0"},
                    dir_.file("server.log"));
    defaults::set_http_timeout(10);
    defaults::set_num_threads(4);
    defaults::set_remote_io_backend(GetParam());
  }
  void TearDown() override { server_.reset(); }

  std::string url(const std::string& query = "") const
  {
    return server_->base_url() + "/data.bin" + (query.empty() ? "" : "?" + query);
  }
  std::size_t requests() const
  {
    auto stats            = http_get(server_->base_url() + "/_stats");
    const std::string key = "\"/data.bin\": ";
    auto pos              = stats.find(key);
    return pos == std::string::npos ? 0 : std::stoul(stats.substr(pos + key.size()));
  }

  /// Reads `ranges` with one pread_batch and checks every buffer byte for byte.
  void check_batch(RemoteHandle& h, const std::vector<Range>& ranges)
  {
    std::vector<std::vector<char>> bufs;
    std::vector<IORequest> reqs;
    std::size_t total = 0;
    for (const auto& r : ranges) {
      bufs.emplace_back(r.size + 1, '\x5a');  // one guard byte past each request
      total += r.size;
    }
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      reqs.push_back({bufs[i].data(), ranges[i].size, ranges[i].offset});
    }
    EXPECT_EQ(h.pread_batch(reqs).get(), total);
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const auto& r = ranges[i];
      ASSERT_TRUE(std::equal(bufs[i].begin(),
                             bufs[i].begin() + static_cast<std::ptrdiff_t>(r.size),
                             data_.begin() + static_cast<std::ptrdiff_t>(r.offset)))
        << "request " << i << ": " << r.size << " bytes at " << r.offset;
      EXPECT_EQ(bufs[i][r.size], '\x5a') << "request " << i << " wrote past its size";
    }
  }

  ScopedHttpSettings http_;
  ScopedRemoteIo remote_io_;
  test::TempDir dir_;
  std::vector<char> data_;
  std::optional<ServerProcess> server_;
};

}  // namespace

TEST_P(RemoteBatch, RandomOverlappingAdjacentZeroSizeUnsortedRangesByteForByte)
{
  defaults::set_task_size(256 << 10);  // so that the large requests below are cut
  auto h = RemoteHandle::open(url());
  std::mt19937_64 rng(5);
  std::vector<Range> ranges;
  const std::size_t n = data_.size();
  for (int i = 0; i < 200; ++i) {  // random: near ones coalesce, far ones do not
    std::size_t off  = rng() % n;
    std::size_t size = std::min<std::size_t>(rng() % 20'000, n - off);
    ranges.push_back({off, size});
  }
  for (std::size_t off = 100'000; off < 160'000; off += 6'000) {  // adjacent
    ranges.push_back({off, 6'000});
  }
  ranges.push_back({200'000, 50'000});  // overlapping, and one inside another
  ranges.push_back({220'000, 50'000});
  ranges.push_back({230'000, 1'000});
  ranges.push_back({0, 0});  // zero-size, also at the end and in the middle
  ranges.push_back({n, 0});
  ranges.push_back({n - 1, 1});
  ranges.push_back({0, 1});
  ranges.push_back({10, 700'000});  // larger than task_size: cut into pieces
  ranges.push_back({0, n});         // the whole object
  std::shuffle(ranges.begin(), ranges.end(), rng);
  check_batch(h, ranges);
  check_batch(h, {});  // empty: ready with 0
}

TEST_P(RemoteBatch, NearRangesShareOneRequestFarOnesDoNot)
{
  auto h = RemoteHandle::open(url());
  // Ten adjacent ranges and ten with 1000-byte gaps, unsorted: one range request.
  std::vector<Range> near;
  for (std::size_t k = 0; k < 10; ++k) {
    near.push_back({50'000 + (9 - k) * 3'000, std::size_t{k % 2 == 0 ? 3000U : 2000U}});
  }
  auto before = requests();
  check_batch(h, near);
  EXPECT_EQ(requests() - before, 1);
  // Gaps larger than remote_coalesce_gap: one request each.
  std::vector<Range> far;
  for (std::size_t k = 0; k < 5; ++k) {
    far.push_back({k * (remote_coalesce_gap + 10'000), 100});
  }
  before = requests();
  check_batch(h, far);
  EXPECT_EQ(requests() - before, 5);
  // Never beyond task_size: 64 adjacent 4 KiB ranges with a 64 KiB task size are 4 requests.
  defaults::set_task_size(64 << 10);
  std::vector<Range> many;
  for (std::size_t k = 0; k < 64; ++k) {
    many.push_back({k * 4096, 4096});
  }
  before = requests();
  check_batch(h, many);
  EXPECT_EQ(requests() - before, 4);
}

TEST_P(RemoteBatch, PreadByteForByte)
{
  auto h = RemoteHandle::open(url());
  std::vector<char> buf(data_.size());
  auto before = requests();
  EXPECT_EQ(h.pread(buf.data(), buf.size() - 5, 5, 100'000).get(), buf.size() - 5);
  EXPECT_TRUE(std::equal(buf.begin(), buf.end() - 5, data_.begin() + 5));
  EXPECT_EQ(requests() - before, (data_.size() - 5 + 99'999) / 100'000);
}

TEST_P(RemoteBatch, ErrorInTheMiddleIsTheLowestIndexAfterEveryRequestFinished)
{
  // The handle believes the object is 1 MB longer: ranges past its real end get 416.
  const std::size_t real = data_.size();
  RemoteHandle h(std::make_unique<HttpEndpoint>(url()), real + 1'000'000);
  std::vector<Range> ranges{{0, 1000},
                            {300'000, 5000},
                            {real + 200'000, 100},  // 2: fails
                            {600'000, 70'000},
                            {real + 500'000, 100},  // 4: fails
                            {real - 10, 10}};
  std::vector<std::vector<char>> bufs;
  std::vector<IORequest> reqs;
  for (const auto& r : ranges) {
    bufs.emplace_back(r.size);
  }
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    reqs.push_back({bufs[i].data(), ranges[i].size, ranges[i].offset});
  }
  auto before = requests();
  auto fut    = h.pread_batch(reqs);
  try {
    fut.get();
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    EXPECT_EQ(e.http_status(), 416);
    const std::string range2 = "bytes=" + std::to_string(real + 200'000) + "-";
    EXPECT_NE(std::string(e.what()).find(range2), std::string::npos) << e.what();
  }
  // Every request finished before the error was reported: the good ones hold their bytes and
  // no request reaches the server later.
  for (std::size_t i : {0, 1, 3, 5}) {
    EXPECT_TRUE(std::equal(bufs[i].begin(),
                           bufs[i].end(),
                           data_.begin() + static_cast<std::ptrdiff_t>(ranges[i].offset)))
      << "request " << i;
  }
  const auto after = requests();
  EXPECT_EQ(after - before, ranges.size());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(requests(), after);
}

TEST_P(RemoteBatch, ServerErrorsReportTheLowestNumberedRequest)
{
  defaults::set_http_max_attempts(1);
  auto h = RemoteHandle::open(url());
  // Every range request fails with 500; request 0 has the highest offset.
  RemoteHandle failing(std::make_unique<HttpEndpoint>(url("fail=500")), data_.size());
  std::vector<char> a(100), b(100), c(100);
  std::vector<IORequest> reqs{
    {a.data(), 100, 900'000}, {b.data(), 100, 10}, {c.data(), 100, 400'000}};
  KVIKIO_EXPECT_THROW_WITH(failing.pread_batch(reqs).get(), RemoteHttpError, "bytes=900000-900099");
  // A missing object: 404 for every request.
  RemoteHandle missing(std::make_unique<HttpEndpoint>(server_->base_url() + "/nothing.bin"),
                       data_.size());
  try {
    missing.pread_batch(reqs).get();
    FAIL() << "expected RemoteHttpError";
  } catch (const RemoteHttpError& e) {
    EXPECT_EQ(e.http_status(), 404);
    EXPECT_NE(std::string(e.what()).find("bytes=900000-900099"), std::string::npos) << e.what();
  }
}

TEST_P(RemoteBatch, RetriesAreThoseOfTheEasyPath)
{
  // Two 503s, then the bytes: three attempts succeed, two do not.
  defaults::set_http_max_attempts(3);
  RemoteHandle h(std::make_unique<HttpEndpoint>(url("fail=503&count=2&fid=r3")), data_.size());
  std::vector<char> buf(1000);
  EXPECT_EQ(h.pread_batch({{buf.data(), 1000, 4242}}).get(), 1000);
  EXPECT_TRUE(std::equal(buf.begin(), buf.end(), data_.begin() + 4242));
  defaults::set_http_max_attempts(2);
  RemoteHandle h2(std::make_unique<HttpEndpoint>(url("fail=503&count=2&fid=r2")), data_.size());
  KVIKIO_EXPECT_THROW_WITH(
    h2.pread_batch({{buf.data(), 1000, 4242}}).get(), RemoteHttpError, "after 2 attempts");
  // A truncated body is resumed after the bytes that arrived.
  defaults::set_http_max_attempts(3);
  RemoteHandle h3(std::make_unique<HttpEndpoint>(url("truncate=300&count=1&fid=t")), data_.size());
  std::vector<char> big(50'000);
  EXPECT_EQ(h3.pread(big.data(), big.size(), 777).get(), big.size());
  EXPECT_TRUE(std::equal(big.begin(), big.end(), data_.begin() + 777));
}

TEST_P(RemoteBatch, BadRequestsAreNamedByIndexAndNothingIsSent)
{
  auto h = RemoteHandle::open(url());
  std::vector<char> buf(100);
  auto before = requests();
  KVIKIO_EXPECT_THROW_WITH(h.pread_batch({{buf.data(), 100, 0},
                                          {buf.data(), 100, 10},
                                          {buf.data(), 100, data_.size() - 99},
                                          {buf.data(), 100, 20}}),
                           EndOfFileError,
                           "batch request 2: ");
  KVIKIO_EXPECT_THROW_WITH(h.pread_batch({{buf.data(), 100, 0}, {nullptr, 100, 10}}),
                           std::invalid_argument,
                           "batch request 1: ");
  // A null buffer of no bytes is no request at all.
  EXPECT_EQ(h.pread_batch({{nullptr, 0, 10}}).get(), 0);
  EXPECT_EQ(requests(), before);
}

TEST_P(RemoteBatch, ManyRangesUnderATightConcurrencyCapAndSeveralReactors)
{
  defaults::set_remote_io_max_concurrent_requests(3);
  defaults::set_remote_io_num_reactors(2);
  for (auto dispatch : {RemoteReactorDispatch::PER_CHUNK, RemoteReactorDispatch::PER_PREAD}) {
    defaults::set_remote_io_reactor_dispatch(dispatch);
    auto h = RemoteHandle::open(url());
    std::vector<Range> ranges;
    for (std::size_t k = 0; k < 40; ++k) {
      ranges.push_back({(k * 97'331) % (data_.size() - 2000), 2000});
    }
    check_batch(h, ranges);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends,
                         RemoteBatch,
                         ::testing::Values(RemoteIOBackend::EASY_THREADPOOL,
                                           RemoteIOBackend::MULTI_POLL),
                         [](const auto& p) {
                           return p.param == RemoteIOBackend::MULTI_POLL ? "MULTI_POLL"
                                                                         : "EASY_THREADPOOL";
                         });

TEST(RemoteIoSettings, NamesValuesAndErrors)
{
  ScopedRemoteIo restore;
  EXPECT_EQ(std::get<std::string>(defaults::get("remote_io_backend")), "EASY_THREADPOOL");
  defaults::set("remote_io_backend", std::string("multi_poll"));  // any case; kept upper case
  EXPECT_EQ(std::get<std::string>(defaults::get("remote_io_backend")), "MULTI_POLL");
  EXPECT_EQ(defaults::remote_io_backend(), RemoteIOBackend::MULTI_POLL);
  defaults::set("remote_io_reactor_dispatch", std::string("PER_PREAD"));
  EXPECT_EQ(defaults::remote_io_reactor_dispatch(), RemoteReactorDispatch::PER_PREAD);
  EXPECT_EQ(defaults::remote_io_num_reactors(), 1U);
  EXPECT_EQ(defaults::remote_io_max_concurrent_requests(), 256U);
  defaults::set("remote_io_max_concurrent_requests", std::int64_t{0});  // 0: unlimited
  EXPECT_EQ(defaults::remote_io_max_concurrent_requests(), 0U);
  KVIKIO_EXPECT_THROW_WITH(defaults::set("remote_io_backend", std::string("poll")),
                           std::invalid_argument,
                           "expected one of EASY_THREADPOOL MULTI_POLL");
  KVIKIO_EXPECT_THROW_WITH(defaults::set("remote_io_num_reactors", std::int64_t{0}),
                           std::invalid_argument,
                           "remote_io_num_reactors");
}

TEST_P(RemoteBatch, MultiPollOverlapsRequestsBeyondThePoolAndKeepsItsCap)
{
  if (GetParam() != RemoteIOBackend::MULTI_POLL) { GTEST_SKIP() << "MULTI_POLL only"; }
  defaults::set_num_threads(1);  // the easy path would then run one request at a time
  RemoteHandle h(std::make_unique<HttpEndpoint>(url("delay=0.4")), data_.size());
  std::vector<std::vector<char>> bufs(8, std::vector<char>(100));
  std::vector<IORequest> reqs;
  for (std::size_t k = 0; k < bufs.size(); ++k) {
    reqs.push_back({bufs[k].data(), 100, k * 150'000});
  }
  auto timed = [&] {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(h.pread_batch(reqs).get(), 800U);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  EXPECT_LT(timed(), 8 * 0.4 / 2);  // all eight at once: about 0.4 s, not 3.2 s
  defaults::set_remote_io_max_concurrent_requests(2);
  EXPECT_GE(timed(), 4 * 0.4 * 0.95);  // two at a time: four rounds
  for (std::size_t k = 0; k < bufs.size(); ++k) {
    EXPECT_TRUE(std::equal(bufs[k].begin(), bufs[k].end(), data_.begin() + k * 150'000));
  }
}

// Device memory: through the stand-in driver in CI (ctest remote_batch.device_standin), through
// the GPU where there is one.
TEST_P(RemoteBatch, MixedHostAndDeviceRequestsByteForByte)
{
  if (kvikio::device_count() == 0) {
    GTEST_SKIP() << "needs a CUDA device (or the stand-in driver)";
  }
  auto h = RemoteHandle::open(url());
  DeviceBuffer device(300'000);
  const std::vector<char> poison(device.size(), '\x5a');
  device.copy_from_host(poison.data(), poison.size());
  auto* d = static_cast<char*>(device.data());
  std::vector<char> host1(5000), host2(7000);
  std::vector<IORequest> reqs{{d + 100, 200'000, 1234},
                              {host1.data(), 5000, 1000},
                              {d + 250'000, 40'000, 999'000},
                              {host2.data(), 7000, 3000}};
  EXPECT_EQ(h.pread_batch(reqs).get(), 252'000U);
  std::vector<char> got(device.size());
  device.copy_to_host(got.data(), got.size());
  EXPECT_TRUE(std::equal(got.begin() + 100, got.begin() + 200'100, data_.begin() + 1234));
  EXPECT_TRUE(std::equal(got.begin() + 250'000, got.begin() + 290'000, data_.begin() + 999'000));
  EXPECT_TRUE(std::all_of(got.begin(), got.begin() + 100, [](char c) { return c == '\x5a'; }));
  EXPECT_TRUE(
    std::all_of(got.begin() + 200'100, got.begin() + 250'000, [](char c) { return c == '\x5a'; }));
  EXPECT_TRUE(std::equal(host1.begin(), host1.end(), data_.begin() + 1000));
  EXPECT_TRUE(std::equal(host2.begin(), host2.end(), data_.begin() + 3000));
  // A device range past its allocation is refused by index before anything is sent.
  const auto before = requests();
  KVIKIO_EXPECT_THROW_WITH(h.pread_batch({{host1.data(), 10, 0}, {d + 299'990, 11, 0}}),
                           std::out_of_range,
                           "batch request 1: ");
  EXPECT_EQ(requests(), before);
}

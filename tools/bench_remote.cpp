// `kvikio bench --remote`. Rounds alternate the limit (plain parallel libcurl range requests,
// bench::curl_parallel_range_get) and RemoteHandle::pread, into host memory, over the same
// bytes of the same URL, so both see the same server, network and page cache. The median of
// each counts; the report is the ratio.
#include "bench_remote.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/remote_handle.hpp>

#include "curl_baseline.hpp"
#include "local_server.hpp"
#include "options.hpp"
#include "report.hpp"
#include "timing.hpp"

namespace kvikio::tool {
namespace {

void progress(const std::string& line) { bench::progress("kvikio bench --remote", line); }

/// The limit needs a URL that plain unsigned range GETs can read: HTTP, public S3 and
/// presigned S3 qualify; signed S3 and WebHDFS (a redirect per range) have no limit here.
bool limit_applies(RemoteEndpointType t)
{
  return t == RemoteEndpointType::HTTP || t == RemoteEndpointType::S3_PUBLIC ||
         t == RemoteEndpointType::S3_PRESIGNED_URL;
}

/// `--pattern random`: o.count ranges of o.io_size bytes at random offsets of the first `size`
/// bytes, read (1) with one pread_batch per remote IO backend, (2) one by one, pread().get()
/// each, and (3) with bare curl multi at each backend's concurrency (the pool's threads for
/// EASY_THREADPOOL, remote_io_max_concurrent_requests for MULTI_POLL); medians and ratios.
int run_random(const RemoteBenchOptions& o,
               RemoteHandle& handle,
               const std::string& raw,
               const std::string& shown,
               std::size_t size,
               bool has_limit)
{
  if (o.io_size == 0 || o.io_size > size) {
    throw std::invalid_argument("--io-size must be between 1 and the object's size");
  }
  std::mt19937_64 rng(12345);
  std::vector<char> buf(o.count * o.io_size);
  std::memset(buf.data(), 1, buf.size());
  std::vector<IORequest> reqs;
  std::vector<bench::CurlRange> curl_ranges;
  for (std::size_t i = 0; i < o.count; ++i) {
    const std::size_t off = rng() % (size - o.io_size + 1);
    reqs.push_back({buf.data() + i * o.io_size, o.io_size, off});
    curl_ranges.push_back({buf.data() + i * o.io_size, o.io_size, off});
  }
  std::vector<char> check(buf.size());
  const std::size_t total  = o.count * o.io_size;
  const unsigned multi_cap = static_cast<unsigned>(
    std::min<std::size_t>(defaults::remote_io_max_concurrent_requests(), 1U << 20));
  struct Row {
    std::string name;
    std::vector<double> s;
  };
  std::vector<Row> rows{
    {"batch EASY_THREADPOOL", {}},
    {"batch MULTI_POLL", {}},
    {"one by one", {}},
    {"curl multi x" + std::to_string(o.threads), {}},
    {"curl multi x" + (multi_cap == 0 ? std::string("all") : std::to_string(multi_cap)), {}}};
  auto batch = [&](RemoteIOBackend b) {
    defaults::set_remote_io_backend(b);
    handle.pread_batch(reqs).get();
  };
  auto one_by_one = [&] {
    for (const auto& r : reqs) {
      handle.pread(r.buf, r.size, r.file_offset, o.task_size).get();
    }
  };
  const auto backend = defaults::remote_io_backend();
  // Warm up, and check that every way reads the same bytes.
  progress("warming up");
  batch(RemoteIOBackend::MULTI_POLL);
  std::memcpy(check.data(), buf.data(), buf.size());
  batch(RemoteIOBackend::EASY_THREADPOOL);
  if (std::memcmp(check.data(), buf.data(), buf.size()) != 0) {
    throw Error("pread_batch read different bytes on the two backends from " + shown);
  }
  if (has_limit) {
    std::memset(buf.data(), 3, buf.size());
    bench::curl_multi_ranges_get(raw, curl_ranges, multi_cap);
    if (std::memcmp(check.data(), buf.data(), buf.size()) != 0) {
      throw Error("kvikio and plain curl multi read different bytes from " + shown);
    }
  }
  for (unsigned int rep = 1; rep <= o.repetitions; ++rep) {
    progress("round " + std::to_string(rep) + "/" + std::to_string(o.repetitions));
    rows[0].s.push_back(bench::seconds_of([&] { batch(RemoteIOBackend::EASY_THREADPOOL); }));
    rows[1].s.push_back(bench::seconds_of([&] { batch(RemoteIOBackend::MULTI_POLL); }));
    defaults::set_remote_io_backend(backend);
    rows[2].s.push_back(bench::seconds_of(one_by_one));
    if (has_limit) {
      rows[3].s.push_back(
        bench::seconds_of([&] { bench::curl_multi_ranges_get(raw, curl_ranges, o.threads); }));
      rows[4].s.push_back(
        bench::seconds_of([&] { bench::curl_multi_ranges_get(raw, curl_ranges, multi_cap); }));
    }
  }
  defaults::set_remote_io_backend(backend);
  auto med         = [](const Row& r) { return r.s.empty() ? 0.0 : bench::median(r.s); };
  const double one = med(rows[2]);
  auto ratio_to    = [](double a, double b) { return a > 0 && b > 0 ? b / a : 0.0; };
  if (o.json) {
    bench::JsonWriter json;
    json.begin_object()
      .field("url", shown)
      .field("pattern", "random")
      .field("count", o.count)
      .field("io_size", o.io_size)
      .field("threads", o.threads)
      .field("max_concurrent_requests", static_cast<std::size_t>(multi_cap))
      .field("repetitions", o.repetitions)
      .key("results")
      .begin_array();
    for (const auto& r : rows) {
      if (r.s.empty()) { continue; }
      json.begin_object()
        .field("op", r.name)
        .field("seconds", med(r))
        .field("ranges_per_s", static_cast<double>(o.count) / med(r))
        .field("vs_one_by_one", ratio_to(med(r), one))
        .end_object();
    }
    json.end_array()
      .field("easy_batch_vs_curl",
             has_limit ? std::optional<double>(ratio_to(med(rows[0]), med(rows[3]))) : std::nullopt)
      .field(
        "multi_batch_vs_curl",
        has_limit ? std::optional<double>(ratio_to(med(rows[1]), med(rows[4]))) : std::nullopt);
    json.end_object();
    std::printf("%s\n", json.str().c_str());
    return 0;
  }
  std::printf("%-24s %10s %12s %10s %12s\n", "read", "seconds", "ranges/s", "MB/s", "x one-by-one");
  for (const auto& r : rows) {
    if (r.s.empty()) { continue; }
    const double t = med(r);
    std::printf("%-24s %10.4f %12.0f %10.1f %12.2f\n",
                r.name.c_str(),
                t,
                static_cast<double>(o.count) / t,
                static_cast<double>(total) / t / 1e6,
                ratio_to(t, one));
  }
  if (has_limit) {
    std::printf(
      "batch EASY_THREADPOOL / curl multi x%u: %.2f; batch MULTI_POLL / curl multi x%s: %.2f\n",
      o.threads,
      ratio_to(med(rows[0]), med(rows[3])),
      multi_cap == 0 ? "all" : std::to_string(multi_cap).c_str(),
      ratio_to(med(rows[1]), med(rows[4])));
  }
  std::printf(
    "(%zu ranges of %s at random offsets of the first %s of %s, %u threads, median of %u)\n",
    o.count,
    format_bytes(static_cast<double>(o.io_size)).c_str(),
    format_bytes(static_cast<double>(size)).c_str(),
    shown.c_str(),
    o.threads,
    o.repetitions);
  return 0;
}

}  // namespace

int run_bench_remote(const RemoteBenchOptions& o)
{
  if (o.target.empty()) { throw std::invalid_argument("--remote needs a URL or 'local'"); }
  if (o.server != "nginx" && o.server != "python") {
    throw std::invalid_argument("--remote-server: '" + o.server + "' is not nginx or python");
  }
  std::optional<bench::LocalServer> local;
  std::string url = o.target;
  if (o.target == "local") {
    progress("writing " + format_bytes(static_cast<double>(o.size)) +
             " of random bytes and "
             "starting a local server");
    local.emplace(o.size, o.server, progress);
    url = local->url();
    progress("serving " + url + " from " + local->kind());
  }

  defaults::set_num_threads(o.threads);
  defaults::set_task_size(o.task_size);
  auto handle = RemoteHandle::open(url);
  const std::size_t size =
    o.size_given || local ? std::min(o.size, handle.nbytes()) : handle.nbytes();
  if (size == 0) { throw std::invalid_argument("--remote: " + redact_url(url) + " is empty"); }
  const bool has_limit    = limit_applies(handle.remote_endpoint_type());
  const std::string raw   = handle.endpoint().url();  // may hold a presigned signature: not shown
  const std::string shown = redact_url(url);
  progress(shown + " (" + to_string(handle.remote_endpoint_type()) + "), reading " +
           format_bytes(static_cast<double>(size)) + " with " + std::to_string(o.threads) +
           " threads, task size " + format_bytes(static_cast<double>(o.task_size)));

  if (o.pattern == "random") { return run_random(o, handle, raw, shown, size, has_limit); }
  std::vector<char> ours(size), theirs(size);
  // Touch every page so that neither side pays first-touch faults in its timing.
  std::memset(ours.data(), 1, size);
  std::memset(theirs.data(), 2, size);
  // Warm up (server page cache, connections) and check both read the same bytes.
  progress("warming up");
  handle.pread(ours.data(), size, 0, o.task_size).get();
  if (has_limit) {
    bench::curl_parallel_range_get(raw, theirs.data(), size, 0, o.task_size, o.threads);
    if (std::memcmp(ours.data(), theirs.data(), size) != 0) {
      throw Error("kvikio and plain parallel curl read different bytes from " + shown);
    }
  }
  std::vector<double> ours_s, limit_s;
  for (unsigned int rep = 1; rep <= o.repetitions; ++rep) {
    progress("read " + std::to_string(rep) + "/" + std::to_string(o.repetitions));
    if (has_limit) {
      limit_s.push_back(bench::seconds_of([&] {
        bench::curl_parallel_range_get(raw, theirs.data(), size, 0, o.task_size, o.threads);
      }));
    }
    ours_s.push_back(
      bench::seconds_of([&] { handle.pread(ours.data(), size, 0, o.task_size).get(); }));
  }
  const double gb          = static_cast<double>(size) / 1e9;
  const double ours_gbps   = gb / bench::median(ours_s);
  const double limit_gbps  = has_limit ? gb / bench::median(limit_s) : 0.0;
  const std::string server = local ? local->kind() : "";

  const std::optional<double> limit = has_limit ? std::optional<double>(limit_gbps) : std::nullopt;
  if (o.json) {
    bench::JsonWriter json;
    json.begin_object()
      .field("url", shown)
      .field("endpoint", to_string(handle.remote_endpoint_type()))
      .field("server", local ? std::optional<std::string>(server) : std::nullopt)
      .field("size", size)
      .field("threads", o.threads)
      .field("task_size", o.task_size)
      .field("memory", "host")
      .field("repetitions", o.repetitions)
      .key("results")
      .begin_array()
      .begin_object()
      .field("op", "read")
      .field("kvikio_gbps", ours_gbps)
      .field("limit_gbps", limit)
      .field("ratio", has_limit ? std::optional<double>(ours_gbps / limit_gbps) : std::nullopt)
      .end_object()
      .end_array()
      .end_object();
    std::printf("%s\n", json.str().c_str());
  } else {
    bench::print_table_header();
    bench::print_table_row("read", "host", ours_gbps, limit, "curl");
    std::printf(
      "(%s of %s%s, %u threads, task size %s, median of %u; limit = plain parallel libcurl "
      "range GETs over the same URL and memory%s)\n",
      format_bytes(static_cast<double>(size)).c_str(),
      shown.c_str(),
      local ? (" served by " + server).c_str() : "",
      o.threads,
      format_bytes(static_cast<double>(o.task_size)).c_str(),
      o.repetitions,
      has_limit ? "" : "; none for signed S3 or WebHDFS");
  }
  return 0;
}

}  // namespace kvikio::tool

// `kvikio bench --remote`. Rounds alternate the limit (plain parallel libcurl range requests,
// bench::curl_parallel_range_get) and RemoteHandle::pread, into host memory, over the same
// bytes of the same URL, so both see the same server, network and page cache. The median of
// each counts; the report is the ratio.
#include "bench_remote.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
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

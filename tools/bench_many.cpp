// `kvikio bench --pattern many` (issue 28). Each case reads a prefix of a hot file as N preads
// of its own buffers, all issued before the first get(), and as ONE pread of the same bytes
// into one buffer: the ratio of the two is how much the requests cost by being many. The two
// take turns going first, repetition after repetition, and the N reads are checked byte for
// byte against the one. A plain parallel pread loop over the same bytes (into pinned memory
// for a device run) gives the machine's page-cache limit beside them.
#include "bench_many.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <memory>
#include <stdexcept>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/device_memory.hpp>
#include <kvikio/file_handle.hpp>

#include "plain_io.hpp"
#include "report.hpp"
#include "timing.hpp"

namespace kvikio::tool {
namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;
constexpr std::size_t GiB = 1024 * MiB;

void progress(const std::string& line) { bench::progress("kvikio bench", line); }

struct Case {
  std::string name;
  std::vector<std::size_t> sizes;
};

/// A bf16 transformer checkpoint's tensors (hidden 2048, MLP 5632), layer after layer while
/// they fit in `limit` bytes: large matrices with small norm and bias vectors between them.
std::vector<std::size_t> checkpoint_mix(std::size_t limit)
{
  const std::size_t mlp = 2048 * 5632 * 2;
  const std::vector<std::size_t> layer{
    8 * MiB, 4 * KiB, 8 * MiB, 4 * KiB, 8 * MiB, 4 * KiB, 8 * MiB, 4 * KiB, mlp, mlp, 4 * KiB, mlp};
  std::size_t per_layer = 0;
  for (auto s : layer) {
    per_layer += s;
  }
  std::vector<std::size_t> sizes;
  for (std::size_t total = per_layer; total <= limit; total += per_layer) {
    sizes.insert(sizes.end(), layer.begin(), layer.end());
  }
  return sizes;
}

std::vector<Case> cases(std::size_t limit)
{
  std::vector<Case> out;
  auto add = [&](std::size_t n, std::size_t size, const char* name) {
    n                 = std::min(n, limit / size);
    const auto label  = std::to_string(n) + " x " + name;
    const bool repeat = !out.empty() && out.back().name == label;  // cut to the same by `limit`
    if (n > 0 && !repeat) { out.push_back({label, std::vector(n, size)}); }
  };
  add(1, GiB, "1 GiB");
  add(8, 32 * MiB, "32 MiB");
  add(128, 32 * MiB, "32 MiB");
  add(128, 8 * MiB, "8 MiB");
  add(512, MiB, "1 MiB");
  add(4096, 256 * KiB, "256 KiB");
  auto mix = checkpoint_mix(limit);
  if (!mix.empty()) {
    out.push_back({"checkpoint mix (" + std::to_string(mix.size()) + " tensors)", mix});
  }
  return out;
}

/// Buffers of one memory kind, one per request plus one for the single read.
struct Buffers {
  bool device;
  std::vector<DeviceBuffer> dev;
  std::vector<std::unique_ptr<char[]>> host;
  std::vector<char*> ptrs;

  Buffers(bool device_, const std::vector<std::size_t>& sizes) : device(device_)
  {
    for (auto s : sizes) {
      if (device) {
        dev.emplace_back(s);
        ptrs.push_back(static_cast<char*>(dev.back().data()));
      } else {
        host.emplace_back(new char[s]);
        std::memset(host.back().get(), 0, s);  // touched: no page faults in the timed reads
        ptrs.push_back(host.back().get());
      }
    }
  }
  /// Bytes [0, n) of buffer i in host memory.
  std::vector<char> fetch(std::size_t i, std::size_t n) const
  {
    std::vector<char> out(n);
    if (device) {
      dev[i].copy_to_host(out.data(), n);
    } else {
      std::memcpy(out.data(), ptrs[i], n);
    }
    return out;
  }
};

double seconds_since(std::chrono::steady_clock::time_point t0)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Row {
  std::string name;
  std::size_t count;
  std::size_t bytes;
  double many_gbps;
  double one_gbps;
  double limit_gbps;
};

Row run_case(FileHandle& f, const ManyBenchOptions& o, const Case& c)
{
  std::vector<std::size_t> offsets;
  std::size_t total = 0;
  for (auto s : c.sizes) {
    offsets.push_back(total);
    total += s;
  }
  std::vector<std::size_t> all = c.sizes;
  all.push_back(total);
  Buffers bufs(o.device, all);
  const double gb = static_cast<double>(total) / 1e9;
  std::vector<double> many, one, limit;
  // The limit reads into pinned memory for a device run (where the bytes go next), into
  // plain host memory for a host run (there may be no driver).
  PinnedBuffer pinned = o.device ? PinnedBuffer(total) : PinnedBuffer();
  std::vector<char> plain_host(o.device ? 0 : total);
  char* limit_dst = o.device ? static_cast<char*>(pinned.data()) : plain_host.data();
  const bench::PlainIoShape shape{total, defaults::task_size(), o.threads};
  for (unsigned rep = 0; rep <= o.repetitions; ++rep) {  // round 0 warms up
    auto run_many = [&] {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::future<std::size_t>> futures;
      futures.reserve(c.sizes.size());
      for (std::size_t i = 0; i < c.sizes.size(); ++i) {
        futures.push_back(f.pread(bufs.ptrs[i], c.sizes[i], offsets[i]));
      }
      std::size_t got = 0;
      for (auto& fu : futures) {
        got += fu.get();
      }
      const double dt = seconds_since(t0);
      if (got != total) { throw std::runtime_error(c.name + ": read fewer bytes than asked"); }
      if (rep > 0) { many.push_back(gb / dt); }
    };
    auto run_one = [&] {
      const auto t0   = std::chrono::steady_clock::now();
      const auto got  = f.pread(bufs.ptrs.back(), total, 0).get();
      const double dt = seconds_since(t0);
      if (got != total) { throw std::runtime_error(c.name + ": one read came up short"); }
      if (rep > 0) { one.push_back(gb / dt); }
    };
    auto run_limit = [&] {
      const auto t0 = std::chrono::steady_clock::now();
      bench::plain_parallel_io(false, o.file, 0, limit_dst, shape);
      if (rep > 0) { limit.push_back(gb / seconds_since(t0)); }
    };
    std::vector<std::function<void()>> ways{run_many, run_one, run_limit};
    for (std::size_t k = 0; k < ways.size(); ++k) {
      ways[(rep + k) % ways.size()]();
    }
  }
  // Every request's bytes equal the same bytes of the single read.
  const auto whole = bufs.fetch(c.sizes.size(), total);
  for (std::size_t i = 0; i < c.sizes.size(); ++i) {
    const auto got = bufs.fetch(i, c.sizes[i]);
    if (std::memcmp(got.data(), whole.data() + offsets[i], c.sizes[i]) != 0) {
      throw std::runtime_error(c.name + ": request " + std::to_string(i) +
                               " read other bytes than the single read");
    }
  }
  return {
    c.name, c.sizes.size(), total, bench::median(many), bench::median(one), bench::median(limit)};
}

}  // namespace

int run_bench_many(const ManyBenchOptions& o)
{
  FileHandle f(o.file, "r");
  std::vector<Row> rows;
  for (const auto& c : cases(o.size)) {
    progress(c.name);
    rows.push_back(run_case(f, o, c));
  }
  const char* memory = o.device ? "device" : "host";
  if (o.json) {
    bench::JsonWriter json;
    json.begin_object()
      .field("pattern", std::string("many"))
      .field("memory", std::string(memory))
      .field("threads", o.threads)
      .field("repetitions", o.repetitions)
      .key("results")
      .begin_array();
    for (const auto& r : rows) {
      json.begin_object()
        .field("case", r.name)
        .field("requests", r.count)
        .field("bytes", r.bytes)
        .field("many_gbps", r.many_gbps)
        .field("one_pread_gbps", r.one_gbps)
        .field("plain_pinned_limit_gbps", r.limit_gbps)
        .field("ratio_to_one_pread", r.many_gbps / r.one_gbps)
        .field("ratio_to_limit", r.many_gbps / r.limit_gbps)
        .end_object();
    }
    json.end_array().end_object();
    std::printf("%s\n", json.str().c_str());
    return 0;
  }
  std::printf("%-32s %8s %12s %12s %12s   %s\n",
              "case",
              "memory",
              "many GB/s",
              "one GB/s",
              "limit GB/s",
              "many/one  many/limit");
  for (const auto& r : rows) {
    std::printf("%-32s %8s %12.2f %12.2f %12.2f   %5.2fx  %5.2fx\n",
                r.name.c_str(),
                memory,
                r.many_gbps,
                r.one_gbps,
                r.limit_gbps,
                r.many_gbps / r.one_gbps,
                r.many_gbps / r.limit_gbps);
  }
  return 0;
}

}  // namespace kvikio::tool

// `kvikio bench --pattern random` (issue 14): IOPS of small random reads of a hot file.
// Every way is timed in the same run, repetition after repetition, next to its limit: single
// read() calls and pread().get() one at a time against one thread calling pread(2) in a loop;
// the batch call (with the configured backend, and with the thread pool) against the same
// threads calling pread(2) from a shared counter.
#include "bench_random.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <vector>

#include <kvikio/batch_io.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/device_memory.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>

#include "options.hpp"
#include "plain_io.hpp"
#include "report.hpp"
#include "timing.hpp"

namespace kvikio::tool {
namespace {

void progress(const std::string& line) { bench::progress("kvikio bench", line); }

struct Way {
  const char* name;
  const char* limit;  // which plain loop it is held against
  std::vector<double> runs;
  double iops{0};
};

}  // namespace

int run_bench_random(const RandomBenchOptions& o)
{
  if (o.io_size == 0 || o.io_size > o.size) {
    throw std::invalid_argument("--io-size must be between 1 byte and --size");
  }
  std::vector<std::size_t> offsets(o.count);
  std::mt19937_64 rng(14);
  const std::size_t slots = o.size / o.io_size;
  for (auto& off : offsets) {
    off = (rng() % slots) * o.io_size;
  }
  const std::size_t span = o.count * o.io_size;
  std::vector<char> expected(span), host(span);
  std::optional<DeviceBuffer> dev;
  if (o.device) { dev.emplace(span); }
  char* ours = o.device ? static_cast<char*>(dev->data()) : host.data();

  const int fd = ::open(o.file.c_str(), O_RDONLY);
  if (fd < 0) { throw GenericSystemError("cannot open " + o.file); }
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  // Hot file: read it whole once, and the expected bytes of every request.
  {
    std::vector<char> all(1 << 20);
    for (std::size_t pos = 0; pos < o.size; pos += all.size()) {
      if (::pread(fd, all.data(), all.size(), static_cast<off_t>(pos)) < 0) {
        throw GenericSystemError("warming " + o.file);
      }
    }
  }
  bench::plain_random_io(false, fd, expected.data(), offsets, o.io_size, 1);

  FileHandle f(o.file, "r");
  std::vector<IORequest> requests;
  requests.reserve(o.count);
  for (std::size_t i = 0; i < o.count; ++i) {
    requests.push_back({ours + i * o.io_size, o.io_size, offsets[i]});
  }
  const auto backend = std::get<std::string>(defaults::get("batch_backend"));
  auto check         = [&](const char* what) {
    std::vector<char> got(span);
    if (o.device) {
      dev->copy_to_host(got.data(), span);
    } else {
      got = host;
    }
    if (got != expected) {
      throw Error(std::string("random-read benchmark: ") + what + " read different bytes");
    }
    if (o.device) {
      std::vector<char> zero(span);
      dev->copy_from_host(zero.data(), span);
    } else {
      std::memset(host.data(), 0, span);
    }
  };

  Way plain1{"pread(2), 1 thread", "", {}};
  Way plainN{"pread(2), N threads", "", {}};
  Way single{"FileHandle::read", "pread(2), 1 thread", {}};
  Way pget{"pread().get()", "pread(2), 1 thread", {}};
  Way batch{"pread_batch", "pread(2), N threads", {}};
  Way batch_pool{"pread_batch (thread_pool)", "pread(2), N threads", {}};
  std::vector<char> limit(span);
  for (unsigned rep = 1; rep <= o.repetitions; ++rep) {
    progress("random " + format_bytes(static_cast<double>(o.io_size)) + " reads " +
             std::to_string(rep) + "/" + std::to_string(o.repetitions));
    const bool first = rep == 1;
    plain1.runs.push_back(bench::seconds_of(
      [&] { bench::plain_random_io(false, fd, limit.data(), offsets, o.io_size, 1); }));
    single.runs.push_back(bench::seconds_of([&] {
      for (std::size_t i = 0; i < o.count; ++i) {
        f.read(ours + i * o.io_size, o.io_size, offsets[i], 0);
      }
    }));
    if (first) { check("FileHandle::read"); }
    pget.runs.push_back(bench::seconds_of([&] {
      for (std::size_t i = 0; i < o.count; ++i) {
        f.pread(ours + i * o.io_size, o.io_size, offsets[i]).get();
      }
    }));
    if (first) { check("pread().get()"); }
    plainN.runs.push_back(bench::seconds_of(
      [&] { bench::plain_random_io(false, fd, limit.data(), offsets, o.io_size, o.threads); }));
    batch.runs.push_back(bench::seconds_of([&] { f.pread_batch(requests).get(); }));
    if (first) { check("pread_batch"); }
    defaults::set("batch_backend", std::string("thread_pool"));
    batch_pool.runs.push_back(bench::seconds_of([&] { f.pread_batch(requests).get(); }));
    defaults::set("batch_backend", backend);
    if (first) { check("pread_batch (thread_pool)"); }
  }
  for (Way* w : {&plain1, &plainN, &single, &pget, &batch, &batch_pool}) {
    w->iops = static_cast<double>(o.count) / bench::median(w->runs);
  }
  const std::string in_use = batch_backend();
  if (o.json) {
    bench::JsonWriter json;
    json.begin_object()
      .field("pattern", std::string("random"))
      .field("file", o.file)
      .field("size", o.size)
      .field("io_size", o.io_size)
      .field("count", o.count)
      .field("threads", o.threads)
      .field("memory", std::string(o.device ? "device" : "host"))
      .field("repetitions", o.repetitions)
      .field("batch_backend", in_use)
      .field("plain_pread_1_thread_iops", plain1.iops)
      .field("plain_pread_n_threads_iops", plainN.iops)
      .field("read_iops", single.iops)
      .field("pread_get_iops", pget.iops)
      .field("batch_iops", batch.iops)
      .field("batch_thread_pool_iops", batch_pool.iops)
      .field("read_time_ratio_to_pread", plain1.iops / single.iops)
      .field("pread_get_time_ratio_to_pread", plain1.iops / pget.iops)
      .field("batch_ratio_to_plain_parallel", batch.iops / plainN.iops)
      .field("batch_ratio_to_pread_get", batch.iops / pget.iops)
      .end_object();
    std::printf("%s\n", json.str().c_str());
    return 0;
  }
  std::printf("%-28s %12s %10s   %s\n", "way", "IOPS", "us/read", "ratio");
  auto row = [&](const Way& w, const Way* lim) {
    std::printf("%-28s %12.0f %10.2f", w.name, w.iops, 1e6 / w.iops);
    if (lim != nullptr) { std::printf("   %.2fx the IOPS of %s", w.iops / lim->iops, lim->name); }
    std::printf("\n");
  };
  row(plain1, nullptr);
  row(plainN, nullptr);
  row(single, &plain1);
  row(pget, &plain1);
  row(batch, &plainN);
  row(batch_pool, &plainN);
  std::printf("pread_batch (%s): %.2fx the IOPS of pread().get() one at a time\n",
              in_use.c_str(),
              batch.iops / pget.iops);
  std::printf("(%s random reads of %s from a hot %s file, %s memory, %u threads, median of %u)\n",
              std::to_string(o.count).c_str(),
              format_bytes(static_cast<double>(o.io_size)).c_str(),
              format_bytes(static_cast<double>(o.size)).c_str(),
              o.device ? "device" : "host",
              o.threads,
              o.repetitions);
  return 0;
}

}  // namespace kvikio::tool

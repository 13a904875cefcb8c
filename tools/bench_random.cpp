// `kvikio bench --pattern random` (issue 14): IOPS of small random reads of a hot file.
// Every way is timed in the same run, repetition after repetition, next to its limit: single
// read() calls and pread().get() one at a time against one thread calling pread(2) in a loop;
// read() from as many threads of the caller's own sharing the FileHandle, and the batch call
// (with the configured backend, and with the thread pool), against the same threads calling
// pread(2) from a shared counter. Each timed run repeats its reads until it has lasted a
// quarter of a second, so fixed costs (thread starts, first-use set-up) do not count.
// `--pattern open` times open + one read + close through FileHandle against the plain calls.
#include "bench_random.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <kvikio/batch_io.hpp>
#include <kvikio/compat_mode.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/device_memory.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/threadpool.hpp>

#include "options.hpp"
#include "report.hpp"
#include "timing.hpp"

namespace kvikio::tool {
namespace {

void progress(const std::string& line) { bench::progress("kvikio bench", line); }

// A timed run repeats its pass until it has lasted this long.
constexpr double min_run_seconds = 0.25;
// Buffers hold at most this many reads; request i uses slot i % slots.
constexpr std::size_t max_slots = 16384;

struct Way {
  const char* name;
  std::vector<double> runs;  // operations per second
  double iops{0};
};

/// Operations per second of `pass` (which does `ops` operations), repeated for at least
/// min_run_seconds.
template <typename F>
double rate_of(std::size_t ops, F&& pass)
{
  std::size_t done = 0;
  const auto t0    = std::chrono::steady_clock::now();
  double elapsed   = 0;
  do {
    pass();
    done += ops;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (elapsed < min_run_seconds);
  return static_cast<double>(done) / elapsed;
}

/// `threads` threads (the caller alone for 1) calling `read_one(i)` for every i < count,
/// taken off a shared counter; the first error stops them all and is thrown.
template <typename F>
void parallel_loop(std::size_t count, unsigned threads, F&& read_one)
{
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  auto worker = [&] {
    try {
      for (std::size_t i = next++; i < count && !failed; i = next++) {
        read_one(i);
      }
    } catch (...) {
      if (!failed.exchange(true)) { error = std::current_exception(); }
    }
  };
  if (threads == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back(worker);
    }
    for (auto& t : pool) {
      t.join();
    }
  }
  if (error) { std::rethrow_exception(error); }
}

/// The limit: `threads` threads calling pread(2) for the requests; read i lands in slot
/// i % slots of `buf`.
void plain_loop(int fd,
                char* buf,
                const std::vector<std::size_t>& offsets,
                std::size_t io_size,
                std::size_t slots,
                unsigned threads)
{
  parallel_loop(offsets.size(), threads, [&](std::size_t i) {
    char* p = buf + (i % slots) * io_size;
    for (std::size_t done = 0; done < io_size;) {
      const ssize_t n =
        ::pread(fd, p + done, io_size - done, static_cast<off_t>(offsets[i] + done));
      if (n < 0 && errno == EINTR) { continue; }
      if (n <= 0) {
        throw GenericSystemError(n < 0 ? errno : EIO, "plain random pread loop failed");
      }
      done += static_cast<std::size_t>(n);
    }
  });
}

int open_file(const std::string& path)
{
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) { throw GenericSystemError("cannot open " + path); }
  return fd;
}

}  // namespace

int run_bench_random(const RandomBenchOptions& o)
{
  if (o.io_size == 0 || o.io_size > o.size) {
    throw std::invalid_argument("--io-size must be between 1 byte and --size");
  }
  std::vector<std::size_t> offsets(o.count);
  std::mt19937_64 rng(14);
  const std::size_t positions = o.size / o.io_size;
  for (auto& off : offsets) {
    off = (rng() % positions) * o.io_size;
  }
  const std::size_t slots = std::min(o.count, max_slots);
  const std::size_t span  = slots * o.io_size;
  std::vector<char> expected(span), host(span), limit(span);
  std::optional<DeviceBuffer> dev;
  if (o.device) { dev.emplace(span); }
  char* ours = o.device ? static_cast<char*>(dev->data()) : host.data();

  const int fd = open_file(o.file);
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_fd{fd};
  // Hot file: read it whole once, and the expected bytes of the first `slots` requests.
  {
    std::vector<char> all(1 << 20);
    for (std::size_t pos = 0; pos < o.size; pos += all.size()) {
      if (::pread(fd, all.data(), all.size(), static_cast<off_t>(pos)) < 0) {
        throw GenericSystemError("warming " + o.file);
      }
    }
  }
  const std::vector<std::size_t> first(offsets.begin(), offsets.begin() + static_cast<long>(slots));
  plain_loop(fd, expected.data(), first, o.io_size, slots, 1);

  FileHandle f(o.file, "r");
  std::vector<IORequest> requests;
  requests.reserve(o.count);
  for (std::size_t i = 0; i < o.count; ++i) {
    requests.push_back({ours + (i % slots) * o.io_size, o.io_size, offsets[i]});
  }
  const std::vector<IORequest> first_requests(requests.begin(),
                                              requests.begin() + static_cast<long>(slots));
  const auto backend = std::get<std::string>(defaults::get("batch_backend"));
  // Each way reads the first `slots` requests once, untimed, into a zeroed buffer: every
  // request must land its own bytes (the timed runs reuse the slots).
  auto check = [&](const char* what, auto&& read_first) {
    if (o.device) {
      std::vector<char> zero(span);
      dev->copy_from_host(zero.data(), span);
    } else {
      std::memset(host.data(), 0, span);
    }
    read_first();
    std::vector<char> got(span);
    if (o.device) {
      dev->copy_to_host(got.data(), span);
    } else {
      got = host;
    }
    if (got != expected) {
      throw Error(std::string("random-read benchmark: ") + what + " read different bytes");
    }
  };
  auto reads = [&](std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      f.read(ours + (i % slots) * o.io_size, o.io_size, offsets[i], 0);
    }
  };
  // The same reads from o.threads threads of the caller's own, sharing the FileHandle.
  auto threaded_reads = [&](std::size_t n, unsigned threads) {
    parallel_loop(n, threads, [&](std::size_t i) {
      f.read(ours + (i % slots) * o.io_size, o.io_size, offsets[i], 0);
    });
  };
  auto pread_gets = [&](std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      f.pread(ours + (i % slots) * o.io_size, o.io_size, offsets[i]).get();
    }
  };
  auto with_pool_backend = [&](auto&& fn) {
    defaults::set("batch_backend", std::string("thread_pool"));
    fn();
    defaults::set("batch_backend", backend);
  };
  check("FileHandle::read", [&] { reads(slots); });
  check("FileHandle::read, N threads", [&] { threaded_reads(slots, o.threads); });
  check("pread().get()", [&] { pread_gets(slots); });
  check("pread_batch", [&] { f.pread_batch(first_requests).get(); });
  with_pool_backend(
    [&] { check("pread_batch (thread_pool)", [&] { f.pread_batch(first_requests).get(); }); });

  Way plain1{"pread(2), 1 thread", {}};
  Way plainN{"pread(2), N threads", {}};
  Way single{"FileHandle::read", {}};
  Way singleN{"FileHandle::read, N threads", {}};
  Way pget{"pread().get()", {}};
  Way handoff{"pool hand-off (empty job)", {}};
  Way batch{"pread_batch", {}};
  Way batch_pool{"pread_batch (thread_pool)", {}};
  auto& pool = defaults::thread_pool();
  // When the batch call returns its future, as a share of the whole batch: once every
  // request is checked (the pool's jobs check beside the caller and go straight on to the IO,
  // so the reads have begun by then).
  double call_seconds  = 0;
  double batch_seconds = 0;
  auto timed_batch     = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    auto future   = f.pread_batch(requests);
    const auto t1 = std::chrono::steady_clock::now();
    future.get();
    call_seconds += std::chrono::duration<double>(t1 - t0).count();
    batch_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (unsigned rep = 1; rep <= o.repetitions; ++rep) {
    progress("random " + format_bytes(static_cast<double>(o.io_size)) + " reads " +
             std::to_string(rep) + "/" + std::to_string(o.repetitions));
    plain1.runs.push_back(
      rate_of(o.count, [&] { plain_loop(fd, limit.data(), offsets, o.io_size, slots, 1); }));
    single.runs.push_back(rate_of(o.count, [&] { reads(o.count); }));
    pget.runs.push_back(rate_of(o.count, [&] { pread_gets(o.count); }));
    handoff.runs.push_back(rate_of(1000, [&] {
      for (int i = 0; i < 1000; ++i) {
        pool.submit_task([] { return 0; }).get();
      }
    }));
    // The parallel ways take turns at going first: the first after the single-thread ways ran
    // a few percent slower whichever it was (H200: two runs of the same backend differed by
    // 2-9% by their place alone).
    std::array<std::function<void()>, 4> parallel{
      [&] {
        plainN.runs.push_back(rate_of(
          o.count, [&] { plain_loop(fd, limit.data(), offsets, o.io_size, slots, o.threads); }));
      },
      [&] { batch.runs.push_back(rate_of(o.count, timed_batch)); },
      [&] {
        singleN.runs.push_back(rate_of(o.count, [&] { threaded_reads(o.count, o.threads); }));
      },
      [&] {
        with_pool_backend([&] {
          batch_pool.runs.push_back(rate_of(o.count, [&] { f.pread_batch(requests).get(); }));
        });
      }};
    for (std::size_t k = 0; k < parallel.size(); ++k) {
      parallel[(rep + k) % parallel.size()]();
    }
  }
  for (Way* w : {&plain1, &plainN, &single, &singleN, &pget, &handoff, &batch, &batch_pool}) {
    w->iops = bench::median(w->runs);
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
      .field("read_us", 1e6 / single.iops)
      .field("read_n_threads_iops", singleN.iops)
      .field("pread_get_iops", pget.iops)
      .field("pool_handoff_us", 1e6 / handoff.iops)
      .field("batch_iops", batch.iops)
      .field("batch_thread_pool_iops", batch_pool.iops)
      .field("read_time_ratio_to_pread", plain1.iops / single.iops)
      .field("pread_get_time_ratio_to_pread", plain1.iops / pget.iops)
      .field("read_n_threads_ratio_to_plain_parallel", singleN.iops / plainN.iops)
      .field("batch_ratio_to_plain_parallel", batch.iops / plainN.iops)
      .field("batch_thread_pool_ratio_to_plain_parallel", batch_pool.iops / plainN.iops)
      .field("batch_ratio_to_pread_get", batch.iops / pget.iops)
      .field("batch_call_share", call_seconds / batch_seconds)
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
  row(handoff, nullptr);
  row(singleN, &plainN);
  row(batch, &plainN);
  row(batch_pool, &plainN);
  std::printf("FileHandle::read into %s memory: %.2f us per read (%.2fx the time of pread(2))\n",
              o.device ? "device" : "host",
              1e6 / single.iops,
              plain1.iops / single.iops);
  std::printf(
    "pread_batch (%s): %.2fx the IOPS of pread().get() one at a time; the call returns "
    "(every request checked, the reads begun) %.1f%% into each batch\n",
    in_use.c_str(),
    batch.iops / pget.iops,
    100 * call_seconds / batch_seconds);
  std::printf(
    "(%zu random reads of %s per pass from a hot %s file, %s memory, %u threads, each run "
    ">= %.2f s, median of %u)\n",
    o.count,
    format_bytes(static_cast<double>(o.io_size)).c_str(),
    format_bytes(static_cast<double>(o.size)).c_str(),
    o.device ? "device" : "host",
    o.threads,
    min_run_seconds,
    o.repetitions);
  return 0;
}

int run_bench_open(const RandomBenchOptions& o)
{
  if (o.io_size == 0 || o.io_size > o.size) {
    throw std::invalid_argument("--io-size must be between 1 byte and --size");
  }
  std::vector<char> host(o.io_size), expected(o.io_size);
  std::optional<DeviceBuffer> dev;
  if (o.device) { dev.emplace(o.io_size); }
  {
    const int fd    = open_file(o.file);
    const ssize_t n = ::pread(fd, expected.data(), o.io_size, 0);
    ::close(fd);
    if (n != static_cast<ssize_t>(o.io_size)) { throw GenericSystemError("reading " + o.file); }
  }
  auto plain = [&] {
    const int fd    = open_file(o.file);
    const ssize_t n = ::pread(fd, host.data(), o.io_size, 0);
    ::close(fd);
    if (n != static_cast<ssize_t>(o.io_size)) { throw GenericSystemError("reading " + o.file); }
  };
  auto ours = [&](void* buf) {
    FileHandle f(o.file, "r");
    f.read(buf, o.io_size, 0, 0);
    f.close();
  };
  // Each way once, checked, untimed (which also takes first-use set-up out of the timing).
  ours(host.data());
  if (host != expected) { throw Error("open benchmark: FileHandle read different bytes"); }
  if (o.device) {
    ours(dev->data());
    std::vector<char> got(o.io_size);
    dev->copy_to_host(got.data(), o.io_size);
    if (got != expected) { throw Error("open benchmark: FileHandle read different bytes"); }
  }
  Way plain_way{"open+pread+close", {}};
  Way host_way{"FileHandle, host memory", {}};
  Way dev_way{"FileHandle, device memory", {}};
  for (unsigned rep = 1; rep <= o.repetitions; ++rep) {
    progress("open + read " + format_bytes(static_cast<double>(o.io_size)) + " + close " +
             std::to_string(rep) + "/" + std::to_string(o.repetitions));
    plain_way.runs.push_back(rate_of(100, [&] {
      for (int i = 0; i < 100; ++i) {
        plain();
      }
    }));
    host_way.runs.push_back(rate_of(100, [&] {
      for (int i = 0; i < 100; ++i) {
        ours(host.data());
      }
    }));
    if (o.device) {
      dev_way.runs.push_back(rate_of(100, [&] {
        for (int i = 0; i < 100; ++i) {
          ours(dev->data());
        }
      }));
    }
  }
  for (Way* w : {&plain_way, &host_way, &dev_way}) {
    if (!w->runs.empty()) { w->iops = bench::median(w->runs); }
  }
  const char* mode = FileHandle(o.file, "r").is_compat_mode_preferred() ? "POSIX" : "cuFile";
  if (o.json) {
    bench::JsonWriter json;
    json.begin_object()
      .field("pattern", std::string("open"))
      .field("file", o.file)
      .field("io_size", o.io_size)
      .field("device_io", std::string(mode))
      .field("plain_us", 1e6 / plain_way.iops)
      .field("file_handle_host_us", 1e6 / host_way.iops)
      .field("file_handle_host_time_ratio", plain_way.iops / host_way.iops);
    if (o.device) {
      json.field("file_handle_device_us", 1e6 / dev_way.iops)
        .field("file_handle_device_time_ratio", plain_way.iops / dev_way.iops);
    }
    json.end_object();
    std::printf("%s\n", json.str().c_str());
    return 0;
  }
  std::printf("%-28s %10s   %s\n", "way", "us/open", "ratio");
  std::printf("%-28s %10.2f\n", plain_way.name, 1e6 / plain_way.iops);
  for (const Way* w : {&host_way, &dev_way}) {
    if (w->runs.empty()) { continue; }
    std::printf("%-28s %10.2f   %.2fx the time of %s\n",
                w->name,
                1e6 / w->iops,
                plain_way.iops / w->iops,
                plain_way.name);
  }
  std::printf(
    "(open, read %s at offset 0 and close %s, compat mode %s as configured: device "
    "IO through %s; median of %u runs of >= %.2f s)\n",
    format_bytes(static_cast<double>(o.io_size)).c_str(),
    o.file.c_str(),
    std::string(to_string(defaults::compat_mode())).c_str(),
    mode,
    o.repetitions,
    min_run_seconds);
  return 0;
}

}  // namespace kvikio::tool

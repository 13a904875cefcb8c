// `kvikio bench`. Each operation is timed twice per repetition, side by side: once through
// the library and once through a plain parallel pread/pwrite loop over the same bytes, file
// and kind of memory. The loop is the machine's own limit; the report is the ratio.
#include "bench.hpp"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/device_memory.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/file_utils.hpp>

#include "bench_many.hpp"
#include "bench_random.hpp"
#include "bench_remote.hpp"
#include "options.hpp"
#include "plain_io.hpp"
#include "report.hpp"
#include "timing.hpp"

namespace kvikio::tool {
namespace {

constexpr std::size_t page = 4096;

struct Options {
  std::size_t size{1ULL << 30};
  unsigned int threads{std::max(1U, std::thread::hardware_concurrency())};
  std::size_t task_size{defaults::task_size()};
  bool direct_io{false};
  std::string memory{"auto"};
  unsigned int repetitions{3};
  std::string file;
  bool json{false};
  bool keep_file{false};
  std::vector<std::string> ops{"write", "read"};
  std::string remote;  // --remote URL|local: see bench_remote.hpp
  std::string remote_server{"nginx"};
  bool size_given{false};
  std::vector<int> devices;           // --devices: read into one buffer on each of these at once
  std::string pattern{"sequential"};  // --pattern random: see bench_random.hpp
  std::size_t io_size{4096};
  std::size_t count{20000};
  bool count_given{false};
};

const char* usage =
  "usage: kvikio bench [options]\n"
  "  --size BYTES          bytes per operation (default 1GiB; suffixes KiB MiB GiB)\n"
  "  --threads N           IO threads, for us and for the limit (default: all cores)\n"
  "  --task-size BYTES     piece size of a parallel request (default: KVIKIO_TASK_SIZE)\n"
  "  --direct-io           O_DIRECT for us and for the limit (default: page cache)\n"
  "  --memory auto|host|device   memory to read into and write from (default: device when\n"
  "                        a CUDA device is usable, else host)\n"
  "  --repetitions N       timed runs of each operation (default 3; the median counts)\n"
  "  --file PATH           file to use (default: a temporary file here, removed after)\n"
  "  --keep-file           keep the file afterwards\n"
  "  --ops write,read      operations to run\n"
  "  --devices LIST        device memory on several GPUs (e.g. 0,1): each listed device gets\n"
  "                        its own --size buffer and the read issues one pread of the whole\n"
  "                        file per device at once; reports each device (its bytes over the\n"
  "                        time until its read completed) and the aggregate (all bytes over\n"
  "                        the wall time) against a plain parallel pread loop reading the file\n"
  "                        once per device into pinned memory. The write phase stays on the\n"
  "                        first listed device\n"
  "  --json                print the results as one JSON object\n"
  "  --remote URL|local    read a remote object (http(s), s3://, WebHDFS) next to plain\n"
  "                        parallel curl; 'local' serves --size random bytes on loopback\n"
  "  --remote-server nginx|python   server for --remote local (default nginx, else python)\n"
  "  --pattern sequential|random|open|many   random: --count reads of --io-size bytes at random\n"
  "                        offsets of a hot --size file: single read() calls, pread().get()\n"
  "                        one at a time and one pread_batch call, in IOPS, next to plain\n"
  "                        pread loops on 1 and --threads threads. open: open, read --io-size\n"
  "                        bytes and close, through FileHandle next to the plain calls\n"
  "                        (e.g. --size 64KiB --io-size 64KiB)\n"
  "                        many: N preads issued before the first get(), each into its\n"
  "                        own buffer (1 x 1GiB ... 4096 x 256KiB, a checkpoint's mix),\n"
  "                        against one pread of the same bytes and a plain pread loop\n"
  "  --io-size BYTES       size of each random read (default 4KiB)\n"
  "  --count N             random reads per timed run (default 20000; 1000 with --remote)\n"
  "                        With --remote, --pattern random reads the ranges as one\n"
  "                        pread_batch per remote IO backend, one by one (pread().get()),\n"
  "                        and as plain curl multi GETs of the same concurrency\n";

Options parse(int argc, char** argv, int first)
{
  Options o;
  Args args(argc, argv, first);
  while (auto name = args.next_option()) {
    if (*name == "size") {
      o.size       = parse_bytes(*name, args.value());
      o.size_given = true;
    } else if (*name == "threads") {
      o.threads = static_cast<unsigned int>(parse_count(*name, args.value()));
    } else if (*name == "task-size") {
      o.task_size = parse_bytes(*name, args.value());
      if (o.task_size == 0) { throw std::invalid_argument("--task-size must be positive"); }
    } else if (*name == "direct-io") {
      o.direct_io = true;
    } else if (*name == "memory") {
      o.memory = args.value();
      if (o.memory != "host" && o.memory != "device" && o.memory != "auto") {
        throw std::invalid_argument("--memory: '" + o.memory +
                                    "' is not one of auto, host, device");
      }
    } else if (*name == "repetitions") {
      o.repetitions = static_cast<unsigned int>(parse_count(*name, args.value()));
    } else if (*name == "file") {
      o.file = args.value();
    } else if (*name == "keep-file") {
      o.keep_file = true;
    } else if (*name == "json") {
      o.json = true;
    } else if (*name == "ops") {
      o.ops.clear();
      std::stringstream ss(args.value());
      for (std::string op; std::getline(ss, op, ',');) {
        if (op != "read" && op != "write") {
          throw std::invalid_argument("--ops: unknown operation '" + op + "' (read, write)");
        }
        o.ops.push_back(op);
      }
    } else if (*name == "devices") {
      o.devices.clear();
      const std::string list = args.value();
      std::stringstream ss(list);
      for (std::string item; std::getline(ss, item, ',');) {
        if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
            item.size() > 6) {
          throw std::invalid_argument("--devices: '" + item + "' in '" + list +
                                      "' is not a device number");
        }
        const int d = std::stoi(item);
        if (std::find(o.devices.begin(), o.devices.end(), d) != o.devices.end()) {
          throw std::invalid_argument("--devices: device " + item + " is listed twice in '" + list +
                                      "'");
        }
        o.devices.push_back(d);
      }
      if (o.devices.empty()) { throw std::invalid_argument("--devices: empty list"); }
    } else if (*name == "remote") {
      o.remote = args.value();
    } else if (*name == "pattern") {
      o.pattern = args.value();
      if (o.pattern != "sequential" && o.pattern != "random" && o.pattern != "open" &&
          o.pattern != "many") {
        throw std::invalid_argument("--pattern: '" + o.pattern +
                                    "' is not one of sequential, random, open, many");
      }
    } else if (*name == "io-size") {
      o.io_size = parse_bytes(*name, args.value());
    } else if (*name == "count") {
      o.count       = parse_count(*name, args.value());
      o.count_given = true;
    } else if (*name == "remote-server") {
      o.remote_server = args.value();
    } else if (*name == "help") {
      std::cout << usage;
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown option --" + *name + "\n" + usage);
    }
  }
  if (o.direct_io && o.size % page != 0) {
    throw std::invalid_argument("--direct-io needs --size to be a multiple of 4096");
  }
  return o;
}

/// Page-aligned host memory, so both sides may use O_DIRECT on it.
struct HostBuffer {
  struct Free {
    void operator()(char* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<char, Free> data;
  std::size_t size;
  explicit HostBuffer(std::size_t n) : size(n)
  {
    void* p = nullptr;
    if (posix_memalign(&p, page, std::max(n, page)) != 0) {
      throw std::runtime_error("cannot allocate " + format_bytes(static_cast<double>(n)) +
                               " of host memory");
    }
    data.reset(static_cast<char*>(p));
  }
};

void fill_random(char* p, std::size_t n)
{
  std::mt19937_64 rng(2026);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    auto v = rng();
    std::memcpy(p + i, &v, 8);
  }
  for (; i < n; ++i) {
    p[i] = static_cast<char>(rng());
  }
}

/// The limit (bench::plain_parallel_io) on the benchmark file, `copies` times over.
void plain_parallel_io(
  bool write, int open_flags, char* buf, const Options& o, std::size_t copies = 1)
{
  bench::plain_parallel_io(
    write, o.file, open_flags, buf, {o.size, o.task_size, o.threads, copies});
}

/// The memory one run moves data through. Ours reads into and writes from `ours_dst` /
/// `ours_src` (host or device memory); the limit loop moves the same bytes through host memory
/// of the kind the data must pass through anyway: the same pageable buffers for host memory,
/// pinned memory for device memory (whose extra hop, the PCIe copy, is timed on its own).
class BenchBuffers {
 public:
  BenchBuffers(std::size_t size, bool device, int ordinal = 0)
    : size_(size), expected_(size), host_dst_(size)
  {
    fill_random(expected_.data.get(), size);
    if (!device) {
      ours_src_ = limit_src_ = expected_.data.get();
      ours_dst_ = limit_dst_ = host_dst_.data.get();
      return;
    }
    pinned_.emplace(size);
    device_src_.emplace(size, ordinal);
    device_dst_.emplace(size, ordinal);
    std::memcpy(pinned_->data(), expected_.data.get(), size);
    device_src_->copy_from_host(pinned_->data(), size);
    ours_src_  = static_cast<char*>(device_src_->data());
    ours_dst_  = static_cast<char*>(device_dst_->data());
    limit_src_ = limit_dst_ = static_cast<char*>(pinned_->data());
  }

  [[nodiscard]] bool device() const noexcept { return device_src_.has_value(); }
  [[nodiscard]] char* ours_src() const noexcept { return ours_src_; }
  [[nodiscard]] char* ours_dst() const noexcept { return ours_dst_; }
  [[nodiscard]] char* limit_src() const noexcept { return limit_src_; }
  [[nodiscard]] char* limit_dst() const noexcept { return limit_dst_; }
  [[nodiscard]] const char* expected() const noexcept { return expected_.data.get(); }

  /// Overwrites what a read must fill, so that a check afterwards proves the read wrote it.
  void poison_destination()
  {
    std::memset(host_dst_.data.get(), 0xA5, size_);
    if (device()) { device_dst_->copy_from_host(host_dst_.data.get(), size_); }
  }
  /// True when the read destination holds the bytes that were written.
  bool destination_matches()
  {
    if (device()) { device_dst_->copy_to_host(host_dst_.data.get(), size_); }
    return std::memcmp(host_dst_.data.get(), expected_.data.get(), size_) == 0;
  }
  /// Seconds for one pinned host -> device copy of every byte (device memory only).
  double time_host_to_device_copy()
  {
    return bench::seconds_of([&] { device_dst_->copy_from_host(pinned_->data(), size_); });
  }

 private:
  std::size_t size_;
  HostBuffer expected_, host_dst_;
  std::optional<PinnedBuffer> pinned_;
  std::optional<DeviceBuffer> device_src_, device_dst_;
  char *ours_src_{}, *ours_dst_{}, *limit_src_{}, *limit_dst_{};
};

struct Result {
  std::string op;
  double ours_gbps;
  double limit_gbps;
  double pcie_gbps;  // device reads only: the pinned host -> device copy of the same bytes
  std::vector<double> ours_runs, limit_runs, pcie_runs;
  // --devices reads: each device's GB/s (its bytes over the time until its read completed);
  // ours_gbps is then the aggregate (all bytes over the wall time).
  std::vector<std::pair<int, double>> device_gbps;
};

/// One read of the whole file into each device's buffer at once: one pread per device, all
/// issued before any is waited for. Returns the wall time; `done[i]` gets the seconds until
/// device i's future completed.
double multi_device_read(const std::string& path,
                         std::vector<DeviceBuffer>& bufs,
                         std::size_t size,
                         std::vector<double>& done)
{
  FileHandle f(path, "r");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::future<std::size_t>> futures;
  for (auto& b : bufs) {
    futures.push_back(f.pread(b.data(), size, 0));
  }
  // One waiter per future, so each device's completion time is its own and not the time its
  // turn came in a sequential wait.
  std::vector<std::exception_ptr> errors(bufs.size());
  std::vector<std::thread> waiters;
  done.assign(bufs.size(), 0);
  for (std::size_t i = 0; i < futures.size(); ++i) {
    waiters.emplace_back([&, i] {
      try {
        futures[i].get();
      } catch (...) {
        errors[i] = std::current_exception();
      }
      done[i] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    });
  }
  for (auto& w : waiters) {
    w.join();
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (auto& e : errors) {
    if (e) { std::rethrow_exception(e); }
  }
  return wall;
}

void progress(const std::string& line) { bench::progress("kvikio bench", line); }

/// The --devices read: every repetition reads the file into each device's buffer at once,
/// next to the plain loop reading the file once per device into pinned memory.
Result run_multi_read(const Options& o,
                      BenchBuffers& buffers,
                      std::vector<DeviceBuffer>& bufs,
                      int plain_flags)
{
  const std::size_t n = bufs.size();
  Result r{"read", 0, 0, 0, {}, {}, {}, {}};
  std::vector<std::vector<double>> device_runs(n);
  std::vector<char> check(o.size);
  for (unsigned int rep = 1; rep <= o.repetitions; ++rep) {
    progress("read on " + std::to_string(n) + " devices " + std::to_string(rep) + "/" +
             std::to_string(o.repetitions));
    const bool first = rep == 1;
    if (first) {
      std::memset(check.data(), 0xA5, o.size);
      for (auto& b : bufs) {
        b.copy_from_host(check.data(), o.size);
      }
    }
    std::vector<double> done;
    r.ours_runs.push_back(multi_device_read(o.file, bufs, o.size, done));
    for (std::size_t i = 0; i < n; ++i) {
      device_runs[i].push_back(done[i]);
    }
    if (first) {
      for (std::size_t i = 0; i < n; ++i) {
        bufs[i].copy_to_host(check.data(), o.size);
        if (std::memcmp(check.data(), buffers.expected(), o.size) != 0) {
          throw Error("benchmark read into device " + std::to_string(o.devices[i]) +
                      " different bytes than were written to " + o.file);
        }
      }
    }
    r.limit_runs.push_back(
      bench::seconds_of([&] { plain_parallel_io(false, plain_flags, buffers.limit_dst(), o, n); }));
  }
  const double gb = static_cast<double>(o.size) / 1e9;
  r.ours_gbps     = gb * static_cast<double>(n) / bench::median(r.ours_runs);
  r.limit_gbps    = gb * static_cast<double>(n) / bench::median(r.limit_runs);
  for (std::size_t i = 0; i < n; ++i) {
    r.device_gbps.emplace_back(o.devices[i], gb / bench::median(device_runs[i]));
  }
  return r;
}

/// The first line of `path` that starts with `key`, after the key and ": " (empty if none).
std::string proc_field(const char* path, std::string_view key)
{
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) { continue; }
    auto colon = line.find(':');
    if (colon == std::string::npos) { return {}; }
    auto value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    return value;
  }
  return {};
}

/// Where and when the numbers were measured, for the JSON: results are only comparable with
/// the machine they came from (the documentation's benchmarks page shows both).
void write_machine_and_date(bench::JsonWriter& json)
{
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  utsname uts{};
  uname(&uts);
  json.key("machine")
    .begin_object()
    .field("host", std::string(host))
    .field("cpu", proc_field("/proc/cpuinfo", "model name"))
    .field("cores", std::thread::hardware_concurrency())
    .field("memory", proc_field("/proc/meminfo", "MemTotal"))
    .field("gpus", device_count())
    .field("os", std::string(uts.sysname) + " " + uts.release)
    .end_object();
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &utc);
  json.field("date", std::string(date));
}

}  // namespace

int run_bench(int argc, char** argv, int first)
{
  Options o;
  try {
    o = parse(argc, argv, first);
  } catch (const std::invalid_argument& e) {
    std::cerr << "kvikio bench: " << e.what() << "\n";
    return 2;
  }
  if (!o.remote.empty()) {
    if (o.direct_io || !o.file.empty() || o.keep_file ||
        o.ops != std::vector<std::string>{"write", "read"}) {
      std::cerr << "kvikio bench: --direct-io, --file, --keep-file and --ops do not apply to "
                   "--remote (it reads only)\n";
      return 2;
    }
    return run_bench_remote({o.remote,
                             o.remote_server,
                             o.size,
                             o.size_given,
                             o.threads,
                             o.task_size,
                             o.repetitions,
                             o.json,
                             o.pattern,
                             o.io_size,
                             o.count_given ? o.count : 1000});
  }
  const bool temporary = o.file.empty();
  if (temporary) {
    o.file =
      (std::filesystem::current_path() / ("kvikio-bench-" + std::to_string(::getpid()) + ".bin"))
        .string();
  }
  // Remove the temporary file on every exit path, error included.
  struct Cleanup {
    std::string path;
    bool active;
    ~Cleanup()
    {
      if (active) { std::filesystem::remove(path); }
    }
  } cleanup{o.file, temporary && !o.keep_file};

  defaults::set_num_threads(o.threads);
  defaults::set_task_size(o.task_size);
  defaults::set_auto_direct_io_read(o.direct_io);
  defaults::set_auto_direct_io_write(o.direct_io);

  const bool device = o.memory == "device" || (o.memory == "auto" && device_count() > 0);
  o.memory          = device ? "device" : "host";
  if (!o.devices.empty()) {
    if (!device) {
      std::cerr << "kvikio bench: --devices needs device memory (--memory " << o.memory << ", "
                << device_count() << " CUDA device(s) usable)\n";
      return 2;
    }
    for (int d : o.devices) {
      if (d >= device_count()) {
        std::cerr << "kvikio bench: --devices: device " << d << " does not exist ("
                  << device_count() << " CUDA device(s): 0.." << device_count() - 1 << ")\n";
        return 2;
      }
    }
  }
  const bool multi = !o.devices.empty();
  progress("file " + o.file + ", " + format_bytes(static_cast<double>(o.size)) + ", " +
           std::to_string(o.threads) + " threads, task size " +
           format_bytes(static_cast<double>(o.task_size)) + ", " + o.memory + " memory, " +
           (o.direct_io ? "Direct IO" : "page cache"));
  BenchBuffers buffers(o.size, device, multi ? o.devices.front() : 0);
  std::vector<DeviceBuffer> multi_bufs;
  for (int d : o.devices) {
    multi_bufs.emplace_back(o.size, d);
  }

  const int plain_flags = o.direct_io ? O_DIRECT : 0;
  // Lay the file down once, untimed, so that both sides overwrite an existing file.
  {
    FileHandle f(o.file, "w");
    f.pwrite(buffers.ours_src(), o.size, 0).get();
  }
  if (o.pattern == "many") {
    return run_bench_many({o.file, o.size, o.threads, device, o.repetitions, o.json});
  }
  if (o.pattern == "random" || o.pattern == "open") {
    const RandomBenchOptions ro{
      o.file, o.size, o.io_size, o.count, o.threads, device, o.repetitions, o.json};
    return o.pattern == "open" ? run_bench_open(ro) : run_bench_random(ro);
  }
  const double gb = static_cast<double>(o.size) / 1e9;
  std::vector<Result> results;
  for (const auto& op : o.ops) {
    const bool write = op == "write";
    Result r{op, 0, 0, 0, {}, {}, {}, {}};
    if (!write && !o.direct_io) {
      // Through the page cache itself: a read through the library may go through cuFile,
      // whose O_DIRECT reads would leave the cache as cold as it was.
      progress("warming the page cache");
      plain_parallel_io(false, 0, buffers.limit_dst(), o);
    }
    if (!write && multi) {
      r = run_multi_read(o, buffers, multi_bufs, plain_flags);
      results.push_back(r);
      continue;
    }
    for (unsigned int rep = 1; rep <= o.repetitions; ++rep) {
      progress(op + " " + std::to_string(rep) + "/" + std::to_string(o.repetitions));
      const bool check = !write && rep == 1;
      if (check) { buffers.poison_destination(); }
      auto run_ours = [&] {
        r.ours_runs.push_back(bench::seconds_of([&] {
          FileHandle f(o.file, write ? "r+" : "r");
          if (write) {
            f.pwrite(buffers.ours_src(), o.size, 0).get();
          } else {
            f.pread(buffers.ours_dst(), o.size, 0).get();
          }
        }));
        if (check && !buffers.destination_matches()) {
          throw Error("benchmark read back different bytes than were written to " + o.file);
        }
      };
      auto run_limit = [&] {
        r.limit_runs.push_back(bench::seconds_of([&] {
          plain_parallel_io(
            write, plain_flags, write ? buffers.limit_src() : buffers.limit_dst(), o);
        }));
      };
      // Take turns going first: a disk (or a virtual disk's host cache) that favours the
      // second reader of a file must not favour one side.
      if (rep % 2 == 1) {
        run_ours();
        run_limit();
      } else {
        run_limit();
        run_ours();
      }
      if (!write && device) { r.pcie_runs.push_back(buffers.time_host_to_device_copy()); }
    }
    r.ours_gbps  = gb / bench::median(r.ours_runs);
    r.limit_gbps = gb / bench::median(r.limit_runs);
    r.pcie_gbps  = r.pcie_runs.empty() ? 0 : gb / bench::median(r.pcie_runs);
    results.push_back(r);
  }
  // The pinned memory the bounce buffers took, against the bound the design promises.
  const auto peak_pinned  = bounce_buffer_stats().peak_pinned_bytes;
  const auto pinned_bound = static_cast<std::size_t>(o.threads) * defaults::bounce_buffer_size();

  if (o.json) {
    bench::JsonWriter json;
    json.begin_object()
      .field("file", o.file)
      .field("size", o.size)
      .field("threads", o.threads)
      .field("task_size", o.task_size)
      .field("direct_io", o.direct_io)
      .field("memory", o.memory)
      .field("repetitions", o.repetitions)
      .field("peak_pinned_bytes", peak_pinned)
      .field("pinned_bound_bytes", pinned_bound);
    write_machine_and_date(json);
    json.key("results").begin_array();
    for (const auto& r : results) {
      json.begin_object()
        .field("op", r.op)
        .field("kvikio_gbps", r.ours_gbps)
        .field("limit_gbps", r.limit_gbps)
        .field("ratio", r.ours_gbps / r.limit_gbps);
      if (r.pcie_gbps > 0) {
        json.field("pcie_copy_gbps", r.pcie_gbps).field("ratio_to_pcie", r.ours_gbps / r.pcie_gbps);
      }
      if (!r.device_gbps.empty()) {
        // kvikio_gbps above is the aggregate; the same number again under its own name.
        json.field("aggregate_gbps", r.ours_gbps)
          .field("bytes_per_device", o.size)
          .key("devices")
          .begin_array();
        for (const auto& [dev, gbps] : r.device_gbps) {
          json.begin_object().field("device", dev).field("kvikio_gbps", gbps).end_object();
        }
        json.end_array();
      }
      json.end_object();
    }
    json.end_array().end_object();
    std::printf("%s\n", json.str().c_str());
    return 0;
  }
  const char* via = device ? " into pinned" : "";
  bench::print_table_header();
  for (const auto& r : results) {
    if (!r.device_gbps.empty()) {
      for (const auto& [dev, gbps] : r.device_gbps) {
        bench::print_table_note_row(
          r.op, "dev " + std::to_string(dev), gbps, "(its bytes / time to its completion)");
      }
      bench::print_table_row(r.op,
                             "all",
                             r.ours_gbps,
                             r.limit_gbps,
                             "pread x" + std::to_string(r.device_gbps.size()) + " into pinned");
      continue;
    }
    const std::string limit_name =
      std::string(r.op == "read" ? "pread" : "pwrite") +
      (device ? (r.op == "read" ? " into pinned" : " from pinned") : "");
    bench::print_table_row(r.op, o.memory, r.ours_gbps, r.limit_gbps, limit_name);
    if (r.pcie_gbps > 0) {
      bench::print_table_row(r.op, o.memory, r.ours_gbps, r.pcie_gbps, "pinned->device copy");
    }
  }
  std::printf(
    "(%s, %u threads, task size %s, %s, median of %u; limit = plain parallel pread/pwrite loop "
    "over the same file%s)\n",
    format_bytes(static_cast<double>(o.size)).c_str(),
    o.threads,
    format_bytes(static_cast<double>(o.task_size)).c_str(),
    o.direct_io ? "O_DIRECT" : "page cache",
    o.repetitions,
    via);
  if (device) {
    std::printf("peak pinned bounce-buffer memory: %s (bound: %u threads x %s = %s)%s\n",
                format_bytes(static_cast<double>(peak_pinned)).c_str(),
                o.threads,
                format_bytes(static_cast<double>(defaults::bounce_buffer_size())).c_str(),
                format_bytes(static_cast<double>(pinned_bound)).c_str(),
                peak_pinned <= pinned_bound ? "" : "  OVER THE BOUND");
  }
  return 0;
}

}  // namespace kvikio::tool

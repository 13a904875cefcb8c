// Device-memory throughput against the machine's own limits, measured side by side in one
// run: hot reads into device memory vs parallel pread into pinned memory, writes from device
// memory vs pinned-memory writes, cold Direct IO reads vs plain O_DIRECT reads, copy-engine
// limits, and the pinned memory the bounce-buffer pool used.
//
// usage: kvikio_device_bench FILE SIZE_MIB THREADS
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/device_memory.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/shim.hpp>

namespace {

double seconds(const std::function<void()>& f)
{
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double best_gbps(std::size_t bytes, int reps, const std::function<void()>& f)
{
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    best = std::min(best, seconds(f));
  }
  return static_cast<double>(bytes) / best / 1e9;
}

void row(const char* name, double gbps, const char* limit_name, double limit)
{
  std::printf("RESULT %-40s %8.2f GB/s   %-34s %8.2f GB/s   ratio %.2f\n",
              name,
              gbps,
              limit_name,
              limit,
              limit > 0 ? gbps / limit : 0.0);
  std::fflush(stdout);
}

void drop_cache(const std::string& path)
{
  try {
    kvikio::drop_system_page_cache();
  } catch (...) {
    kvikio::drop_file_page_cache(path);
  }
}

/// Plain parallel O_DIRECT pread of the whole file into pinned memory, 16 MiB pieces.
void odirect_read(const std::string& path, char* dst, std::size_t size, unsigned threads)
{
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECT);
  if (fd < 0) {
    std::perror("open O_DIRECT");
    std::exit(1);
  }
  constexpr std::size_t piece = 16 << 20;
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (std::size_t off; (off = next.fetch_add(piece)) < size;) {
        std::size_t n    = std::min(piece, size - off);
        std::size_t done = 0;
        while (done < n) {
          ssize_t r = ::pread(fd, dst + off + done, n - done, static_cast<off_t>(off + done));
          if (r <= 0) {
            std::perror("pread O_DIRECT");
            std::exit(1);
          }
          done += static_cast<std::size_t>(r);
        }
      }
    });
  }
  for (auto& t : pool) {
    t.join();
  }
  ::close(fd);
}

}  // namespace

int run(int argc, char** argv)
{
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s FILE SIZE_MIB THREADS\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const std::size_t size = std::strtoull(argv[2], nullptr, 10) << 20;
  const auto threads     = static_cast<unsigned>(std::atoi(argv[3]));
  for (const auto& s : kvikio::library_status()) {
    std::printf("%-10s %-6s %s\n", s.library.c_str(), s.loaded ? "yes" : "no", s.reason.c_str());
  }
  kvikio::defaults::set_num_threads(threads);
  const std::size_t bbs = kvikio::defaults::bounce_buffer_size();

  kvikio::PinnedBuffer pinned(size);
  kvikio::DeviceBuffer dev(size);
  {
    auto* p = static_cast<std::uint64_t*>(pinned.data());
    std::vector<std::thread> fill;
    const std::size_t words = size / 8;
    for (unsigned t = 0; t < threads; ++t) {
      fill.emplace_back([=] {
        std::uint64_t x = 0x9E3779B97F4A7C15ULL * (t + 1);
        for (std::size_t i = words * t / threads; i < words * (t + 1) / threads; ++i) {
          x ^= x << 13;
          x ^= x >> 7;
          x ^= x << 17;
          p[i] = x;
        }
      });
    }
    for (auto& t : fill) {
      t.join();
    }
  }
  const double h2d = best_gbps(size, 2, [&] { dev.copy_from_host(pinned.data(), size); });
  const double d2h = best_gbps(size, 2, [&] { dev.copy_to_host(pinned.data(), size); });
  row("copy pinned->device (cuMemcpyHtoD)", h2d, "-", 0);
  row("copy device->pinned (cuMemcpyDtoH)", d2h, "-", 0);

  // Writes, new file each time: pinned memory (the limit) then device memory, POSIX path.
  auto write_from = [&](const void* buf) {
    kvikio::FileHandle f(path, "w", kvikio::FileHandle::m644, kvikio::CompatMode::ON);
    f.pwrite(buf, size, 0).get();
    ::fsync(f.fd());
  };
  // Alternate, and start each from no file: truncating a 4 GiB file (ext4 with discard)
  // costs the next writer time, which would favour whichever ran first.
  double w_pinned = 0, w_dev = 0;
  for (int round = 0; round < 2; ++round) {
    ::unlink(path.c_str());
    w_pinned = std::max(w_pinned, best_gbps(size, 1, [&] { write_from(pinned.data()); }));
    ::unlink(path.c_str());
    w_dev = std::max(w_dev, best_gbps(size, 1, [&] { write_from(dev.data()); }));
  }
  row("write device->file (posix, 16 thr)", w_dev, "write pinned->file (pwrite)", w_pinned);

  // Hot page cache: warm it, then parallel pread into pinned memory vs read into device.
  {
    kvikio::FileHandle f(path, "r", kvikio::FileHandle::m644, kvikio::CompatMode::ON);
    f.pread(pinned.data(), size, 0).get();  // warm-up
    const double r_pinned = best_gbps(size, 3, [&] { f.pread(pinned.data(), size, 0).get(); });
    const double r_dev    = best_gbps(size, 3, [&] { f.pread(dev.data(), size, 0).get(); });
    row("hot read file->device (posix)", r_dev, "hot pread file->pinned", r_pinned);
    row("hot read file->device (posix) vs PCIe", r_dev, "copy pinned->device", h2d);
    std::vector<char> check(1 << 20);
    dev.copy_to_host(check.data(), check.size(), size - check.size());
    if (std::memcmp(check.data(),
                    static_cast<char*>(pinned.data()) + size - check.size(),
                    check.size()) != 0) {
      std::printf("ERROR: device data differs from the file\n");
      return 1;
    }
  }
  if (kvikio::is_cufile_available()) {
    try {
      kvikio::FileHandle f(path, "r", kvikio::FileHandle::m644, kvikio::CompatMode::OFF);
      const double r_cufile = best_gbps(size, 1, [&] { f.pread(dev.data(), size, 0).get(); });
      row("read file->device (cuFile)", r_cufile, "hot read file->device (posix)", 0);
    } catch (const std::exception& e) {
      std::printf("cuFile read skipped: %s\n", e.what());
    }
  }

  // Cold reads: plain O_DIRECT into pinned memory vs Direct IO into device memory.
  drop_cache(path);
  const double c_plain = best_gbps(
    size, 1, [&] { odirect_read(path, static_cast<char*>(pinned.data()), size, threads); });
  kvikio::defaults::set_auto_direct_io_read(true);
  drop_cache(path);
  const double c_dev = best_gbps(size, 1, [&] {
    kvikio::FileHandle f(path, "r", kvikio::FileHandle::m644, kvikio::CompatMode::ON);
    f.pread(dev.data(), size, 0, 16 << 20).get();
  });
  row("cold Direct IO read file->device", c_dev, "cold plain O_DIRECT pread->pinned", c_plain);
  kvikio::defaults::set_auto_direct_io_read(false);

  const auto stats = kvikio::bounce_buffer_stats();
  std::printf("RESULT %-40s %8.1f MiB   bound num_threads x bounce_buffer_size %8.1f MiB\n",
              "peak pinned bounce memory",
              static_cast<double>(stats.peak_pinned_bytes) / (1 << 20),
              static_cast<double>(threads * bbs) / (1 << 20));
  return 0;
}

int main(int argc, char** argv)
{
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::printf("ERROR: %s\n", e.what());
    return 1;
  }
}

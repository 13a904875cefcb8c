#pragma once
// `kvikio bench --remote URL|local`: RemoteHandle::pread next to plain parallel libcurl range
// requests over the same bytes, in the same run.
#include <cstddef>
#include <string>

namespace kvikio::tool {

/// What `kvikio bench` parsed that the remote benchmark uses.
struct RemoteBenchOptions {
  /// An http(s)/S3/WebHDFS URL (any kind RemoteHandle::open infers), or "local": write a
  /// file of random bytes and serve it on loopback from nginx (PATH or /usr/sbin/nginx),
  /// falling back to range_server.py (embedded in the tool) run with python3.
  std::string target;
  /// "nginx" (default; falls back to python when nginx is missing) or "python".
  std::string server{"nginx"};
  std::size_t size{};  ///< bytes read per run (at most the object's size)
  bool size_given{false};
  unsigned int threads{1};
  std::size_t task_size{};
  unsigned int repetitions{3};
  bool json{false};
  /// "sequential": one pread of `size` bytes; "random": `count` reads of `io_size` bytes at
  /// random offsets, as one pread_batch (on each remote IO backend), one by one
  /// (pread().get() each) and as plain curl multi range GETs of the same concurrency.
  std::string pattern{"sequential"};
  std::size_t io_size{64 << 10};
  std::size_t count{1000};
};

/// Runs the remote benchmark and prints the table (or JSON); returns the exit code.
/// Blocking. Throws std::invalid_argument for bad options, kvikio errors for failed reads.
int run_bench_remote(const RemoteBenchOptions& o);

}  // namespace kvikio::tool

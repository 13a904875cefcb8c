#pragma once
// `kvikio bench --pattern many`: many preads in flight, each into a buffer of its own, all
// issued before the first get(), against one pread of the same bytes (issue 28).
#include <cstddef>
#include <string>

namespace kvikio::tool {

struct ManyBenchOptions {
  std::string file;  // created, filled with random bytes and removed by the caller
  std::size_t size;  // of the file: the largest case reads at most this much
  unsigned threads;
  bool device;  // read into device memory
  unsigned repetitions;
  bool json;
};

/// Runs the cases (1 x 1 GiB, 8 x 32 MiB, 128 x 32 MiB, 128 x 8 MiB, 512 x 1 MiB,
/// 4096 x 256 KiB and a checkpoint's mix, each cut to fit `o.size`) on `o.file`; returns the
/// exit code.
int run_bench_many(const ManyBenchOptions& o);

}  // namespace kvikio::tool

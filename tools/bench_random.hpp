#pragma once
// `kvikio bench --pattern random`: many small reads at random offsets of a hot file, through
// single calls, pread().get() one at a time and one batch call, next to plain pread loops.
#include <cstddef>
#include <string>

namespace kvikio::tool {

struct RandomBenchOptions {
  std::string file;  // created, filled with random bytes and removed by the caller
  std::size_t size;  // of the file
  std::size_t io_size;
  std::size_t count;  // reads per timed run
  unsigned threads;
  bool device;  // read into device memory
  unsigned repetitions;
  bool json;
};

/// Runs the benchmark on `o.file` (already holding o.size bytes); returns the exit code.
int run_bench_random(const RandomBenchOptions& o);

/// `kvikio bench --pattern open`: open `o.file`, read o.io_size bytes at offset 0 and close it,
/// through FileHandle (host memory, and device memory with o.device) against plain
/// open+pread+close, in the same run; returns the exit code.
int run_bench_open(const RandomBenchOptions& o);

}  // namespace kvikio::tool

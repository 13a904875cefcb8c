#pragma once
// `kvikio bench`: our throughput next to the machine's own limit, measured in the same run.
#include <string>

namespace kvikio::tool {

/// Runs the benchmark described by the command line (argv after "bench"); returns the exit code.
int run_bench(int argc, char** argv, int first);

}  // namespace kvikio::tool

#pragma once
// Timing helpers shared by the benchmarks (the `kvikio` tool and kvikio._bench).
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace kvikio::bench {

/// Wall-clock seconds that `fn` takes.
inline double seconds_of(const std::function<void()>& fn)
{
  auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The median of `v` (not empty).
inline double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace kvikio::bench

#pragma once
// The "plain parallel curl" baseline that remote benchmarks compare RemoteHandle against. It
// lives in the benchmark library, not in libkvikio: the product carries no benchmark code.
#include <cstddef>
#include <string>

namespace kvikio::bench {

/// Fetches [file_offset, file_offset + size) of the http(s) `url` into the host buffer `buf`
/// the way a careful user of bare libcurl would: `nthreads` std::threads, each with one easy
/// handle reused for all its requests, taking consecutive `task_size` byte ranges from a
/// shared counter and writing each range's body straight into place. Same receive-buffer
/// size as RemoteHandle; no retries, no signing, no kvikio thread pool or settings.
///
/// Blocking. Returns `size`. Throws std::runtime_error naming the URL and range when a
/// request fails, answers other than 206, or delivers a body of the wrong length.
///
/// For the benchmark tool (`kvikio bench --remote URL`): time this and RemoteHandle::pread on
/// the same bytes in the same run (warm both first), and report RemoteHandle's throughput as
/// a ratio of this one's.
std::size_t curl_parallel_range_get(const std::string& url,
                                    void* buf,
                                    std::size_t size,
                                    std::size_t file_offset,
                                    std::size_t task_size,
                                    unsigned nthreads);

}  // namespace kvikio::bench

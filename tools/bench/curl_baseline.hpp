#pragma once
// The "plain parallel curl" baseline that remote benchmarks compare RemoteHandle against. It
// lives in the benchmark library, not in libkvikio: the product carries no benchmark code.
#include <cstddef>
#include <string>
#include <vector>

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

/// One range of curl_multi_ranges_get: `size` bytes at `file_offset` into `buf`.
struct CurlRange {
  void* buf;
  std::size_t size;
  std::size_t file_offset;
};

/// Reads every range of `url` with bare libcurl: one multi handle on the calling thread, one
/// range GET per range, at most `max_concurrent` in flight (0: all at once), reusing the
/// multi handle's connections. The limit for RemoteHandle::pread_batch with MULTI_POLL (and,
/// at the pool's size, with EASY_THREADPOOL). Throws std::runtime_error naming the first range
/// that failed (a transport error, a status other than 206, a body of the wrong length).
std::size_t curl_multi_ranges_get(const std::string& url,
                                  const std::vector<CurlRange>& ranges,
                                  unsigned max_concurrent);

}  // namespace kvikio::bench

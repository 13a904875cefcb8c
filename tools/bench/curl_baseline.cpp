// curl_parallel_range_get: bare libcurl, one easy handle per thread, no kvikio code.
#include "curl_baseline.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kvikio::bench {
namespace {

struct Dest {
  char* ptr;
  std::size_t capacity;
  std::size_t got;
};

std::size_t write_into(char* data, std::size_t size, std::size_t n, void* user)
{
  auto* d  = static_cast<Dest*>(user);
  auto len = size * n;
  if (d->got + len > d->capacity) { return 0; }
  std::memcpy(d->ptr + d->got, data, len);
  d->got += len;
  return len;
}

}  // namespace

std::size_t curl_parallel_range_get(const std::string& url,
                                    void* buf,
                                    std::size_t size,
                                    std::size_t file_offset,
                                    std::size_t task_size,
                                    unsigned nthreads)
{
  if (size == 0) { return 0; }
  if (task_size == 0 || nthreads == 0) {
    throw std::invalid_argument("curl_parallel_range_get: task_size and nthreads must be > 0");
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);
  const std::size_t ntasks = (size + task_size - 1) / task_size;
  std::atomic<std::size_t> next{0};
  std::mutex error_mutex;
  std::string first_error;
  auto worker = [&] {
    CURL* h = curl_easy_init();
    if (h == nullptr) {
      std::lock_guard lock(error_mutex);
      first_error = "curl_easy_init failed";
      return;
    }
    for (std::size_t i = next++; i < ntasks; i = next++) {
      const std::size_t begin = i * task_size;
      const std::size_t len   = std::min(task_size, size - begin);
      std::string range =
        std::to_string(file_offset + begin) + "-" + std::to_string(file_offset + begin + len - 1);
      Dest d{static_cast<char*>(buf) + begin, len, 0};
      curl_easy_setopt(h, CURLOPT_URL, url.c_str());
      curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L * 1024);
      curl_easy_setopt(h, CURLOPT_RANGE, range.c_str());
      curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_into);
      curl_easy_setopt(h, CURLOPT_WRITEDATA, &d);
      CURLcode rc = curl_easy_perform(h);
      long status = 0;
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
      if (rc != CURLE_OK || status != 206 || d.got != len) {
        std::lock_guard lock(error_mutex);
        if (first_error.empty()) {
          first_error = "curl_parallel_range_get: GET bytes=" + range + " of " + url + ": " +
                        curl_easy_strerror(rc) + ", HTTP status " + std::to_string(status) + ", " +
                        std::to_string(d.got) + " of " + std::to_string(len) + " bytes";
        }
        next = ntasks;  // stop the other threads early
        break;
      }
    }
    curl_easy_cleanup(h);
  };
  std::vector<std::thread> threads;
  const unsigned n = static_cast<unsigned>(std::min<std::size_t>(nthreads, ntasks));
  threads.reserve(n);
  for (unsigned t = 0; t < n; ++t) {
    threads.emplace_back(worker);
  }
  for (auto& t : threads) {
    t.join();
  }
  if (!first_error.empty()) { throw std::runtime_error(first_error); }
  return size;
}

}  // namespace kvikio::bench

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

std::size_t curl_multi_ranges_get(const std::string& url,
                                  const std::vector<CurlRange>& ranges,
                                  unsigned max_concurrent)
{
  curl_global_init(CURL_GLOBAL_DEFAULT);
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) { throw std::runtime_error("curl_multi_init failed"); }
  struct Transfer {
    CURL* easy{nullptr};
    Dest dest{};
    std::string range;
    std::size_t index{0};
  };
  std::vector<Transfer> slots(
    max_concurrent == 0 ? ranges.size() : std::min<std::size_t>(max_concurrent, ranges.size()));
  std::vector<Transfer*> idle;
  for (auto& t : slots) {
    t.easy = curl_easy_init();
    if (t.easy == nullptr) { throw std::runtime_error("curl_easy_init failed"); }
    idle.push_back(&t);
  }
  std::size_t next = 0, total = 0;
  std::string first_error;
  auto start = [&](Transfer* t) {
    const auto& r = ranges[next];
    t->index      = next++;
    t->dest       = Dest{static_cast<char*>(r.buf), r.size, 0};
    t->range = std::to_string(r.file_offset) + "-" + std::to_string(r.file_offset + r.size - 1);
    curl_easy_setopt(t->easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(t->easy, CURLOPT_BUFFERSIZE, 512L * 1024);
    curl_easy_setopt(t->easy, CURLOPT_RANGE, t->range.c_str());
    curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, write_into);
    curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, &t->dest);
    curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
    curl_multi_add_handle(multi, t->easy);
  };
  int running = 0;
  for (;;) {
    while (!idle.empty() && next < ranges.size() && first_error.empty()) {
      start(idle.back());
      idle.pop_back();
    }
    if (idle.size() == slots.size()) { break; }  // nothing in flight, nothing left
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
      if (msg->msg != CURLMSG_DONE) { continue; }
      Transfer* t = nullptr;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
      const CURLcode rc = msg->data.result;
      long status       = 0;
      curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
      curl_multi_remove_handle(multi, t->easy);
      const std::size_t want = ranges[t->index].size;
      if ((rc != CURLE_OK || status != 206 || t->dest.got != want) && first_error.empty()) {
        first_error = "curl_multi_ranges_get: GET bytes=" + t->range + " of " + url + ": " +
                      curl_easy_strerror(rc) + ", HTTP status " + std::to_string(status);
      }
      total += t->dest.got;
      idle.push_back(t);
    }
    const bool in_flight = idle.size() < slots.size();
    if (in_flight && (idle.empty() || next == ranges.size() || !first_error.empty())) {
      curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
    }
  }
  for (auto& t : slots) {
    curl_easy_cleanup(t.easy);
  }
  curl_multi_cleanup(multi);
  if (!first_error.empty()) { throw std::runtime_error(first_error); }
  return total;
}

}  // namespace kvikio::bench

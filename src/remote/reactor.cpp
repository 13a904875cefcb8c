#include "remote/reactor.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <kvikio/defaults.hpp>

#include "remote/curl_handle.hpp"

namespace kvikio::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Longest curl_multi_poll wait: libcurl asks for less when its own timers need it, and a
// wakeup cuts it short when work arrives.
constexpr int max_poll_ms = 1000;

/// A job under way: its transfer, and when it waits for a retry, the time to start again.
struct Active {
  RangeJob job;
  std::unique_ptr<RangeTransfer> transfer;
  Clock::time_point retry_at{};
};

class Reactor {
 public:
  Reactor()
  {
    curl_init_once();
    multi_ = curl_multi_init();
    if (multi_ == nullptr) { throw Error("kvikio: curl_multi_init() failed"); }
    thread_ = std::thread([this] { loop(); });
  }
  Reactor(const Reactor&)            = delete;
  Reactor& operator=(const Reactor&) = delete;
  // Reactors live as long as the process (see reactors()): never destroyed.
  ~Reactor() = delete;

  void submit(std::vector<RangeJob> jobs)
  {
    {
      std::lock_guard lock(mutex_);
      for (auto& j : jobs) {
        inbox_.push_back(std::move(j));
      }
    }
    curl_multi_wakeup(multi_);
  }

 private:
  // The share of remote_io_max_concurrent_requests this reactor may have in flight (0: no
  // limit). Read on every pass, so a changed setting applies to the next admissions.
  static std::size_t cap()
  {
    const std::size_t total = defaults::remote_io_max_concurrent_requests();
    if (total == 0) { return 0; }
    const std::size_t n = std::max(1U, defaults::remote_io_num_reactors());
    return std::max<std::size_t>(1, (total + n - 1) / n);
  }

  static void complete(Active& a, std::exception_ptr e) noexcept { a.job.done(std::move(e)); }

  // Starts (or restarts, after a retry delay) `a`'s next attempt on the multi handle.
  void launch(std::unique_ptr<Active> a)
  {
    try {
      if (!a->transfer) {
        a->transfer = std::make_unique<RangeTransfer>(
          *a->job.endpoint, a->job.file_offset, a->job.size, a->job.sink);
      }
      CURL* easy = a->transfer->start(false).get();
      auto rc    = curl_multi_add_handle(multi_, easy);
      if (rc != CURLM_OK) {
        throw Error(std::string("kvikio: curl_multi_add_handle() failed: ") +
                    curl_multi_strerror(rc));
      }
      running_.emplace(easy, std::move(a));
    } catch (...) {
      complete(*a, std::current_exception());
      --in_flight_;
    }
  }

  void loop() noexcept
  {
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        while (!inbox_.empty()) {
          pending_.push_back(std::move(inbox_.front()));
          inbox_.pop_front();
        }
      }
      // Admit new jobs up to the cap; jobs waiting for a retry keep their slot.
      const std::size_t limit = cap();
      while (!pending_.empty() && (limit == 0 || in_flight_ < limit)) {
        auto a = std::make_unique<Active>();
        a->job = std::move(pending_.front());
        pending_.pop_front();
        ++in_flight_;
        launch(std::move(a));
      }
      // Retries whose delay has passed.
      const auto now = Clock::now();
      for (auto it = waiting_.begin(); it != waiting_.end();) {
        if ((*it)->retry_at <= now) {
          auto a = std::move(*it);
          it     = waiting_.erase(it);
          launch(std::move(a));
        } else {
          ++it;
        }
      }
      int still_running = 0;
      curl_multi_perform(multi_, &still_running);
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi_, &left)) {
        if (msg->msg != CURLMSG_DONE) { continue; }
        CURL* easy    = msg->easy_handle;
        CURLcode code = msg->data.result;
        auto found    = running_.find(easy);
        curl_multi_remove_handle(multi_, easy);
        if (found == running_.end()) { continue; }
        auto a = std::move(found->second);
        running_.erase(found);
        try {
          auto delay = a->transfer->finish(code);
          if (delay) {
            a->retry_at = Clock::now() + *delay;
            waiting_.push_back(std::move(a));
            continue;
          }
          a->transfer.reset();
          complete(*a, nullptr);
        } catch (...) {
          a->transfer.reset();
          complete(*a, std::current_exception());
        }
        --in_flight_;
      }
      int timeout = max_poll_ms;
      if (!waiting_.empty()) {
        auto next = std::min_element(waiting_.begin(),
                                     waiting_.end(),
                                     [](auto& x, auto& y) { return x->retry_at < y->retry_at; })
                      ->get()
                      ->retry_at;
        auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
        timeout = static_cast<int>(std::clamp<long long>(ms, 0, max_poll_ms));
      }
      bool more_to_admit = !pending_.empty() && (limit == 0 || in_flight_ < limit);
      if (!more_to_admit) { curl_multi_poll(multi_, nullptr, 0, timeout, nullptr); }
    }
  }

  CURLM* multi_{nullptr};
  std::mutex mutex_;
  std::deque<RangeJob> inbox_;  // submitted, not yet seen by the loop (under mutex_)
  // Loop-thread state only:
  std::deque<RangeJob> pending_;  // waiting for a slot under the cap
  std::unordered_map<CURL*, std::unique_ptr<Active>> running_;
  std::list<std::unique_ptr<Active>> waiting_;  // between a failed attempt and its retry
  std::size_t in_flight_{0};                    // running_ + waiting_
  std::thread thread_;
};

// The reactors, started on first use and grown when remote_io_num_reactors grows (never
// shrunk: a reactor with nothing to do sleeps in curl_multi_poll). They are never destroyed:
// one may be mid-request when the process exits, and its jobs hold nothing the exit frees.
// After fork() the child has none of their threads, so it starts reactors of its own.
struct Reactors {
  std::mutex mutex;
  pid_t pid{0};
  std::vector<Reactor*> list;
  std::atomic<std::size_t> next{0};
};

Reactors& reactors()
{
  static auto* r = new Reactors;
  return *r;
}

}  // namespace

void submit_to_reactors(std::vector<RangeJob> jobs)
{
  if (jobs.empty()) { return; }
  auto& r              = reactors();
  const std::size_t n  = std::max(1U, defaults::remote_io_num_reactors());
  const bool per_chunk = defaults::remote_io_reactor_dispatch() == RemoteReactorDispatch::PER_CHUNK;
  std::vector<Reactor*> used;
  try {
    std::lock_guard lock(r.mutex);
    if (r.pid != ::getpid()) {
      r.list.clear();  // the parent's reactors: left as they are, unused
      r.pid = ::getpid();
    }
    while (r.list.size() < n) {
      r.list.push_back(new Reactor);
    }
    used.assign(r.list.begin(), r.list.begin() + static_cast<std::ptrdiff_t>(n));
  } catch (...) {
    auto e = std::current_exception();
    for (auto& j : jobs) {
      j.done(e);
    }
    return;
  }
  if (!per_chunk) {
    used[r.next++ % n]->submit(std::move(jobs));
    return;
  }
  std::vector<std::vector<RangeJob>> shares(n);
  const std::size_t first = r.next.fetch_add(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    shares[(first + i) % n].push_back(std::move(jobs[i]));
  }
  for (std::size_t k = 0; k < n; ++k) {
    if (!shares[k].empty()) { used[k]->submit(std::move(shares[k])); }
  }
}

}  // namespace kvikio::detail

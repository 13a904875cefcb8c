#pragma once
// The one engine for requests that fan out on the pool (pread/pwrite, batches, BatchHandle,
// remote range batches): it counts what is still to finish, sums the bytes, keeps the
// lowest-numbered error, queues the jobs and, once the last part ended, lets the request's
// resources go before the future is ready. What to run, in which pieces, is the client's.
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <future>
#include <limits>
#include <mutex>
#include <new>
#include <utility>

#include <kvikio/threadpool.hpp>

namespace kvikio::detail {

/// Test hook: when >= 0, queueing the job with this index (of one JobGroup::queue_* call)
/// throws std::bad_alloc, as a full heap would. Never set outside tests.
inline std::atomic<int> fail_enqueue_at_for_testing{-1};

/// The lowest-numbered failure among parts that run (or are checked) in parallel. The lock
/// is taken only on a failure.
class FirstError {
 public:
  void record(std::size_t index, std::exception_ptr e)
  {
    std::lock_guard lock(mutex_);
    if (index < index_) {
      index_ = index;
      error_ = std::move(e);
    }
  }
  /// Read once every thread that may record is done (or after a release-acquire handshake
  /// with them).
  [[nodiscard]] const std::exception_ptr& get() const noexcept { return error_; }

 private:
  std::mutex mutex_;
  std::size_t index_{std::numeric_limits<std::size_t>::max()};
  std::exception_ptr error_;
};

/// Jobs on the pool gathered into one future: the sum of the bytes the parts moved, or the
/// error of the lowest-numbered part that failed (every part runs even after one failed).
///
/// The group waits for `pending` completions (done()): jobs, or parts that the jobs take off
/// a cursor of the client's, plus any share the caller holds while it queues. The last one
/// runs `release` and then fulfils the future: `release` drops what the request held (its
/// files), because a job's closure lives a moment longer than its work, and a caller that
/// closes a file right after get() must find its handle the only owner, so that close()
/// closes the descriptors then and reports their errors (a write-back error at close on NFS).
///
/// No allocation or lock beyond the promise's state and the client's own object: the group
/// lives inside the client's shared state, and `release` captures a pointer (std::function
/// keeps that inline).
class JobGroup {
 public:
  explicit JobGroup(std::size_t pending, std::function<void()> release = {})
    : pending_(pending), release_(std::move(release))
  {
  }
  JobGroup(const JobGroup&)            = delete;
  JobGroup& operator=(const JobGroup&) = delete;

  /// The group's future; once only.
  [[nodiscard]] std::future<std::size_t> future() { return promise_.get_future(); }

  void add_bytes(std::size_t n) noexcept { bytes_.fetch_add(n, std::memory_order_relaxed); }
  void record(std::size_t index, std::exception_ptr e) { errors_.record(index, std::move(e)); }
  /// The lowest-numbered error so far; read as FirstError::get says.
  [[nodiscard]] const std::exception_ptr& first_error() const noexcept { return errors_.get(); }

  /// Waits for `n` more completions. Only while a completion is still pending (the caller's
  /// share, a running job's): the group cannot have finished meanwhile.
  void add_pending(std::size_t n) noexcept { pending_.fetch_add(n, std::memory_order_relaxed); }

  /// Ends `n` pending completions; the last runs release() and fulfils the future.
  void done(std::size_t n = 1) noexcept
  {
    if (pending_.fetch_sub(n, std::memory_order_acq_rel) != n) { return; }
    if (release_) { release_(); }
    if (const auto& e = errors_.get()) {
      promise_.set_exception(e);
    } else {
      promise_.set_value(bytes_.load(std::memory_order_relaxed));
    }
  }

  /// Queues `jobs` runs of `job`, each of which calls done() once when it ends (so they are
  /// counted here, before the first is queued: a job may finish before this returns). One
  /// by one: if the first cannot be queued, it throws and nothing runs (the caller may free
  /// its buffers); if a later one cannot, the group shrinks to those queued, which must take
  /// every part between them (a shared cursor). The caller holds a pending share meanwhile.
  template <typename Job>
  void queue_counted(ThreadPool& pool, std::size_t jobs, const Job& job)
  {
    add_pending(jobs);
    for (std::size_t j = 0; j < jobs; ++j) {
      try {
        if (static_cast<int>(j) == fail_enqueue_at_for_testing.load(std::memory_order_relaxed)) {
          throw std::bad_alloc();
        }
        pool.detach_task(job);
      } catch (...) {
        pending_.fetch_sub(jobs - j, std::memory_order_relaxed);  // the caller's share holds
        if (j == 0) { throw; }
        return;
      }
    }
  }

  /// As queue_counted, all at once (ThreadPool::detach_copies: the queue's lock taken once,
  /// only the sleepers needed woken), for a caller that fans one job out over the pool. All
  /// or none: on failure nothing is queued and it throws.
  void queue_copies(ThreadPool& pool, std::size_t jobs, const std::function<void()>& job)
  {
    add_pending(jobs);
    try {
      const int fail_at = fail_enqueue_at_for_testing.load(std::memory_order_relaxed);
      if (fail_at >= 0 && static_cast<std::size_t>(fail_at) < jobs) { throw std::bad_alloc(); }
      pool.detach_copies(jobs, job);
    } catch (...) {
      pending_.fetch_sub(jobs, std::memory_order_relaxed);
      throw;
    }
  }

  /// Queues up to `jobs` runs of `job` that take the parts (each counted in `pending` and
  /// ended by done()) off a shared cursor, so that any number of them completes the group:
  /// one by one; the first failure throws (nothing runs), a later one stops the queueing.
  template <typename Job>
  static void queue_helpers(ThreadPool& pool, std::size_t jobs, const Job& job)
  {
    for (std::size_t j = 0; j < jobs; ++j) {
      try {
        if (static_cast<int>(j) == fail_enqueue_at_for_testing.load(std::memory_order_relaxed)) {
          throw std::bad_alloc();
        }
        pool.detach_task(job);
      } catch (...) {
        if (j == 0) { throw; }
        return;
      }
    }
  }

 private:
  std::atomic<std::size_t> pending_;
  std::atomic<std::size_t> bytes_{0};
  FirstError errors_;
  std::function<void()> release_;
  std::promise<std::size_t> promise_;
};

/// A future that is already ready with `value`.
inline std::future<std::size_t> ready_future(std::size_t value)
{
  std::promise<std::size_t> p;
  p.set_value(value);
  return p.get_future();
}

}  // namespace kvikio::detail

#pragma once
/// @file threadpool.hpp
/// The fixed-size pool on which parallel IO tasks run.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <kvikio/export.hpp>

namespace kvikio {

/// A pool of worker threads running submitted jobs in FIFO order.
/// Thread safe: any thread may submit. `resize` waits for queued jobs to finish first.
///
/// Fork safe: in a child created by fork() the parent's workers do not exist; the child
/// abandons them (never joins them), starts with an empty queue and starts new workers when
/// the first job is submitted. Jobs queued but not yet run in the parent at the time of the
/// fork are run by the parent only; futures of the parent are not usable in the child.
/// The pool may be destroyed by one of its own jobs: that worker is then detached.
///
/// A worker that finished a job looks for the next one for a few tens of microseconds (a
/// bounded spin) before it sleeps, so a request issued right after the last one completed
/// does not pay for waking a sleeping thread; an idle pool sleeps.
class KVIKIO_EXPORT ThreadPool {
 public:
  /// Starts `num_threads` workers (at least one).
  explicit ThreadPool(unsigned int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&)            = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  /// Queues `job` to run on a worker; never blocks. Any exception the job throws is
  /// stored in the returned future.
  template <typename F>
  auto submit_task(F&& job) -> std::future<std::invoke_result_t<std::decay_t<F>>>
  {
    using R   = std::invoke_result_t<std::decay_t<F>>;
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(job));
    auto fut  = task->get_future();
    enqueue([task] { (*task)(); });
    return fut;
  }

  /// Queues a job whose result nobody waits for. The job must not throw.
  void detach_task(std::function<void()> job) { enqueue(std::move(job)); }

  /// Queues `copies` runs of `job`, as many detach_task calls would, but taking the queue's
  /// lock once and waking only the workers the queue needs: for a caller that fans one job
  /// out over the pool. All or none: if a copy cannot be queued, none is, and the error is
  /// thrown. The job must not throw.
  void detach_copies(std::size_t copies, const std::function<void()>& job);

  /// Number of worker threads (in a forked child: the number it starts on first use).
  [[nodiscard]] unsigned int get_thread_count() const noexcept;

  /// Waits until the queue is empty and every worker is idle.
  void wait();

  /// Waits for queued jobs, then restarts with `num_threads` workers (at least one).
  /// Must not be called from a worker of this pool.
  void reset(unsigned int num_threads);

  /// True on a thread that belongs to any kvikio::ThreadPool.
  [[nodiscard]] static bool is_worker_thread() noexcept;

 private:
  void enqueue(std::function<void()> job);
  void wake_for_queue(std::size_t added);  // under mutex_, after queuing `added` jobs
  void start(unsigned int num_threads);
  void start_locked(unsigned int num_threads);
  void stop();
  void worker_loop();
  // Spins until a job is queued (true) or until `deadline` (false).
  bool spin_until_queued(std::chrono::steady_clock::time_point deadline) const noexcept;
  // pthread_atfork handlers for every live pool.
  static void before_fork() noexcept;
  static void after_fork_in_parent() noexcept;
  static void after_fork_in_child() noexcept;

  mutable std::mutex mutex_;
  std::condition_variable job_available_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  std::size_t running_{0};
  // jobs_.size(), readable without the lock by spinning workers.
  std::atomic<std::size_t> queued_{0};
  // Workers spinning after a job; each looks at the queue under the lock before it sleeps,
  // so a job queued while enough of them spin needs no wake-up. Under mutex_.
  std::size_t spinning_{0};
  std::atomic<bool> stopping_{false};
  unsigned int num_threads_{1};  // the size asked for, kept to restart after a fork
  bool restart_{false};          // workers were abandoned by fork(): start on next enqueue
};

}  // namespace kvikio

#pragma once
/// @file threadpool.hpp
/// The fixed-size pool on which parallel IO tasks run.
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <future>
#include <mutex>
#include <queue>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include <kvikio/export.hpp>

namespace kvikio {

/// A pool of worker threads running submitted jobs in FIFO order.
/// Thread safe: any thread may submit. `resize` waits for queued jobs to finish first.
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

  /// Number of worker threads.
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
  void start(unsigned int num_threads);
  void stop();
  void worker_loop();

  mutable std::mutex mutex_;
  std::condition_variable job_available_;
  std::condition_variable idle_;
  std::queue<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  std::size_t running_{0};
  bool stopping_{false};
};

}  // namespace kvikio

#include <kvikio/threadpool.hpp>

#include <algorithm>

namespace kvikio {

namespace {
thread_local bool this_thread_is_worker = false;
}

ThreadPool::ThreadPool(unsigned int num_threads) { start(num_threads); }

ThreadPool::~ThreadPool() { stop(); }

unsigned int ThreadPool::get_thread_count() const noexcept
{
  std::lock_guard lock(mutex_);
  return static_cast<unsigned int>(workers_.size());
}

bool ThreadPool::is_worker_thread() noexcept { return this_thread_is_worker; }

void ThreadPool::enqueue(std::function<void()> job)
{
  {
    std::lock_guard lock(mutex_);
    jobs_.push(std::move(job));
  }
  job_available_.notify_one();
}

void ThreadPool::wait()
{
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return jobs_.empty() && running_ == 0; });
}

void ThreadPool::reset(unsigned int num_threads)
{
  wait();
  stop();
  start(num_threads);
}

void ThreadPool::start(unsigned int num_threads)
{
  std::lock_guard lock(mutex_);
  stopping_ = false;
  workers_.reserve(std::max(1U, num_threads));
  for (unsigned int i = 0; i < std::max(1U, num_threads); ++i) {
    workers_.emplace_back([this] { worker_loop(); });
  }
}

void ThreadPool::stop()
{
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  job_available_.notify_all();
  for (auto& worker : workers_) {
    worker.join();
  }
  std::lock_guard lock(mutex_);
  workers_.clear();
}

void ThreadPool::worker_loop()
{
  this_thread_is_worker = true;
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      // Drain the queue before stopping so that no submitted future is left broken.
      job_available_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) { return; }
      job = std::move(jobs_.front());
      jobs_.pop();
      ++running_;
    }
    job();
    {
      std::lock_guard lock(mutex_);
      --running_;
      if (jobs_.empty() && running_ == 0) { idle_.notify_all(); }
    }
  }
}

}  // namespace kvikio

#include <kvikio/threadpool.hpp>

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace kvikio {

namespace {
thread_local bool this_thread_is_worker = false;
// Set on a worker whose job destroyed its own pool: the loop must not touch the pool again.
thread_local bool this_worker_pool_destroyed = false;

// Every live pool, for the fork handlers. Leaked: pools may be destroyed during static
// destruction, after a function-local static would be gone.
struct Registry {
  std::mutex mutex;
  std::vector<ThreadPool*> pools;
};
Registry& registry()
{
  static auto* r = new Registry();
  return *r;
}
std::once_flag atfork_once;

// What a forked child abandons of a pool: the bytes of the old worker vector and job queue,
// kept here so that their heap blocks stay reachable (a leak checker would otherwise report
// them in every child) without ever running their destructors.
struct Abandoned {
  alignas(std::vector<std::thread>) unsigned char workers[sizeof(std::vector<std::thread>)];
  alignas(std::deque<std::function<void()>>) unsigned char jobs[sizeof(
    std::deque<std::function<void()>>)];
};
std::vector<Abandoned*>* abandoned_after_fork = nullptr;

// How long a worker that finished a job looks for the next one before it sleeps. Waking a
// sleeping thread costs tens of microseconds on a server (futex wake, idle-state exit); a
// caller issuing small requests one after another submits its next one sooner than that.
constexpr auto spin_limit = std::chrono::microseconds(50);

inline void cpu_relax() noexcept
{
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}
}  // namespace

ThreadPool::ThreadPool(unsigned int num_threads)
{
  std::call_once(atfork_once, [] {
    ::pthread_atfork(&ThreadPool::before_fork,
                     &ThreadPool::after_fork_in_parent,
                     &ThreadPool::after_fork_in_child);
  });
  {
    std::lock_guard lock(registry().mutex);
    registry().pools.push_back(this);
  }
  start(num_threads);
}

ThreadPool::~ThreadPool()
{
  {
    std::lock_guard lock(registry().mutex);
    auto& pools = registry().pools;
    pools.erase(std::remove(pools.begin(), pools.end(), this), pools.end());
  }
  stop();
}

unsigned int ThreadPool::get_thread_count() const noexcept
{
  std::lock_guard lock(mutex_);
  return restart_ ? num_threads_ : static_cast<unsigned int>(workers_.size());
}

bool ThreadPool::is_worker_thread() noexcept { return this_thread_is_worker; }

void ThreadPool::enqueue(std::function<void()> job)
{
  std::lock_guard lock(mutex_);
  if (restart_) { start_locked(num_threads_); }
  jobs_.push_back(std::move(job));
  queued_.store(jobs_.size(), std::memory_order_relaxed);
  wake_for_queue(1);
}

void ThreadPool::detach_copies(std::size_t copies, const std::function<void()>& job)
{
  if (copies == 0) { return; }
  std::lock_guard lock(mutex_);
  if (restart_) { start_locked(num_threads_); }
  // All or none: a copy that cannot be queued takes this call's others back out.
  std::size_t queued = 0;
  try {
    for (; queued < copies; ++queued) {
      jobs_.push_back(job);
    }
  } catch (...) {
    for (; queued > 0; --queued) {
      jobs_.pop_back();
    }
    throw;
  }
  queued_.store(jobs_.size(), std::memory_order_relaxed);
  wake_for_queue(copies);
}

void ThreadPool::wake_for_queue(std::size_t added)
{
  // A spinning worker takes a job without a wake-up (it looks at the queue under the lock,
  // and spins on when another took the job first): wake sleepers only for the added jobs
  // that the spinners cannot all take (the jobs queued before had their own wake-ups).
  // Notified under the lock: once it is released the caller touches the pool no more, so a
  // job may destroy its own pool even while the call that queued it is returning.
  const std::size_t sleepers = workers_.size() - std::min(workers_.size(), running_ + spinning_);
  const std::size_t wanted =
    std::min(added, jobs_.size() > spinning_ ? jobs_.size() - spinning_ : 0);
  if (wanted >= sleepers && sleepers > 1) {
    job_available_.notify_all();
  } else {
    for (std::size_t i = 0; i < wanted; ++i) {
      job_available_.notify_one();
    }
  }
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
  start_locked(num_threads);
}

void ThreadPool::start_locked(unsigned int num_threads)
{
  stopping_    = false;
  restart_     = false;
  num_threads_ = std::max(1U, num_threads);
  workers_.reserve(num_threads_);
  for (unsigned int i = 0; i < num_threads_; ++i) {
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
  const auto self = std::this_thread::get_id();
  for (auto& worker : workers_) {
    if (worker.get_id() == self) {
      // A job is destroying its own pool: joining this thread would deadlock (and throw
      // inside a destructor). Let it finish the job and leave without touching the pool.
      this_worker_pool_destroyed = true;
      worker.detach();
    } else {
      worker.join();
    }
  }
  std::lock_guard lock(mutex_);
  workers_.clear();
}

bool ThreadPool::spin_until_queued(std::chrono::steady_clock::time_point deadline) const noexcept
{
  for (unsigned round = 0;; ++round) {
    for (int i = 0; i < 32; ++i) {
      if (queued_.load(std::memory_order_relaxed) > 0 ||
          stopping_.load(std::memory_order_relaxed)) {
        return true;
      }
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) { return false; }
    // More workers than cores (or a busy machine): let the threads that have work run.
    if (round % 8 == 7) { std::this_thread::yield(); }
  }
}

void ThreadPool::worker_loop()
{
  this_thread_is_worker = true;
  // Until when this worker spins for the next job instead of sleeping: spin_limit after its
  // last job. A worker that saw a job queued but lost it to another spins on until then, so
  // that a caller queuing jobs one by one does not put the spinners to sleep one by one.
  std::chrono::steady_clock::time_point spin_until{};
  std::function<void()> job;
  std::unique_lock lock(mutex_);
  while (true) {
    if (jobs_.empty() && !stopping_ && std::chrono::steady_clock::now() < spin_until) {
      ++spinning_;
      lock.unlock();
      spin_until_queued(spin_until);
      lock.lock();
      --spinning_;
      continue;  // the queue is looked at again under the lock
    }
    // Drain the queue before stopping so that no submitted future is left broken.
    job_available_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (jobs_.empty()) { return; }
    job = std::move(jobs_.front());
    jobs_.pop_front();
    queued_.store(jobs_.size(), std::memory_order_relaxed);
    ++running_;
    lock.unlock();
    job();
    job = nullptr;  // the job's captures go before the pool may be waited on or destroyed
    if (this_worker_pool_destroyed) { return; }
    spin_until = std::chrono::steady_clock::now() + spin_limit;
    lock.lock();
    --running_;
    if (jobs_.empty() && running_ == 0) { idle_.notify_all(); }
  }
}

// The registry lock is held across fork() so that the child sees a consistent list. The
// pools' own state is not locked: the child rebuilds it from scratch instead.
void ThreadPool::before_fork() noexcept { registry().mutex.lock(); }

void ThreadPool::after_fork_in_parent() noexcept { registry().mutex.unlock(); }

void ThreadPool::after_fork_in_child() noexcept
{
  // Only the forking thread exists in the child. The parent's workers are gone: their
  // std::thread objects must be neither joined (that would hang) nor destroyed (joinable:
  // std::terminate), so the old vector and queue are abandoned, leaked, in place. The locks
  // and condition variables may have been held or waited on by threads that no longer exist;
  // they are built anew. Queued jobs belong to the parent's futures and are not run here.
  this_thread_is_worker      = false;
  this_worker_pool_destroyed = false;
  if (abandoned_after_fork == nullptr) { abandoned_after_fork = new std::vector<Abandoned*>(); }
  for (ThreadPool* p : registry().pools) {
    auto* old = new Abandoned;
    std::memcpy(old->workers, static_cast<const void*>(&p->workers_), sizeof(p->workers_));
    std::memcpy(old->jobs, static_cast<const void*>(&p->jobs_), sizeof(p->jobs_));
    abandoned_after_fork->push_back(old);
    new (&p->mutex_) std::mutex();
    new (&p->job_available_) std::condition_variable();
    new (&p->idle_) std::condition_variable();
    new (&p->jobs_) std::deque<std::function<void()>>();
    new (&p->workers_) std::vector<std::thread>();
    p->running_  = 0;
    p->spinning_ = 0;
    p->queued_.store(0);
    p->stopping_.store(false);
    p->restart_ = true;
  }
  registry().mutex.unlock();
}

}  // namespace kvikio

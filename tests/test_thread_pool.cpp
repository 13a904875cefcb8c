#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <kvikio/threadpool.hpp>

using kvikio::ThreadPool;

TEST(ThreadPool, RunsEveryJobAndReturnsResults)
{
  ThreadPool pool(4);
  std::vector<std::future<int>> futures;
  for (int i = 0; i < 1000; ++i) {
    futures.push_back(pool.submit_task([i] { return i * i; }));
  }
  for (int i = 0; i < 1000; ++i) {
    EXPECT_EQ(futures[i].get(), i * i);
  }
}

TEST(ThreadPool, ExceptionsReachTheFuture)
{
  ThreadPool pool(2);
  auto f = pool.submit_task([]() -> int { throw std::runtime_error("boom"); });
  EXPECT_THROW(f.get(), std::runtime_error);
}

TEST(ThreadPool, JobsRunConcurrentlyOnDistinctThreads)
{
  ThreadPool pool(4);
  std::atomic<int> arrived{0};
  std::mutex m;
  std::set<std::thread::id> ids;
  std::vector<std::future<void>> futures;
  for (int i = 0; i < 4; ++i) {
    futures.push_back(pool.submit_task([&] {
      {
        std::lock_guard lock(m);
        ids.insert(std::this_thread::get_id());
      }
      ++arrived;
      // Every job waits for all four: this only finishes if they run at the same time.
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (arrived.load() < 4 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
      EXPECT_TRUE(ThreadPool::is_worker_thread());
    }));
  }
  for (auto& f : futures) {
    f.get();
  }
  EXPECT_EQ(arrived.load(), 4);
  EXPECT_EQ(ids.size(), 4U);
  EXPECT_FALSE(ThreadPool::is_worker_thread());
}

TEST(ThreadPool, DetachCopiesRunsEachCopyOnItsOwnWorker)
{
  ThreadPool pool(4);
  for (int round = 0; round < 300; ++round) {
    if (round % 50 == 49) {  // now and then with every worker asleep
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // Four copies that each wait for all four: they finish only if the call woke (or found
    // spinning) a worker for every copy.
    std::atomic<int> arrived{0};
    std::atomic<int> left{0};
    pool.detach_copies(4, [&] {
      ++arrived;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (arrived.load() < 4 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
      ++left;
    });
    pool.wait();
    ASSERT_EQ(arrived.load(), 4) << "round " << round;
    ASSERT_EQ(left.load(), 4) << "round " << round;
  }
  pool.detach_copies(0, [] { FAIL() << "no copy was asked for"; });
  // More copies than workers: each still runs once.
  std::atomic<int> runs{0};
  pool.detach_copies(1000, [&] { ++runs; });
  pool.wait();
  EXPECT_EQ(runs.load(), 1000);
}

TEST(ThreadPool, ResetWaitsForQueuedWorkAndChangesSize)
{
  ThreadPool pool(1);
  std::atomic<int> done{0};
  for (int i = 0; i < 100; ++i) {
    pool.detach_task([&] { ++done; });
  }
  pool.reset(3);
  EXPECT_EQ(done.load(), 100);
  EXPECT_EQ(pool.get_thread_count(), 3U);
  auto f = pool.submit_task([] { return 7; });
  EXPECT_EQ(f.get(), 7);
}

TEST(ThreadPool, DestructorFinishesQueuedJobs)
{
  std::atomic<int> done{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 50; ++i) {
      pool.detach_task([&] { ++done; });
    }
  }
  EXPECT_EQ(done.load(), 50);
}

TEST(ThreadPool, ZeroThreadsMeansOne)
{
  ThreadPool pool(0);
  EXPECT_EQ(pool.get_thread_count(), 1U);
}

// Reliability audit #17: a pool destroyed by one of its own jobs joined that job's thread
// from itself, which throws inside the destructor: std::terminate.
TEST(ThreadPool, DestroyedByItsOwnJobDoesNotTerminate)
{
  auto* pool = new ThreadPool(2);
  std::atomic<int> later{0};
  for (int i = 0; i < 100; ++i) {
    pool->detach_task([&later] { ++later; });
  }
  auto destroyed = pool->submit_task([pool] { delete pool; });
  ASSERT_EQ(destroyed.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  destroyed.get();
  EXPECT_EQ(later.load(), 100);  // jobs queued before it still ran
}

namespace {
double process_cpu_seconds()
{
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace

// Issue 14: workers look for the next job for a bounded time before sleeping. An idle pool
// must not keep spinning: after a burst of jobs, 8 workers left alone for 300 ms use a few
// milliseconds of CPU at most (an unbounded spin would use the whole 300 ms per core).
TEST(ThreadPool, AnIdlePoolSleeps)
{
  ThreadPool pool(8);
  std::atomic<int> done{0};
  for (int i = 0; i < 1000; ++i) {
    pool.detach_task([&] { ++done; });
  }
  pool.wait();
  ASSERT_EQ(done.load(), 1000);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past every spin
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double used = process_cpu_seconds() - before;
  EXPECT_LT(used, 0.03) << "the idle pool used " << used << " s of CPU in 0.3 s";
  // And it still wakes up for new work.
  auto f = pool.submit_task([] { return 5; });
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(f.get(), 5);
}

// Issue 14: a job queued while a worker spins is taken without a wake-up; none may be lost,
// whether it comes while the worker spins, as its spin ends or after it fell asleep.
TEST(ThreadPool, JobsSubmittedOneAtATimeAreNeverLost)
{
  ThreadPool pool(4);
  for (int i = 0; i < 20000; ++i) {
    if (i % 1000 == 999) {  // now and then after the spin ended, with the workers asleep
      std::this_thread::sleep_for(std::chrono::microseconds(100 + i % 7 * 10));
    }
    auto f = pool.submit_task([i] { return i; });
    ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "job " << i;
    ASSERT_EQ(f.get(), i);
  }
  // Bursts larger than the number of spinning workers wake sleepers for the rest.
  for (int round = 0; round < 200; ++round) {
    std::vector<std::future<int>> fs;
    for (int i = 0; i < 9; ++i) {
      fs.push_back(pool.submit_task([i] { return i; }));
    }
    for (int i = 0; i < 9; ++i) {
      ASSERT_EQ(fs[i].wait_for(std::chrono::seconds(30)), std::future_status::ready);
      ASSERT_EQ(fs[i].get(), i);
    }
  }
}

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>

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

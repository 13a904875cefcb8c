// Regression tests for the reliability audit (reference/reliability-audit.md): each test names
// the finding it guards.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <cstddef>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/batch.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/mmap.hpp>

#include "api/open_handle.hpp"
#include "core/open_file.hpp"
#include "core/parallel_io.hpp"
#include "test_utils.hpp"

using kvikio::FileHandle;
using kvikio::test::read_file;
using kvikio::test::TempDir;

namespace {
long peak_rss_kib()
{
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}
}  // namespace

// Audit #2: appends issued before the earlier ones ran all took the same offset, so all but
// one block were overwritten.
TEST(Hardening, OverlappingAppendPwritesLeaveEveryBlockIntact)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(4);
  constexpr std::size_t n = 8, block = (1 << 20) + 123;
  const auto path = dir.file("append.bin");
  std::vector<std::vector<char>> blocks;
  for (std::size_t i = 0; i < n; ++i) {
    blocks.emplace_back(block, static_cast<char>('A' + i));
  }
  {
    FileHandle f(path, "a");
    std::vector<std::future<std::size_t>> futures;
    for (const auto& b : blocks) {
      futures.push_back(f.pwrite(b.data(), b.size(), kvikio::unspecified_offset, 64 * 1024));
    }
    for (auto& fut : futures) {
      EXPECT_EQ(fut.get(), block);
    }
  }
  auto on_disk = read_file(path);
  // Issued from one thread, so they land in issue order.
  ASSERT_EQ(on_disk.size(), n * block);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_EQ(std::vector<char>(on_disk.begin() + static_cast<long>(i * block),
                                on_disk.begin() + static_cast<long>((i + 1) * block)),
              blocks[i])
      << "block " << i;
  }
}

TEST(Hardening, ThreadsAppendingWithWriteLeaveEveryBlockIntact)
{
  TempDir dir;
  constexpr std::size_t n = 8, block = 256 * 1024 + 7, rounds = 4;
  const auto path = dir.file("append_threads.bin");
  {
    FileHandle existing(path, "w");
    std::vector<char> head(block, 'A');
    existing.write(head.data(), head.size(), 0, 0);
  }
  {
    FileHandle f(path, "a");
    std::vector<std::thread> threads;
    for (std::size_t t = 1; t < n; ++t) {
      threads.emplace_back([&f, t] {
        std::vector<char> b(block, static_cast<char>('A' + t));
        for (std::size_t r = 0; r < rounds; ++r) {
          f.write(b.data(), b.size(), kvikio::unspecified_offset, 0);
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
  }
  auto on_disk = read_file(path);
  // Every thread's blocks, each intact; the existing content stays first.
  ASSERT_EQ(on_disk.size(), (1 + (n - 1) * rounds) * block);
  std::vector<std::size_t> count(n, 0);
  for (std::size_t b = 0; b < on_disk.size() / block; ++b) {
    const char c     = on_disk[b * block];
    const auto begin = on_disk.begin() + static_cast<long>(b * block);
    ASSERT_TRUE(
      std::all_of(begin, begin + static_cast<long>(block), [c](char x) { return x == c; }))
      << "block " << b << " is torn";
    ASSERT_GE(c, 'A');
    ASSERT_LT(static_cast<std::size_t>(c - 'A'), n);
    ++count[static_cast<std::size_t>(c - 'A')];
  }
  EXPECT_EQ(on_disk[0], 'A');
  EXPECT_EQ(count[0], 1U);
  for (std::size_t t = 1; t < n; ++t) {
    EXPECT_EQ(count[t], rounds) << "thread " << t;
  }
}

// Audit #5(b): close(2) errors (NFS write-back, quota) were dropped; close() now reports them.
TEST(Hardening, CloseReportsAFailingCloseNamingTheFile)
{
  TempDir dir;
  const auto path = dir.file("close.bin");
  FileHandle f(path, "w");
  const int fd = f.fd();
  ASSERT_EQ(::close(f.fd()), 0);  // behind the handle's back: its close(2) gets EBADF
  if (f.is_direct_io_supported()) { ASSERT_EQ(::close(f.fd(true)), 0); }
  try {
    f.close();
    ADD_FAILURE() << "close() of a descriptor closed behind its back did not throw";
  } catch (const kvikio::GenericSystemError& e) {
    EXPECT_EQ(e.code().value(), EBADF);
    EXPECT_NE(std::string(e.what()).find("cannot close '" + path + "'"), std::string::npos)
      << e.what();
  }
  EXPECT_TRUE(f.closed());  // closed even though close failed
  EXPECT_NO_THROW(f.close());
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);  // and not closed twice (the number may be reused)
}

TEST(Hardening, CloseWithQueuedWorkDefersTheCloseAndSucceeds)
{
  TempDir dir;
  const auto data = kvikio::test::random_bytes(4 << 20);
  const auto path = dir.file("deferred.bin");
  std::future<std::size_t> pending;
  {
    FileHandle f(path, "w");
    pending = f.pwrite(data.data(), data.size(), 0, 64 * 1024);
    EXPECT_NO_THROW(f.close());
    EXPECT_TRUE(f.closed());
  }
  EXPECT_EQ(pending.get(), data.size());
  EXPECT_EQ(read_file(path), data);
}

TEST(Hardening, FsyncSucceedsOnAnOpenFileAndRefusesAClosedOne)
{
  TempDir dir;
  const auto path = dir.file("fsync.bin");
  const auto data = kvikio::test::random_bytes(100000);
  FileHandle f(path, "w");
  f.write(data.data(), data.size(), 0, 0);
  EXPECT_NO_THROW(f.fsync());
  EXPECT_EQ(read_file(path), data);
  f.close();
  KVIKIO_EXPECT_THROW_WITH(f.fsync(), std::invalid_argument, "closed file '" + path + "'");
}

// Audit #4: in a forked child the pool's threads do not exist: queued pieces never ran, the
// child's pread hung, and the child hung again at exit joining them.
TEST(Hardening, ParallelReadWorksInAForkedChildAfterTheParentUsedThePool)
{
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer cannot start threads in the child of a multi-threaded fork (its thread
  // registry keeps the parent's threads: "dup thread with used id").
  GTEST_SKIP() << "ThreadSanitizer does not support threads after a multi-threaded fork";
#endif
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(4);
  const auto data = kvikio::test::random_bytes(8 * (1 << 20) + 11, 4);
  const auto path = dir.file("fork.bin");
  kvikio::test::write_file(path, data);
  FileHandle f(path, "r");
  std::vector<char> got(data.size());
  ASSERT_EQ(f.pread(got.data(), got.size(), 0, 256 * 1024).get(), data.size());  // pool runs
  ASSERT_EQ(got, data);

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child: exit codes say what went wrong; _exit skips gtest's own teardown.
    std::vector<char> mine(data.size());
    FileHandle g(path, "r");
    auto fut = g.pread(mine.data(), mine.size(), 0, 256 * 1024);
    if (fut.wait_for(std::chrono::seconds(20)) != std::future_status::ready) { ::_exit(3); }
    if (fut.get() != data.size()) { ::_exit(4); }
    if (mine != data) { ::_exit(5); }
    // The inherited handle works too, and so does a resize of the restarted pool.
    kvikio::defaults::set_num_threads(2);
    std::fill(mine.begin(), mine.end(), 0);
    if (f.pread(mine.data(), mine.size(), 0, 256 * 1024).get() != data.size()) { ::_exit(6); }
    if (mine != data) { ::_exit(7); }
    std::exit(0);  // runs static destructors: ~ThreadPool must not join the parent's threads
  }
  int status          = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  pid_t done          = 0;
  while ((done = ::waitpid(child, &status, WNOHANG)) == 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << "the forked child hung";
  }
  ASSERT_TRUE(WIFEXITED(status)) << "child ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: not done, 4: wrong count, 5/7: wrong bytes, 6: count";
  // The parent's pool is unaffected.
  std::fill(got.begin(), got.end(), 0);
  EXPECT_EQ(f.pread(got.data(), got.size(), 0, 256 * 1024).get(), data.size());
  EXPECT_EQ(got, data);
}

// Audit #10: every piece was queued up front (a task and a closure each, about 150 bytes per
// piece), so task_size=1 took memory proportional to the bytes read: 64 MiB needed ~10 GB.
TEST(Hardening, TinyTaskSizeReadsInBoundedMemoryAndTime)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(4);
  const auto data = kvikio::test::random_bytes(64 << 20, 10);
  const auto path = dir.file("tiny.bin");
  kvikio::test::write_file(path, data);
  std::vector<char> got(data.size());
  const auto peak_before = peak_rss_kib();
  FileHandle f(path, "r");
  auto fut = f.pread(got.data(), got.size(), 0, 1);
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_EQ(fut.get(), data.size());
  EXPECT_EQ(got, data);
  EXPECT_LT(peak_rss_kib() - peak_before, 256L * 1024) << "KiB of peak RSS growth";
}

// Audit #13: the O_DIRECT descriptor was a second open() of the path; a rename in between
// made the aligned middle of every request go to another file than its head and tail.
namespace {
void replace_path_with_another_file(const std::string& path)
{
  ASSERT_EQ(::rename(path.c_str(), (path + ".moved").c_str()), 0);
  kvikio::test::write_file(path, std::vector<char>(8192, 'X'));
}

struct HooksRestore {
  ~HooksRestore() { kvikio::detail::open_file_test_hooks = {}; }
};

bool same_inode(int a, int b)
{
  struct stat sa {
  }, sb{};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}
}  // namespace

TEST(Hardening, DirectDescriptorIsTheSameFileEvenIfThePathIsReplacedBetweenOpens)
{
  TempDir dir;
  HooksRestore restore;
  const auto path = dir.file("direct.bin");
  kvikio::test::write_file(path, kvikio::test::random_bytes(3 * 4096, 13));
  kvikio::detail::open_file_test_hooks.between_opens = &replace_path_with_another_file;
  FileHandle f(path, "r+");
  if (!f.is_direct_io_supported()) { GTEST_SKIP() << "no O_DIRECT on this file system"; }
  EXPECT_TRUE(same_inode(f.fd(), f.fd(true)));
  struct stat moved {};
  ASSERT_EQ(::stat((path + ".moved").c_str(), &moved), 0);
  struct stat opened {};
  ASSERT_EQ(::fstat(f.fd(true), &opened), 0);
  EXPECT_EQ(opened.st_ino, moved.st_ino);
}

TEST(Hardening, WithoutProcADirectOpenOfAnotherFileTurnsDirectIoOff)
{
  TempDir dir;
  HooksRestore restore;
  const auto path = dir.file("noproc.bin");
  kvikio::test::write_file(path, kvikio::test::random_bytes(3 * 4096, 13));
  kvikio::detail::open_file_test_hooks.proc_fd_dir = "/nonexistent-proc/self/fd/";
  {
    FileHandle same(path, "r");  // the fallback: the path again, checked to be the same file
    if (!same.is_direct_io_supported()) { GTEST_SKIP() << "no O_DIRECT on this file system"; }
    EXPECT_TRUE(same_inode(same.fd(), same.fd(true)));
  }
  kvikio::detail::open_file_test_hooks.between_opens = &replace_path_with_another_file;
  FileHandle f(path, "r");
  EXPECT_FALSE(f.is_direct_io_supported());
  EXPECT_EQ(f.fd(true), -1);
  const auto& state = kvikio::detail::open_state(f);
  EXPECT_NE(state->file.direct_io_error().find("reached another file"), std::string::npos)
    << state->file.direct_io_error();
}

// close() right after get() must close the descriptors then, with its checked close(2) (a
// write-back error on NFS is reported there): the pool's jobs hold the request a moment
// after they fulfil the future, so they must let the file go before they do.
TEST(Hardening, CloseRightAfterGetClosesTheDescriptorsThen)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(4);
  const auto path = dir.file("closed.bin");
  const auto data = kvikio::test::random_bytes((1 << 20) + 3, 17);
  for (int round = 0; round < 200; ++round) {
    FileHandle f(path, "w");
    // Many pieces (the gathered path), then one (the single-job path).
    ASSERT_EQ(f.pwrite(data.data(), data.size(), 0, 64 * 1024).get(), data.size());
    ASSERT_EQ(f.pwrite(data.data(), 100, 0).get(), 100U);
    f.close();
    ASSERT_EQ(kvikio::test::descriptors_of(path), 0U)
      << "round " << round << ": close() left the file open";
  }
  EXPECT_EQ(read_file(path), data);
}

// The same rule for BatchHandle's POSIX fallback (issue 28): an operation lets its file go
// before it reports COMPLETE, so that close() right after status() closes the descriptors.
TEST(Hardening, BatchHandleCloseRightAfterCompleteClosesTheDescriptorsThen)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(4);
  const auto path = dir.file("batch_closed.bin");
  const auto data = kvikio::test::random_bytes(8192 + 5, 23);
  for (int round = 0; round < 300; ++round) {
    FileHandle f(path, "w", FileHandle::m644, kvikio::CompatMode::ON);
    kvikio::BatchHandle batch(2);
    batch.submit(
      {{f, const_cast<char*>(data.data()), 0, 0, 4096, CUFILE_WRITE},
       {f, const_cast<char*>(data.data()) + 4096, 4096, 0, data.size() - 4096, CUFILE_WRITE}});
    auto events = batch.status_details(2, 2);
    ASSERT_EQ(events.size(), 2U);
    for (const auto& ev : events) {
      ASSERT_EQ(ev.status, CUFILE_COMPLETE) << ev.error;
    }
    f.close();
    ASSERT_EQ(kvikio::test::descriptors_of(path), 0U)
      << "round " << round << ": close() after COMPLETE left the file open";
  }
  EXPECT_EQ(read_file(path), data);
}

// Audit #17: lifetimes and error details.
namespace {
/// Occupies the only thread of the pool until released, so that work queued meanwhile is
/// certainly still waiting when the test closes the handle it came from.
class PoolGate {
 public:
  PoolGate()
  {
    kvikio::defaults::set_num_threads(1);
    done_ = kvikio::defaults::thread_pool().submit_task([this] { open_.get_future().wait(); });
  }
  ~PoolGate() { release(); }
  void release()
  {
    if (!released_) {
      released_ = true;
      open_.set_value();
      done_.get();
    }
  }

 private:
  std::promise<void> open_;
  std::future<void> done_;
  bool released_{false};
};
}  // namespace

TEST(Hardening, MmapClosedBeforeItsPreadFinishesStillReadsTheBytes)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  const auto data = kvikio::test::random_bytes(3 << 20, 17);
  const auto path = dir.file("mmap.bin");
  kvikio::test::write_file(path, data);
  std::vector<char> got(data.size());
  std::future<std::size_t> fut;
  {
    PoolGate gate;
    auto handle = std::make_unique<kvikio::MmapHandle>(path, "r");
    fut         = handle->pread(got.data(), data.size(), 0, 1 << 20);
    handle->close();
    handle.reset();  // unmapped here before the fix: the queued copies then faulted
  }
  EXPECT_EQ(fut.get(), data.size());
  EXPECT_EQ(got, data);
}

TEST(Hardening, BatchFallbackOwnsTheFileAndReportsWhyAnOperationFailed)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  const auto data = kvikio::test::random_bytes(10000, 18);
  const auto path = dir.file("batch.bin");
  kvikio::test::write_file(path, data);
  std::vector<char> got(data.size()), past(100);
  kvikio::BatchHandle batch(4);
  {
    PoolGate gate;
    auto f = std::make_unique<FileHandle>(path, "r", FileHandle::m644, kvikio::CompatMode::ON);
    batch.submit({{*f, got.data(), 0, 0, got.size(), CUFILE_READ},
                  {*f, past.data(), 20000, 0, past.size(), CUFILE_READ}});
    f.reset();  // the FileHandle is gone before the operations run
  }
  auto events = batch.status_details(2, 2);
  ASSERT_EQ(events.size(), 2U);
  std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
    return reinterpret_cast<std::uintptr_t>(a.cookie) < reinterpret_cast<std::uintptr_t>(b.cookie);
  });
  EXPECT_EQ(events[0].status, CUFILE_COMPLETE) << events[0].error;
  EXPECT_EQ(events[0].ret, data.size());
  EXPECT_EQ(got, data);
  EXPECT_EQ(events[1].status, CUFILE_FAILED);
  EXPECT_EQ(events[1].ret, 0U);
  EXPECT_NE(events[1].error.find("read past the end of file"), std::string::npos)
    << events[1].error;
  EXPECT_NE(events[1].error.find(path), std::string::npos) << events[1].error;
}

TEST(Hardening, BatchFallbackReportsTheErrnoOfAnOsError)
{
  TempDir dir;
  const auto path = dir.file("batch_errno.bin");
  kvikio::test::write_file(path, std::vector<char>(100, 'x'));
  FileHandle f(path, "r", FileHandle::m644, kvikio::CompatMode::ON);
  std::vector<char> buf(10, 'y');
  // A write on a read-only descriptor (behind the mode check): pwrite(2) fails with EBADF.
  FileHandle w(path, "r+", FileHandle::m644, kvikio::CompatMode::ON);
  ASSERT_GE(::dup2(f.fd(), w.fd()), 0);
  kvikio::BatchHandle batch(1);
  batch.submit({{w, buf.data(), 0, 0, buf.size(), CUFILE_WRITE}});
  auto events = batch.status_details(1, 1);
  ASSERT_EQ(events.size(), 1U);
  EXPECT_EQ(events[0].status, CUFILE_FAILED);
  EXPECT_EQ(events[0].error_code, EBADF) << events[0].error;
  EXPECT_NE(events[0].error.find(path), std::string::npos) << events[0].error;
}

TEST(Hardening, FailureToQueueAfterTheFirstJobStillCompletesTheRequest)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(4);
  const auto data = kvikio::test::random_bytes(8 << 20, 19);
  const auto path = dir.file("enqueue.bin");
  kvikio::test::write_file(path, data);
  FileHandle f(path, "r");
  std::vector<char> got(data.size());
  struct HookRestore {
    ~HookRestore() { kvikio::detail::fail_enqueue_at_for_testing = -1; }
  } hook_restore;
  kvikio::detail::fail_enqueue_at_for_testing = 2;  // two jobs queued, the third fails
  auto fut                                    = f.pread(got.data(), got.size(), 0, 256 * 1024);
  EXPECT_EQ(fut.get(), data.size());
  EXPECT_EQ(got, data);

  // Nothing queued: the exception reaches the caller and nothing writes into the buffer later.
  kvikio::detail::fail_enqueue_at_for_testing = 0;
  std::vector<char> untouched(data.size(), 0);
  EXPECT_THROW(f.pread(untouched.data(), untouched.size(), 0, 256 * 1024), std::bad_alloc);
  kvikio::defaults::thread_pool().wait();
  EXPECT_TRUE(std::all_of(untouched.begin(), untouched.end(), [](char c) { return c == 0; }));
}

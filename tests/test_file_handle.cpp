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
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/shim.hpp>

#include "api/open_handle.hpp"
#include "core/open_file.hpp"
#include "core/parallel_io.hpp"
#include "test_utils.hpp"

using kvikio::FileHandle;
using kvikio::test::random_bytes;
using kvikio::test::read_file;
using kvikio::test::TempDir;
using kvikio::test::write_file;

namespace {

constexpr std::size_t MiB = 1 << 20;

// size, file offset, threads, Direct IO
using RoundTrip = std::tuple<std::size_t, std::size_t, unsigned int, bool>;

class FileRoundTrip : public ::testing::TestWithParam<RoundTrip> {
 protected:
  TempDir dir;
  kvikio::test::ScopedSettings restore;
};

}  // namespace

TEST_P(FileRoundTrip, PwriteThenPreadIsByteExact)
{
  auto [size, offset, threads, direct] = GetParam();
  kvikio::defaults::set_num_threads(threads);
  kvikio::defaults::set_auto_direct_io_read(direct);
  kvikio::defaults::set_auto_direct_io_write(direct);
  const auto path = dir.file("roundtrip.bin");
  const auto data = random_bytes(size, size + offset);
  {
    FileHandle f(path, "w");
    EXPECT_EQ(f.pwrite(data.data(), size, offset, 1 * MiB).get(), size);
  }
  auto on_disk = read_file(path);
  // An empty write moves nothing, so it does not extend the file either.
  ASSERT_EQ(on_disk.size(), size == 0 ? 0 : offset + size);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), on_disk.begin() + static_cast<long>(offset)));

  // Read into a buffer at an odd address too, so the Direct IO path must bounce.
  std::vector<char> got(size + 1, 0);
  FileHandle f(path, "r");
  EXPECT_EQ(f.nbytes(), on_disk.size());
  EXPECT_EQ(f.pread(got.data() + 1, size, offset, 1 * MiB).get(), size);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), got.begin() + 1));
  std::vector<char> again(size);
  EXPECT_EQ(f.read(again.data(), size, offset, 0), size);
  EXPECT_EQ(again, data);
}

INSTANTIATE_TEST_SUITE_P(
  Sizes,
  FileRoundTrip,
  ::testing::Combine(::testing::Values(0, 1, 4095, 4096, 4097, MiB + 3, 64 * MiB),
                     ::testing::Values(0, 4096, 1, 4097 + 8192),
                     ::testing::Values(1U, 8U),
                     ::testing::Bool()));

TEST(FileHandle, UnalignedSourceBufferWithDirectIoWrite)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_auto_direct_io_write(true);
  kvikio::defaults::set_bounce_buffer_size(8192);  // forces several bounce rounds
  // The source starts 3 bytes into its buffer, so it is not page aligned.
  const auto shifted = random_bytes(3 + 5 * 4096 + 17, 7);
  const std::vector<char> data(shifted.begin() + 3, shifted.end());
  FileHandle f(dir.file("w.bin"), "w+");
  EXPECT_EQ(f.write(shifted.data(), data.size(), 4096, 3), data.size());
  std::vector<char> got(data.size());
  EXPECT_EQ(f.read(got.data(), got.size(), 4096, 0), got.size());
  EXPECT_EQ(got, data);
}

// KVIKIO_AUTO_DIRECT_IO_READ_OVERREAD: the unaligned head and tail of a Direct IO read go
// through O_DIRECT too (whole pages into the bounce buffer), so none of the read range ends
// up in the page cache; without it the head and tail pages are read buffered, and cached.
TEST(FileHandle, DirectIoOverreadKeepsTheWholeReadOutOfThePageCache)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  const auto path = dir.file("overread.bin");
  const auto data = random_bytes(16 * 4096 + 123, 9);
  write_file(path, data);
  kvikio::defaults::set_auto_direct_io_read(true);
  kvikio::defaults::set_bounce_buffer_size(8192);  // several bounce rounds
  FileHandle f(path, "r");
  if (f.fd(true) < 0) { GTEST_SKIP() << "the file system has no O_DIRECT"; }
  struct Case {
    std::size_t offset, size;
  };
  for (bool overread : {false, true}) {
    kvikio::defaults::set_auto_direct_io_read_overread(overread);
    for (auto [offset, size] : {Case{1, 10},
                                Case{4000, 200},
                                Case{4095, 3 * 4096 + 7},
                                Case{100, data.size() - 100},
                                Case{8192, 4096},
                                Case{data.size() - 5, 5}}) {
      kvikio::drop_file_page_cache(path);
      ASSERT_EQ(kvikio::get_page_cache_info(path).first, 0U);
      std::vector<char> got(size + 1);
      EXPECT_EQ(f.pread(got.data() + 1, size, offset).get(), size);  // odd address: bounces
      EXPECT_TRUE(std::equal(got.begin() + 1, got.end(), data.begin() + static_cast<long>(offset)))
        << offset << " " << size << " overread=" << overread;
      const auto cached = kvikio::get_page_cache_info(path).first;
      if (overread) {
        EXPECT_EQ(cached, 0U) << offset << " " << size;
      } else if (offset % 4096 != 0) {
        EXPECT_GT(cached, 0U) << offset << " " << size;
      }
    }
  }
  // A read past the end still fails as without over-reading, naming the file.
  std::vector<char> buf(100);
  KVIKIO_EXPECT_THROW_WITH(
    f.pread(buf.data(), 100, data.size() - 50).get(), kvikio::EndOfFileError, path);
  kvikio::defaults::set_auto_direct_io_read_overread(false);
}

TEST(FileHandle, OpenFlagsAcceptBinaryVariantsInAnyOrder)
{
  TempDir dir;
  const auto path = dir.file("flags.bin");
  for (const char* flags :
       {"w", "wb", "w+", "w+b", "wb+", "r", "rb", "r+", "rb+", "r+b", "a", "ab", "a+", "a+b"}) {
    FileHandle f(path, flags);
    EXPECT_FALSE(f.closed()) << flags;
  }
}

TEST(FileHandle, ReadAndWriteModesAreEnforced)
{
  TempDir dir;
  const auto path = dir.file("modes.bin");
  write_file(path, random_bytes(100));
  std::vector<char> buf(100);
  {
    FileHandle f(path, "r");
    KVIKIO_EXPECT_THROW_WITH(f.pwrite(buf.data(), 10, 0), std::invalid_argument, path);
    KVIKIO_EXPECT_THROW_WITH(f.write(buf.data(), 10, 0, 0), std::invalid_argument, "read-only");
  }
  {
    FileHandle f(path, "w");
    KVIKIO_EXPECT_THROW_WITH(f.pread(buf.data(), 10, 0), std::invalid_argument, path);
    KVIKIO_EXPECT_THROW_WITH(f.read(buf.data(), 10, 0, 0), std::invalid_argument, "write-only");
  }
  {
    FileHandle f(path, "a");
    KVIKIO_EXPECT_THROW_WITH(f.pread(buf.data(), 10, 0), std::invalid_argument, path);
  }
}

TEST(FileHandle, AppendModeCreatesNeverTruncatesAndWritesAtTheEnd)
{
  TempDir dir;
  const auto path  = dir.file("append.bin");
  const auto first = random_bytes(5000, 1);
  const auto more  = random_bytes(3000, 2);
  {
    FileHandle f(path, "a");  // creates
    EXPECT_EQ(f.pwrite(first.data(), first.size()).get(), first.size());
  }
  {
    FileHandle f(path, "a");  // keeps, then appends
    EXPECT_EQ(f.nbytes(), first.size());
    EXPECT_EQ(f.write(more.data(), more.size(), kvikio::unspecified_offset, 0), more.size());
  }
  auto on_disk = read_file(path);
  auto expect  = first;
  expect.insert(expect.end(), more.begin(), more.end());
  EXPECT_EQ(on_disk, expect);
  {
    FileHandle f(path, "a+");  // an explicit offset is honoured, and a+ can read
    EXPECT_EQ(f.pwrite(more.data(), 10, 0).get(), 10U);
    std::vector<char> got(10);
    EXPECT_EQ(f.pread(got.data(), 10, 0).get(), 10U);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), more.begin()));
  }
}

TEST(FileHandle, WriteModeTruncates)
{
  TempDir dir;
  const auto path = dir.file("trunc.bin");
  write_file(path, random_bytes(1000));
  FileHandle f(path, "w");
  EXPECT_EQ(f.nbytes(), 0U);
}

TEST(FileHandle, MissingFileIsAnOsErrorNamingIt)
{
  TempDir dir;
  const auto path = dir.file("does-not-exist.bin");
  try {
    FileHandle f(path, "r");
    ADD_FAILURE() << "expected an error";
  } catch (const kvikio::GenericSystemError& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(FileHandle, UnknownFlagsAreRejected)
{
  TempDir dir;
  for (const char* flags : {"x", "rw", "r++", "", "wa"}) {
    KVIKIO_EXPECT_THROW_WITH(
      FileHandle(dir.file("f"), flags), std::invalid_argument, std::string("'") + flags + "'");
  }
}

TEST(FileHandle, DirectoryIsRejected)
{
  TempDir dir;
  KVIKIO_EXPECT_THROW_WITH(FileHandle(dir.file(""), "r"), kvikio::GenericSystemError, "directory");
}

TEST(FileHandle, ClosedHandleRefusesIo)
{
  TempDir dir;
  const auto path = dir.file("closed.bin");
  write_file(path, random_bytes(100));
  FileHandle f(path, "r");
  f.close();
  f.close();  // idempotent
  EXPECT_TRUE(f.closed());
  EXPECT_EQ(f.fd(), -1);
  std::vector<char> buf(100);
  KVIKIO_EXPECT_THROW_WITH(f.pread(buf.data(), 10, 0), std::invalid_argument, "closed");
  KVIKIO_EXPECT_THROW_WITH(f.read(buf.data(), 10, 0, 0), std::invalid_argument, path);
  KVIKIO_EXPECT_THROW_WITH((void)f.nbytes(), std::invalid_argument, "closed");
}

TEST(FileHandle, ReadPastTheEndIsAnErrorNamingFileAndOffset)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(4);
  const auto path = dir.file("short.bin");
  write_file(path, random_bytes(10000));
  FileHandle f(path, "r");
  std::vector<char> buf(20000);
  KVIKIO_EXPECT_THROW_WITH(f.read(buf.data(), 100, 9950, 0), kvikio::EndOfFileError, "9950");
  KVIKIO_EXPECT_THROW_WITH(f.read(buf.data(), 100, 20000, 0), kvikio::EndOfFileError, path);
  // In parallel, the failing piece's error reaches the future even though others succeed.
  auto future = f.pread(buf.data(), 20000, 0, 4096);
  KVIKIO_EXPECT_THROW_WITH(future.get(), kvikio::EndOfFileError, "the file is 10000 bytes long");
}

TEST(FileHandle, OverflowingOffsetsAreRejected)
{
  TempDir dir;
  const auto path = dir.file("o.bin");
  write_file(path, random_bytes(10));
  FileHandle f(path, "r+");
  std::vector<char> buf(16);
  const std::size_t huge = std::numeric_limits<std::size_t>::max() - 4;
  KVIKIO_EXPECT_THROW_WITH(f.pread(buf.data(), 8, huge), std::overflow_error, std::to_string(huge));
  KVIKIO_EXPECT_THROW_WITH(f.read(buf.data(), huge, 8, 0), std::overflow_error, "overflows");
  KVIKIO_EXPECT_THROW_WITH(f.pwrite(buf.data(), 8, huge - 1), std::overflow_error, path);
}

TEST(FileHandle, FailedWriteIsReportedNotSwallowed)
{
  // /dev/full refuses every write with ENOSPC.
  FileHandle f("/dev/full", "w");
  const auto data = random_bytes(1000);
  try {
    f.pwrite(data.data(), data.size(), 0).get();
    ADD_FAILURE() << "expected ENOSPC";
  } catch (const kvikio::GenericSystemError& e) {
    EXPECT_EQ(e.code().value(), ENOSPC);
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos);
  }
}

TEST(FileHandle, ZeroTaskSizeIsRejected)
{
  TempDir dir;
  FileHandle f(dir.file("z.bin"), "w+");
  char c = 0;
  KVIKIO_EXPECT_THROW_WITH(f.pwrite(&c, 1, 0, 0), std::invalid_argument, "task_size");
}

TEST(FileHandle, QueuedWorkOutlivesClose)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(2);
  const auto data = random_bytes(8 * MiB + 5);
  const auto path = dir.file("outlive.bin");
  std::future<std::size_t> pending;
  {
    FileHandle f(path, "w");
    pending = f.pwrite(data.data(), data.size(), 0, 256 * 1024);
  }  // closed and destroyed while pieces may still be queued
  EXPECT_EQ(pending.get(), data.size());
  EXPECT_EQ(read_file(path), data);
}

TEST(FileHandle, ReportsItsDescriptorsAndFlags)
{
  TempDir dir;
  FileHandle f(dir.file("fd.bin"), "w+");
  EXPECT_GE(f.fd(), 0);
  EXPECT_EQ(f.fd_open_flags() & O_ACCMODE, O_RDWR);
  if (f.is_direct_io_supported()) { EXPECT_NE(f.fd_open_flags(true) & O_DIRECT, 0); }
  // POSIX unless cuFile is usable here and registered the file (the GPU machine with udev).
  EXPECT_EQ(f.is_compat_mode_preferred(), f.compat_mode() == kvikio::CompatMode::ON);
  if (!kvikio::is_cufile_available()) { EXPECT_TRUE(f.is_compat_mode_preferred()); }
}

// Issue 14: a small host pread whose bytes are all in the page cache runs on the calling
// thread: its future is ready when pread returns, with the bytes in place. One that is not
// cached (dropped), reaches the end of the file or is large takes the pool as before.
TEST(FileHandle, SmallCachedPreadIsReadyAtOnceAndOthersAreUnchanged)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(3);
  const auto path  = dir.file("hot.bin");
  const auto bytes = random_bytes(1 * MiB + 333, 14);
  const std::string data(bytes.begin(), bytes.end());
  write_file(path, bytes);
  FileHandle f(path, "r");
  (void)read_file(path);  // every page cached
  for (std::size_t size : {std::size_t{1}, std::size_t{4096}, std::size_t{5000}, 128 * 1024UL}) {
    const std::size_t offset = 4097 * size % (data.size() - size);
    std::vector<char> buf(size, 'x');
    auto fut = f.pread(buf.data(), size, offset);
    EXPECT_EQ(fut.wait_for(std::chrono::seconds(0)), std::future_status::ready) << size;
    EXPECT_EQ(fut.get(), size);
    EXPECT_EQ(std::string(buf.begin(), buf.end()), data.substr(offset, size)) << size;
  }
  // Past the end: the same error as through the pool.
  std::vector<char> buf(4096);
  KVIKIO_EXPECT_THROW_WITH(
    f.pread(buf.data(), 4096, data.size() - 10).get(), kvikio::EndOfFileError, path);
  // Dropped from the cache (where the kernel lets us): still byte exact.
  int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
  std::vector<char> cold(60000);
  EXPECT_EQ(f.pread(cold.data(), cold.size(), 12345).get(), cold.size());
  EXPECT_EQ(std::string(cold.begin(), cold.end()), data.substr(12345, cold.size()));
  // Larger than the inline limit: through the pool, byte exact.
  std::vector<char> big(512 * 1024);
  EXPECT_EQ(f.pread(big.data(), big.size(), 7).get(), big.size());
  EXPECT_EQ(std::string(big.begin(), big.end()), data.substr(7, big.size()));
}

namespace {
std::size_t open_descriptors()
{
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++n;
  }
  return n;
}
}  // namespace

// Issue 14: an open whose IO all goes through the page cache costs one open(2): the O_DIRECT
// descriptor is opened on first use only, and a closed handle never opens it.
TEST(FileHandle, TheDirectIoDescriptorIsOpenedOnFirstUse)
{
  TempDir dir;
  const auto path = dir.file("lazy.bin");
  write_file(path, random_bytes(3 * 4096, 5));
  const std::size_t before = open_descriptors();
  FileHandle f(path, "r");
  EXPECT_EQ(open_descriptors(), before + 1);
  std::vector<char> buf(4096);
  EXPECT_EQ(f.read(buf.data(), buf.size(), 0, 0), buf.size());
  EXPECT_EQ(open_descriptors(), before + 1);
  if (!f.is_direct_io_supported()) { GTEST_SKIP() << "no O_DIRECT on this file system"; }
  EXPECT_EQ(open_descriptors(), before + 2);
  EXPECT_GE(f.fd(true), 0);
  EXPECT_NE(f.fd(true), f.fd());
  f.close();
  EXPECT_EQ(open_descriptors(), before);
  FileHandle g(path, "r");
  g.close();
  EXPECT_EQ(g.fd(true), -1);
  EXPECT_EQ(open_descriptors(), before);
}

// ---- regressions of the reliability audit: each name keeps its finding ----

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
TEST(FileHandleHardening, Audit2OverlappingAppendPwritesLeaveEveryBlockIntact)
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

TEST(FileHandleHardening, Audit2ThreadsAppendingWithWriteLeaveEveryBlockIntact)
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
TEST(FileHandleHardening, Audit5bCloseReportsAFailingCloseNamingTheFile)
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

TEST(FileHandleHardening, Audit5bCloseWithQueuedWorkDefersTheCloseAndSucceeds)
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

TEST(FileHandleHardening, Audit5bFsyncSucceedsOnAnOpenFileAndRefusesAClosedOne)
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
TEST(FileHandleHardening, Audit4ParallelReadWorksInAForkedChildAfterTheParentUsedThePool)
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
TEST(FileHandleHardening, Audit10TinyTaskSizeReadsInBoundedMemoryAndTime)
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

TEST(FileHandleHardening, Audit13DirectDescriptorIsTheSameFileEvenIfThePathIsReplacedBetweenOpens)
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

TEST(FileHandleHardening, Audit13WithoutProcADirectOpenOfAnotherFileTurnsDirectIoOff)
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
TEST(FileHandleHardening, Audit5bCloseRightAfterGetClosesTheDescriptorsThen)
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

TEST(FileHandleHardening, Audit17FailureToQueueAfterTheFirstJobStillCompletesTheRequest)
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

// Issue 23 (audit F6): an append's reservation outlived a failed write and a truncation, so
// the next append went past the file's end and left a hole of zeros; O_APPEND (Python's
// open(..., "a")) writes at the current end in both cases.
namespace {
/// RLIMIT_FSIZE lowered to `bytes` (writes past it fail with EFBIG, SIGXFSZ ignored) for one
/// scope.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes)
  {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered{bytes, saved_.rlim_max};
    EXPECT_EQ(::setrlimit(RLIMIT_FSIZE, &lowered), 0);
  }
  ~FileSizeLimit() { lift(); }
  void lift()
  {
    if (lifted_) { return; }
    lifted_ = true;
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&)            = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit saved_{};
  sighandler_t old_handler_{};
  bool lifted_{false};
};

std::vector<char> blocks_of(std::initializer_list<std::pair<char, std::size_t>> runs)
{
  std::vector<char> out;
  for (auto [c, n] : runs) {
    out.insert(out.end(), n, c);
  }
  return out;
}
}  // namespace

TEST(FileHandleHardening, AuditF6AFailedAppendLeavesNoHoleForTheNextOne)
{
  TempDir dir;
  const auto path = dir.file("failed_append.bin");
  const std::vector<char> a(8192, 'A'), b(4096, 'B'), c(4096, 'C'), d(4096, 'D');
  FileHandle f(path, "a");
  ASSERT_EQ(f.write(a.data(), a.size(), kvikio::unspecified_offset, 0), a.size());
  {
    FileSizeLimit limit(8192);
    EXPECT_THROW(f.write(b.data(), b.size(), kvikio::unspecified_offset, 0), std::system_error);
    EXPECT_THROW(f.pwrite(b.data(), b.size(), kvikio::unspecified_offset, 1024).get(),
                 std::system_error);
  }
  ASSERT_EQ(f.write(c.data(), c.size(), kvikio::unspecified_offset, 0), c.size());
  ASSERT_EQ(f.pwrite(d.data(), d.size(), kvikio::unspecified_offset, 1024).get(), d.size());
  f.close();
  EXPECT_EQ(read_file(path), blocks_of({{'A', 8192}, {'C', 4096}, {'D', 4096}}));
}

TEST(FileHandleHardening, AuditF6AFailedAppendGivesItsRangeBackWhileAnEarlierOneRuns)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  const auto path = dir.file("failed_append_in_flight.bin");
  const std::vector<char> a(8192, 'A'), b(4096, 'B'), c(4096, 'C');
  FileHandle f(path, "a");
  std::future<std::size_t> first, last;
  {
    kvikio::defaults::set_num_threads(1);
    std::promise<void> open_gate;
    auto gate =
      kvikio::defaults::thread_pool().submit_task([&open_gate] { open_gate.get_future().wait(); });
    first = f.pwrite(a.data(), a.size(), kvikio::unspecified_offset, 1 << 20);  // [0, 8192), queued
    {
      FileSizeLimit limit(8192);
      // [8192, 12288) fails at once on this thread while the first append waits in the queue.
      EXPECT_THROW(f.write(b.data(), b.size(), kvikio::unspecified_offset, 0), std::system_error);
    }
    last = f.pwrite(c.data(), c.size(), kvikio::unspecified_offset, 1 << 20);
    open_gate.set_value();
    gate.get();
  }
  EXPECT_EQ(first.get(), a.size());
  EXPECT_EQ(last.get(), c.size());
  f.close();
  EXPECT_EQ(read_file(path), blocks_of({{'A', 8192}, {'C', 4096}}));
}

TEST(FileHandleHardening, AuditF6AnAppendAfterATruncationGoesToTheNewEnd)
{
  TempDir dir;
  const auto path = dir.file("truncated_append.bin");
  const std::vector<char> a(12288, 'A'), b(4096, 'B'), c(5000, 'C');
  FileHandle f(path, "a");
  ASSERT_EQ(f.write(a.data(), a.size(), kvikio::unspecified_offset, 0), a.size());
  ASSERT_EQ(::truncate(path.c_str(), 0), 0);  // logrotate's copytruncate, `> file`
  ASSERT_EQ(f.write(b.data(), b.size(), kvikio::unspecified_offset, 0), b.size());
  ASSERT_EQ(::truncate(path.c_str(), 100), 0);
  ASSERT_EQ(f.pwrite(c.data(), c.size(), kvikio::unspecified_offset, 1024).get(), c.size());
  f.close();
  EXPECT_EQ(read_file(path), blocks_of({{'B', 100}, {'C', 5000}}));
}

// Issue 23 (audit F11): the per-thread descriptors counted only themselves, so in a process
// near RLIMIT_NOFILE they took its last free descriptors and its own next open failed with
// EMFILE. Run in a child: it lowers the limit and fills the descriptor table.
TEST(FileHandleHardening, AuditF11PerThreadDescriptorsNeverTakeTheProcesssLastOnes)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizers' own checks open descriptors (UBSan's memory probe makes a pipe), and in a
  // process whose descriptors are all taken they fail and report false errors (seen: an
  // "invalid vptr" on a shared_ptr's control block, gone as soon as descriptors are left free).
  GTEST_SKIP() << "needs a process without sanitizers: it exhausts the descriptor table";
#endif
  TempDir dir;
  const auto path = dir.file("starve.bin");
  const auto data = kvikio::test::random_bytes(1 << 20, 11);
  kvikio::test::write_file(path, data);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int status = 0;
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = 96;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) { ::_exit(10); }
    {
      FileHandle f(path, "r");
      std::vector<int> held;
      for (int fd; (fd = ::open("/dev/null", O_RDONLY)) >= 0;) {
        held.push_back(fd);
      }
      for (int k = 0; k < 6 && !held.empty(); ++k) {  // six left free
        ::close(held.back());
        held.pop_back();
      }
      std::vector<std::thread> threads;
      std::atomic<int> bad_reads{0};
      for (int t = 0; t < 12; ++t) {
        threads.emplace_back([&, t] {
          std::vector<char> out(4096);
          for (std::size_t k = 0; k < 20; ++k) {
            const std::size_t off = ((t * 20 + k) * 4096) % data.size();
            if (f.read(out.data(), out.size(), off, 0) != out.size() ||
                !std::equal(out.begin(), out.end(), data.begin() + static_cast<long>(off))) {
              ++bad_reads;
            }
          }
        });
      }
      for (auto& t : threads) {
        t.join();
      }
      if (bad_reads != 0) { status = 11; }
      for (int k = 0; k < 6 && status == 0; ++k) {
        if (::open("/dev/null", O_RDONLY) < 0) { status = 20 + k; }  // the process's own open
      }
    }
    ::_exit(status);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
    << "11: a read returned wrong bytes; 2k: the process's own open number k failed (EMFILE)";
}

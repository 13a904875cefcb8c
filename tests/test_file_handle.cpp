#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <future>
#include <string>
#include <vector>
#include <tuple>

#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/shim.hpp>

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

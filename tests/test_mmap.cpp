#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/mmap.hpp>

#include "test_utils.hpp"

using kvikio::MmapHandle;
using kvikio::test::random_bytes;
using kvikio::test::TempDir;
using kvikio::test::write_file;

TEST(Mmap, ReadsWholeFileAndRanges)
{
  TempDir dir;
  const auto path = dir.file("m.bin");
  const auto data = random_bytes(3 * 4096 + 123, 5);
  write_file(path, data);
  MmapHandle m(path, "r");
  EXPECT_EQ(m.file_size(), data.size());
  std::vector<char> all(data.size());
  EXPECT_EQ(m.read(all.data()), data.size());
  EXPECT_EQ(all, data);
  std::vector<char> part(5000);
  EXPECT_EQ(m.read(part.data(), 5000, 4097), 5000U);
  EXPECT_TRUE(std::equal(part.begin(), part.end(), data.begin() + 4097));
}

TEST(Mmap, PartialMappingAtUnalignedOffsetAndParallelRead)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(4);
  const auto path = dir.file("m.bin");
  const auto data = random_bytes(1 << 20, 6);
  write_file(path, data);
  MmapHandle m(path, "r", 500000, 1001);
  EXPECT_EQ(m.initial_map_offset(), 1001U);
  EXPECT_EQ(m.initial_map_size(), 500000U);
  std::vector<char> got(500000);
  EXPECT_EQ(m.pread(got.data(), std::nullopt, 1001, 4096).get(), got.size());
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + 1001));
  std::vector<char> tail(10);
  EXPECT_EQ(m.read(tail.data(), 10, 1001 + 500000 - 10), 10U);
  EXPECT_TRUE(std::equal(tail.begin(), tail.end(), data.begin() + 1001 + 500000 - 10));
}

TEST(Mmap, OutOfRangeRequestsNameTheRange)
{
  TempDir dir;
  const auto path = dir.file("m.bin");
  write_file(path, random_bytes(10000));
  MmapHandle m(path, "r", 4000, 2000);
  std::vector<char> buf(20000);
  KVIKIO_EXPECT_THROW_WITH(m.read(buf.data(), 10, 1000), std::out_of_range, "[2000, 6000)");
  KVIKIO_EXPECT_THROW_WITH(m.read(buf.data(), 4001, 2000), std::out_of_range, "4001");
  KVIKIO_EXPECT_THROW_WITH(m.pread(buf.data(), 10, 5995), std::out_of_range, path);
  KVIKIO_EXPECT_THROW_WITH(MmapHandle(path, "r", 20000, 0), std::out_of_range, "20000");
  KVIKIO_EXPECT_THROW_WITH(MmapHandle(path, "r", std::nullopt, 10001), std::out_of_range, "10001");
}

TEST(Mmap, BadFlagsMissingFileAndClosedHandle)
{
  TempDir dir;
  const auto path = dir.file("m.bin");
  write_file(path, random_bytes(100));
  KVIKIO_EXPECT_THROW_WITH(MmapHandle(path, "w"), std::invalid_argument, "'w'");
  KVIKIO_EXPECT_THROW_WITH(MmapHandle(dir.file("nope"), "r"), kvikio::GenericSystemError, "nope");
  MmapHandle m(path, "r");
  m.close();
  EXPECT_TRUE(m.closed());
  char c = 0;
  KVIKIO_EXPECT_THROW_WITH(m.read(&c, 1, 0), std::invalid_argument, "closed");
}

TEST(Mmap, EmptyFileMapsToNothing)
{
  TempDir dir;
  const auto path = dir.file("empty.bin");
  write_file(path, {});
  MmapHandle m(path, "r");
  EXPECT_EQ(m.file_size(), 0U);
  EXPECT_EQ(m.read(nullptr), 0U);
}

// Reliability audit #17: lifetimes.
TEST(MmapHardening, Audit17MmapClosedBeforeItsPreadFinishesStillReadsTheBytes)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  const auto data = kvikio::test::random_bytes(3 << 20, 17);
  const auto path = dir.file("mmap.bin");
  kvikio::test::write_file(path, data);
  std::vector<char> got(data.size());
  std::future<std::size_t> fut;
  {
    kvikio::test::PoolGate gate;
    auto handle = std::make_unique<kvikio::MmapHandle>(path, "r");
    fut         = handle->pread(got.data(), data.size(), 0, 1 << 20);
    handle->close();
    handle.reset();  // unmapped here before the fix: the queued copies then faulted
  }
  EXPECT_EQ(fut.get(), data.size());
  EXPECT_EQ(got, data);
}

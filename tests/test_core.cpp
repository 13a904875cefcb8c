#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include <kvikio/compat_mode.hpp>

#include "core/task_split.hpp"
#include "test_utils.hpp"

using kvikio::detail::page_size;
using kvikio::detail::split_into_tasks;
using kvikio::detail::TaskRange;

namespace {

void expect_covers(const std::vector<TaskRange>& tasks,
                   std::size_t size,
                   std::size_t offset,
                   std::size_t task_size)
{
  std::size_t pos = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto& t = tasks[i];
    EXPECT_EQ(t.buf_offset, pos);
    EXPECT_EQ(t.file_offset, offset + pos);
    EXPECT_GT(t.size, 0U);
    EXPECT_LE(t.size, task_size);
    if (task_size >= page_size && i > 0) {
      EXPECT_EQ(t.file_offset % page_size, 0U) << "task " << i;
    }
    pos += t.size;
  }
  EXPECT_EQ(pos, size);
}

}  // namespace

TEST(TaskSplit, EmptyRequestHasNoTasks) { EXPECT_TRUE(split_into_tasks(0, 123, 4096).empty()); }

TEST(TaskSplit, SmallRequestIsOneTask)
{
  auto tasks = split_into_tasks(100, 7, 1 << 20);
  ASSERT_EQ(tasks.size(), 1U);
  EXPECT_EQ(tasks[0], (TaskRange{0, 7, 100}));
}

TEST(TaskSplit, AlignedRequestSplitsEvenly)
{
  auto tasks = split_into_tasks(10 << 20, 0, 4 << 20);
  ASSERT_EQ(tasks.size(), 3U);
  EXPECT_EQ(tasks[0], (TaskRange{0, 0, 4 << 20}));
  EXPECT_EQ(tasks[1], (TaskRange{4 << 20, 4 << 20, 4 << 20}));
  EXPECT_EQ(tasks[2], (TaskRange{8 << 20, 8 << 20, 2 << 20}));
}

TEST(TaskSplit, UnalignedOffsetKeepsLaterBoundariesOnPages)
{
  auto tasks = split_into_tasks(3 * 8192 + 5, 100, 8192);
  expect_covers(tasks, 3 * 8192 + 5, 100, 8192);
  EXPECT_EQ(tasks[0].size, 8192U - 100U);
}

TEST(TaskSplit, CoversEveryByteForManyShapes)
{
  for (std::size_t task_size : {1UL, 3UL, 4095UL, 4096UL, 4097UL, 65536UL, 1UL << 20}) {
    for (std::size_t offset : {0UL, 1UL, 4095UL, 4096UL, 12345UL}) {
      for (std::size_t size : {1UL, 4095UL, 4096UL, 4097UL, 100000UL, (1UL << 20) + 3}) {
        if (size / task_size > 200000) { continue; }
        expect_covers(split_into_tasks(size, offset, task_size), size, offset, task_size);
      }
    }
  }
}

// The splitting loop as it was before TaskPieces computed pieces on demand (reliability audit
// #10): the new closed form must give exactly the same pieces.
std::vector<TaskRange> reference_split(std::size_t size, std::size_t offset, std::size_t task_size)
{
  std::vector<TaskRange> tasks;
  const std::size_t end = offset + size;
  for (std::size_t begin = offset; begin < end;) {
    std::size_t stop = std::min(end, begin + task_size);
    if (task_size >= page_size && stop < end) {
      const std::size_t aligned = stop / page_size * page_size;
      if (aligned > begin) { stop = aligned; }
    }
    tasks.push_back({begin - offset, begin, stop - begin});
    begin = stop;
  }
  return tasks;
}

TEST(TaskSplit, PiecesOnDemandMatchTheReferenceLoop)
{
  for (std::size_t task_size :
       {1UL, 2UL, 7UL, 4095UL, 4096UL, 4097UL, 8191UL, 8192UL, 12289UL, 65537UL, 1UL << 20}) {
    for (std::size_t offset : {0UL, 1UL, 100UL, 4095UL, 4096UL, 4097UL, 12345UL, 1UL << 20}) {
      for (std::size_t size : {0UL,
                               1UL,
                               2UL,
                               4095UL,
                               4096UL,
                               4097UL,
                               8192UL,
                               12289UL,
                               100000UL,
                               (1UL << 20) - 1,
                               (1UL << 20) + 3}) {
        if (size / task_size > 20000) { continue; }
        const kvikio::detail::TaskPieces pieces(size, offset, task_size);
        const auto expect = reference_split(size, offset, task_size);
        ASSERT_EQ(pieces.count(), expect.size()) << size << " " << offset << " " << task_size;
        for (std::size_t i = 0; i < expect.size(); ++i) {
          ASSERT_EQ(pieces[i], expect[i]) << size << " " << offset << " " << task_size << " #" << i;
        }
        EXPECT_EQ(split_into_tasks(size, offset, task_size), expect);
      }
    }
  }
}

TEST(CompatMode, ParsesNamesInAnyCase)
{
  EXPECT_EQ(kvikio::parse_compat_mode_str("on"), kvikio::CompatMode::ON);
  EXPECT_EQ(kvikio::parse_compat_mode_str("OFF"), kvikio::CompatMode::OFF);
  EXPECT_EQ(kvikio::parse_compat_mode_str("Auto"), kvikio::CompatMode::AUTO);
  EXPECT_EQ(kvikio::parse_compat_mode_str("true"), kvikio::CompatMode::ON);
  EXPECT_EQ(kvikio::to_string(kvikio::CompatMode::AUTO), "AUTO");
}

TEST(CompatMode, UnknownNameIsAnErrorNamingIt)
{
  KVIKIO_EXPECT_THROW_WITH(
    kvikio::parse_compat_mode_str("sometimes"), std::invalid_argument, "sometimes");
}

// The layout of batches, without a pool, a file or a GPU (api/batch_plan.hpp), and the ranges
// of a remote batch (remote/range_plan.hpp).
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "api/batch_plan.hpp"
#include "remote/range_plan.hpp"

using kvikio::detail::BatchPolicy;
using kvikio::detail::PieceShape;
using kvikio::detail::PoolGroup;

TEST(BatchPlan, SlicesShrinkAsTheBatchDrainsAndNeverStraddleTheTwoParts)
{
  // 1000 requests of their own, then 200 pieces of large ones, 4 threads, plain calls.
  const std::size_t count = 1000, total = 1200, min_slice = BatchPolicy::min_slice(false);
  std::size_t pos = 0, slices = 0, last = 0;
  while (const auto n = kvikio::detail::slice_length(pos, total, count, min_slice, 4)) {
    EXPECT_GE(n, std::min(min_slice, total - pos));
    if (pos < count) { EXPECT_LE(pos + n, count) << "slice at " << pos << " straddles"; }
    last = n;
    pos += n;
    ++slices;
  }
  EXPECT_EQ(pos, total);
  EXPECT_LE(last, min_slice);  // the batch ends in short slices, the threads together
  EXPECT_EQ(kvikio::detail::slice_length(0, total, count, min_slice, 4), 150U);  // 1/8 of it
  EXPECT_GT(slices, 8U);
  EXPECT_EQ(kvikio::detail::slice_length(total, total, count, min_slice, 4), 0U);
  EXPECT_EQ(BatchPolicy::min_slice(true), 8U);
}

TEST(BatchPlan, ThreadDescriptorsOnlyForReadsOfManyRequestsPerFile)
{
  using kvikio::detail::Direction;
  using kvikio::detail::use_thread_fds;
  EXPECT_TRUE(use_thread_fds(Direction::read, false, 4, 512, 2));
  EXPECT_FALSE(use_thread_fds(Direction::read, false, 4, 511, 2));  // a zarr array's chunks
  EXPECT_FALSE(use_thread_fds(Direction::write, false, 4, 10000, 1));
  EXPECT_FALSE(use_thread_fds(Direction::read, true, 4, 10000, 1));  // Direct IO
  EXPECT_FALSE(use_thread_fds(Direction::read, false, 1, 10000, 1));
}

TEST(BatchPlan, JobsCoverTheSlicesAndGroupsAtMostOneAThread)
{
  EXPECT_EQ(kvikio::detail::jobs_needed(16, 3, 2, 0), 2U);    // two slices' worth
  EXPECT_EQ(kvikio::detail::jobs_needed(16, 0, 2, 5), 5U);    // five pool groups
  EXPECT_EQ(kvikio::detail::jobs_needed(4, 1000, 2, 0), 4U);  // one a thread
  EXPECT_EQ(kvikio::detail::jobs_needed(4, 0, 8, 0), 0U);
}

TEST(BatchPlan, PoolGroupsStageSmallPiecesOfOneContextWithinABuffer)
{
  auto* ctx_a = reinterpret_cast<CUcontext>(std::uintptr_t{0x10});
  auto* ctx_b = reinterpret_cast<CUcontext>(std::uintptr_t{0x20});
  std::vector<PieceShape> shapes;
  for (int i = 0; i < 40; ++i) {
    shapes.push_back({4096, ctx_a, true});
  }
  shapes.push_back({8 << 20, ctx_a, false});  // large or cuFile: alone
  for (int i = 0; i < 3; ++i) {
    shapes.push_back({4096, ctx_b, true});
  }
  const auto groups = kvikio::detail::plan_pool_groups(shapes, 1, 64 * 1024);
  // One thread: groups as large as the smallest group size (16 pieces of 4 KiB).
  std::vector<std::pair<std::size_t, std::size_t>> got;
  for (const auto& g : groups) {
    got.emplace_back(g.begin, g.end);
    EXPECT_EQ(g.staged, g.begin != 40) << g.begin;
    std::size_t bytes = 0;
    for (auto k = g.begin; k < g.end; ++k) {
      bytes += shapes[k].size;
      EXPECT_EQ(shapes[k].context, shapes[g.begin].context);
    }
    if (g.staged) { EXPECT_LE(bytes, 64U * 1024); }
  }
  const std::vector<std::pair<std::size_t, std::size_t>> want{
    {0, 16}, {16, 32}, {32, 40}, {40, 41}, {41, 44}};
  EXPECT_EQ(got, want);
  // Many threads, a small buffer: the buffer bounds a group.
  for (const auto& g : kvikio::detail::plan_pool_groups(shapes, 64, 8192)) {
    if (g.staged) { EXPECT_LE(g.end - g.begin, 2U); }
  }
}

// Reliability audit F9: the PROCMAP_QUERY descriptor is opened on /proc/self/maps, which names
// the process that opened it; a forked child must ask about its own address space.
TEST(BatchPlan, MappingQueryOfAForkedChildAsksAboutTheChild)
{
  const auto* parent = kvikio::detail::this_process_mapping_query();
  if (parent == nullptr) { GTEST_SKIP() << "the kernel has no PROCMAP_QUERY (Linux 6.11)"; }
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // A mapping the parent does not have: its addresses were free in the parent at the fork.
    void* mine =
      ::mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mine == MAP_FAILED) { ::_exit(2); }
    std::memset(mine, 1, 1 << 20);
    const auto* query = kvikio::detail::this_process_mapping_query();
    const auto range =
      query != nullptr ? query->find(mine, 4096) : std::pair<std::uintptr_t, std::uintptr_t>{0, 0};
    const auto p = reinterpret_cast<std::uintptr_t>(mine);
    ::_exit(range.first <= p && p + 4096 <= range.second ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's query did not find the child's own mapping";
}

namespace {
std::vector<char> object_bytes(std::size_t n)
{
  std::vector<char> v(n);
  std::mt19937 gen(7);
  for (auto& c : v) {
    c = static_cast<char>(gen());
  }
  return v;
}
}  // namespace

TEST(RangePlan, NearHostPiecesJoinOneRangeWithinTaskSizeAndScatterByteExact)
{
  const auto object = object_bytes(1 << 20);
  // Requests: overlapping, duplicate, adjacent, a gap over the limit, one larger than a task.
  struct Req {
    std::size_t offset, size;
  };
  const std::vector<Req> reqs{
    {1000, 5000}, {3000, 5000}, {3000, 5000}, {8000, 100}, {8100 + 70000, 300}, {200000, 150000}};
  std::vector<std::vector<char>> bufs;
  for (const auto& r : reqs) {
    bufs.emplace_back(r.size, 0);
  }
  kvikio::detail::RangePlan plan(64 * 1024, 64 * 1024);
  for (std::size_t i = reqs.size(); i-- > 0;) {  // out of order on purpose
    plan.add(i, bufs[i].data(), reqs[i].size, reqs[i].offset, kvikio::detail::PointerInfo{});
  }
  std::size_t want_bytes = 0;
  for (const auto& r : reqs) {
    want_bytes += r.size;
  }
  EXPECT_EQ(plan.bytes(), want_bytes);
  const auto groups = plan.finish();
  // [1000, 8100) joined (overlaps, duplicate, adjacent); 78100 is 70000 past: its own range;
  // the 150000-byte request in 64 KiB pieces, each its own range (a range stays in task_size).
  ASSERT_EQ(groups.size(), 2U + 3U);
  EXPECT_EQ(groups[0].file_offset, 1000U);
  EXPECT_EQ(groups[0].size, 7100U);
  EXPECT_EQ(groups[0].first_index, 0U);
  EXPECT_EQ(groups[0].targets.size(), 4U);
  EXPECT_EQ(groups[1].file_offset, 78100U);
  for (const auto& g : groups) {
    EXPECT_LE(g.size, 64U * 1024);
    EXPECT_FALSE(g.device);
    // The server's bytes, in odd-sized pieces as the network gives them.
    kvikio::detail::RangeScatter sink{&g};
    for (std::size_t pos = 0; pos < g.size;) {
      const std::size_t n = std::min<std::size_t>(977, g.size - pos);
      sink(object.data() + g.file_offset + pos, n);
      pos += n;
    }
  }
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(0, std::memcmp(bufs[i].data(), object.data() + reqs[i].offset, reqs[i].size))
      << "request " << i;
  }
}

TEST(RangePlan, DevicePiecesAreRangesOfTheirOwnInRequestOrder)
{
  kvikio::detail::PointerInfo device;
  device.kind = kvikio::detail::MemoryKind::DEVICE;
  std::vector<char> a(100), b(10);
  kvikio::detail::RangePlan plan(64, 1 << 16);
  plan.add(0, a.data(), a.size(), 0, device);  // 64 + 36
  plan.add(1, b.data(), b.size(), 100, {});
  const auto groups = plan.finish();
  ASSERT_EQ(groups.size(), 3U);
  EXPECT_TRUE(groups[0].device);
  EXPECT_EQ(groups[0].size, 64U);
  EXPECT_TRUE(groups[1].device);
  EXPECT_EQ(groups[1].file_offset, 64U);
  EXPECT_EQ(groups[1].targets[0].dst, a.data() + 64);
  EXPECT_FALSE(groups[2].device);
  EXPECT_EQ(groups[2].first_index, 1U);
}

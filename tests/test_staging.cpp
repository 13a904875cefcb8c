// The staging schedules (device/staging.hpp) without CUDA: host memory stands in for the
// device, and copies are deferred until waited for, like async copies on a stream.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "device/staging.hpp"
#include "test_utils.hpp"

using kvikio::detail::DrainSource;
using kvikio::detail::StagingSink;

namespace {

/// A stand-in for one stream: a started copy runs only when waited for, so a half reused
/// before its wait would corrupt the result. Checks that a copy is only started after the one
/// before it was waited for (the promise that makes a whole-stream wait exact).
struct DeferredStream {
  struct Copy {
    char* to{nullptr};
    const char* from{nullptr};
    std::size_t n{0};
  };
  std::vector<Copy> queued;
  std::size_t starts{0}, waits{0};
  void start(char* to, const char* from, std::size_t n)
  {
    EXPECT_TRUE(queued.empty()) << "copy " << starts << " started before the previous was waited";
    queued.push_back({to, from, n});
    ++starts;
  }
  void wait()
  {
    for (const auto& c : queued) {
      std::memcpy(c.to, c.from, c.n);
    }
    queued.clear();
    ++waits;
  }
};

}  // namespace

TEST(StagingSink, DeliversEveryByteInPlaceWithTwoHalves)
{
  auto data = kvikio::test::random_bytes(1'000'003, 9);
  for (std::size_t capacity :
       {std::size_t{1}, std::size_t{4096}, std::size_t{65'537}, std::size_t{2'000'000}}) {
    SCOPED_TRACE(capacity);
    std::vector<char> dest(data.size(), 0), b0(capacity), b1(capacity);
    DeferredStream stream;
    StagingSink sink(
      b0.data(),
      b1.data(),
      capacity,
      [&](const char* p, std::size_t n, std::size_t off) { stream.start(dest.data() + off, p, n); },
      [&] { stream.wait(); });
    std::mt19937 rng(1);
    std::size_t pos = 0;
    while (pos < data.size()) {  // network-like pieces of varying size
      std::size_t n = std::min<std::size_t>(data.size() - pos, 1 + rng() % 100'000);
      sink(data.data() + pos, n);
      pos += n;
    }
    EXPECT_EQ(sink.finish(), data.size());
    EXPECT_EQ(dest, data);
    EXPECT_TRUE(stream.queued.empty());
    EXPECT_EQ(stream.starts, (data.size() + capacity - 1) / capacity);
    EXPECT_EQ(stream.waits, stream.starts);
  }
}

TEST(StagingSink, CopyOfAFullHalfRunsWhileTheOtherHalfFills)
{
  // The remote path used to wait for the whole stream right after starting a copy, so the
  // network and the copy did not overlap. A full half's copy must stay in flight until the
  // other half is full too.
  std::vector<char> dest(10, 0), b0(4), b1(4);
  DeferredStream stream;
  StagingSink sink(
    b0.data(),
    b1.data(),
    4,
    [&](const char* p, std::size_t n, std::size_t off) { stream.start(dest.data() + off, p, n); },
    [&] { stream.wait(); });
  sink("abcd", 4);  // half 0 full: its copy starts
  EXPECT_EQ(stream.starts, 1U);
  EXPECT_EQ(stream.waits, 0U);
  sink("efg", 3);  // fills half 1 while half 0's copy is queued
  EXPECT_EQ(stream.waits, 0U);
  sink("h", 1);  // half 1 full: waits for half 0's copy, then starts its own
  EXPECT_EQ(stream.waits, 1U);
  EXPECT_EQ(stream.starts, 2U);
  sink("ij", 2);
  EXPECT_EQ(sink.finish(), 10U);
  EXPECT_EQ(std::string(dest.data(), dest.size()), "abcdefghij");
}

TEST(StagingSink, FillsInPlaceThroughSpaceAndCommit)
{
  auto data = kvikio::test::random_bytes(10'000, 3);
  std::vector<char> dest(data.size(), 0), b0(4096), b1(4096);
  DeferredStream stream;
  StagingSink sink(
    b0.data(),
    b1.data(),
    4096,
    [&](const char* p, std::size_t n, std::size_t off) { stream.start(dest.data() + off, p, n); },
    [&] { stream.wait(); });
  std::size_t pos = 0;
  std::vector<const char*> starts;
  while (pos < data.size()) {
    auto space = sink.space();
    ASSERT_FALSE(space.empty());
    starts.push_back(space.data());
    const std::size_t n = std::min(space.size(), data.size() - pos);
    std::memcpy(space.data(), data.data() + pos, n);
    sink.commit(n);
    pos += n;
  }
  EXPECT_EQ(sink.finish(), data.size());
  EXPECT_EQ(dest, data);
  // Whole halves, alternating, each from the start of its half (so O_DIRECT may fill it).
  EXPECT_EQ(starts, (std::vector<const char*>{b0.data(), b1.data(), b0.data()}));
  KVIKIO_EXPECT_THROW_WITH(sink.commit(4097), std::invalid_argument, "space()");
}

TEST(StagingSink, RejectsMissingBuffers)
{
  std::vector<char> b(4);
  EXPECT_THROW(StagingSink(b.data(), nullptr, 4, {}, {}), std::invalid_argument);
  EXPECT_THROW(StagingSink(b.data(), b.data(), 0, {}, {}), std::invalid_argument);
}

TEST(DrainSource, ReturnsEveryByteInOrderWhileTheNextChunkIsCopied)
{
  auto data = kvikio::test::random_bytes(300'007, 5);
  for (std::size_t capacity : {std::size_t{1'000}, std::size_t{65'536}, std::size_t{400'000}}) {
    SCOPED_TRACE(capacity);
    std::vector<char> b0(capacity), b1(capacity), got;
    DeferredStream stream;
    DrainSource source(
      b0.data(),
      b1.data(),
      capacity,
      data.size(),
      [&](char* half, std::size_t n, std::size_t off) { stream.start(half, data.data() + off, n); },
      [&] { stream.wait(); });
    std::size_t chunks = 0;
    for (auto c = source.next(); c.size > 0; c = source.next(), ++chunks) {
      EXPECT_EQ(c.offset, got.size());
      EXPECT_EQ(c.data, chunks % 2 == 0 ? b0.data() : b1.data());
      // While the caller holds a chunk, the next one's copy is queued (not yet waited).
      const bool last = c.offset + c.size == data.size();
      EXPECT_EQ(stream.queued.size(), last ? 0U : 1U);
      got.insert(got.end(), c.data, c.data + c.size);
    }
    EXPECT_EQ(got, data);
    EXPECT_EQ(chunks, (data.size() + capacity - 1) / capacity);
    EXPECT_EQ(stream.starts, chunks);
    EXPECT_EQ(stream.waits, chunks);
    EXPECT_EQ(source.next().size, 0U);  // stays at the end
  }
}

TEST(DrainSource, EmptySourceCopiesNothing)
{
  std::vector<char> b0(8), b1(8);
  DeferredStream stream;
  DrainSource source(
    b0.data(),
    b1.data(),
    8,
    0,
    [&](char* h, const std::size_t n, std::size_t) { stream.start(h, h, n); },
    [&] { stream.wait(); });
  EXPECT_EQ(source.next().size, 0U);
  EXPECT_EQ(stream.starts, 0U);
  EXPECT_THROW(DrainSource(nullptr, b1.data(), 8, 8, {}, {}), std::invalid_argument);
}

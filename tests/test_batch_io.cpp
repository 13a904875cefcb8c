// Batches of reads and writes (kvikio/batch_io.hpp), host memory, through both backends
// (io_uring, skipped visibly where the kernel forbids it, and the thread pool) (issue 14).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <kvikio/batch_io.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>

#include "core/open_file.hpp"
#include "device/pointer.hpp"
#include "test_utils.hpp"

using kvikio::FileHandle;
using kvikio::FileIORequest;
using kvikio::IORequest;
using kvikio::test::descriptors_of;
using kvikio::test::random_bytes;
using kvikio::test::read_file;
using kvikio::test::TempDir;
using kvikio::test::write_file;

#if defined(__SANITIZE_THREAD__)
// libstdc++ is not built with ThreadSanitizer: the reference count of std::exception_ptr lives
// in uninstrumented code, so when a pool thread drops the last reference to an exception that
// future::get() rethrew (after the catching thread read what()), TSan cannot see the ordering
// the atomic count gives and reports the delete as a race.
extern "C" const char* __tsan_default_suppressions()
{
  return "race:std::__exception_ptr::exception_ptr::_M_release\n";
}
#endif

namespace {

/// Sets batch_backend (and the pool size) for one test, restoring both after.
class BatchIO : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override
  {
    if (GetParam() == "io_uring" && !kvikio::io_uring_unavailable_reason().empty()) {
      GTEST_SKIP() << "io_uring not available: " << kvikio::io_uring_unavailable_reason();
    }
    kvikio::defaults::set("batch_backend", GetParam());
    kvikio::defaults::set_num_threads(3);
    ASSERT_EQ(kvikio::batch_backend(), GetParam());
  }
  void TearDown() override { kvikio::defaults::set("batch_backend", std::string("auto")); }

  TempDir dir;
  kvikio::test::ScopedSettings restore;
};

struct Range {
  std::size_t offset;
  std::size_t size;
};

/// `n` ranges of odd sizes (0 to 20000 bytes) at odd offsets inside `file_size`.
std::vector<Range> random_ranges(std::size_t n, std::size_t file_size, unsigned seed)
{
  std::mt19937 rng(seed);
  std::vector<Range> out;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t size   = rng() % 20001;
    const std::size_t offset = rng() % (file_size - size + 1);
    out.push_back({offset, size});
  }
  return out;
}

TEST_P(BatchIO, ReadsEveryRequestByteForByte)
{
  const auto data = random_bytes(3 * 1024 * 1024 + 123, 7);
  write_file(dir.file("a.bin"), data);
  FileHandle f(dir.file("a.bin"), "r");
  const auto ranges = random_ranges(300, data.size(), 1);
  std::vector<std::vector<char>> bufs;
  std::vector<IORequest> requests;
  std::size_t total = 0;
  for (const auto& r : ranges) {
    bufs.emplace_back(r.size + 1, '\x5a');  // one byte more: it must stay untouched
    total += r.size;
  }
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    requests.push_back({bufs[i].data(), ranges[i].size, ranges[i].offset});
  }
  EXPECT_EQ(f.pread_batch(requests).get(), total);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto begin = data.begin() + static_cast<long>(ranges[i].offset);
    ASSERT_TRUE(std::equal(bufs[i].begin(), bufs[i].end() - 1, begin)) << "request " << i;
    ASSERT_EQ(bufs[i].back(), '\x5a') << "request " << i << " wrote past its buffer";
  }
}

// Issue 14: the batch is split into slices, one per pass of a pool thread; at 16 threads,
// with thousands of requests of odd sizes at odd offsets in one buffer, across two files
// taken in runs and alternately, each request gets its own bytes and nothing else.
TEST_P(BatchIO, ManyOddRequestsOnSixteenThreadsAreByteExact)
{
  kvikio::defaults::set_num_threads(16);
  std::vector<std::vector<char>> contents;
  std::vector<FileHandle> files;
  for (int k = 0; k < 2; ++k) {
    contents.push_back(random_bytes(2 * 1024 * 1024 + 7 * k + 1, 40 + k));
    write_file(dir.file("many" + std::to_string(k)), contents.back());
    files.emplace_back(dir.file("many" + std::to_string(k)), "r");
  }
  const auto ranges = random_ranges(5000, contents[0].size(), 9);
  std::vector<std::size_t> starts;
  std::size_t total = 0;
  for (const auto& r : ranges) {
    starts.push_back(total + starts.size());  // one guard byte after each request
    total += r.size;
  }
  std::vector<char> buf(total + ranges.size(), '\x5a');
  std::vector<FileIORequest> reads;
  std::vector<int> which;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    which.push_back(i < 2500 ? static_cast<int>(i / 700 % 2) : static_cast<int>(i % 2));
    reads.push_back({&files[which[i]], buf.data() + starts[i], ranges[i].size, ranges[i].offset});
  }
  EXPECT_EQ(kvikio::pread_batch(reads).get(), total);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto begin = contents[which[i]].begin() + static_cast<long>(ranges[i].offset);
    const auto got   = buf.begin() + static_cast<long>(starts[i]);
    ASSERT_TRUE(std::equal(got, got + static_cast<long>(ranges[i].size), begin)) << "request " << i;
    ASSERT_EQ(buf[starts[i] + ranges[i].size], '\x5a') << "request " << i << " wrote past it";
  }
}

TEST_P(BatchIO, WritesEveryRequestByteForByte)
{
  const auto data = random_bytes(1024 * 1024 + 77, 8);
  FileHandle f(dir.file("out.bin"), "w");
  // Disjoint pieces of odd sizes covering the whole file, in shuffled order.
  std::vector<IORequest> requests;
  std::mt19937 rng(2);
  for (std::size_t off = 0; off < data.size();) {
    const std::size_t n = std::min<std::size_t>(1 + rng() % 9000, data.size() - off);
    requests.push_back({const_cast<char*>(data.data()) + off, n, off});
    off += n;
  }
  std::shuffle(requests.begin(), requests.end(), rng);
  EXPECT_EQ(f.pwrite_batch(requests).get(), data.size());
  f.close();
  EXPECT_EQ(read_file(dir.file("out.bin")), data);
}

TEST_P(BatchIO, ReadsAndWritesAcrossSeveralFiles)
{
  std::vector<std::vector<char>> contents;
  std::vector<FileHandle> files;
  for (int k = 0; k < 3; ++k) {
    contents.push_back(random_bytes(200000 + 4096 * k + k, 20 + k));
    write_file(dir.file("in" + std::to_string(k)), contents.back());
    files.emplace_back(dir.file("in" + std::to_string(k)), "r");
  }
  std::vector<std::vector<char>> bufs;
  std::vector<FileIORequest> reads;
  std::vector<std::size_t> which;
  auto ranges = random_ranges(90, 200000, 3);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    bufs.emplace_back(ranges[i].size);
    which.push_back(i % 3);
  }
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    reads.push_back({&files[which[i]], bufs[i].data(), ranges[i].size, ranges[i].offset});
  }
  kvikio::pread_batch(reads).get();
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const auto begin = contents[which[i]].begin() + static_cast<long>(ranges[i].offset);
    ASSERT_TRUE(std::equal(bufs[i].begin(), bufs[i].end(), begin)) << "request " << i;
  }
  // Each file written whole, in two halves, by one batch.
  std::vector<FileHandle> outs;
  std::vector<FileIORequest> writes;
  for (int k = 0; k < 3; ++k) {
    outs.emplace_back(dir.file("out" + std::to_string(k)), "w");
  }
  std::size_t total = 0;
  for (int k = 0; k < 3; ++k) {
    auto& c         = contents[k];
    const auto half = c.size() / 2 + 1;
    writes.push_back({&outs[k], c.data() + half, c.size() - half, half});
    writes.push_back({&outs[k], c.data(), half, 0});
    total += c.size();
  }
  EXPECT_EQ(kvikio::pwrite_batch(writes).get(), total);
  for (int k = 0; k < 3; ++k) {
    outs[k].close();
    EXPECT_EQ(read_file(dir.file("out" + std::to_string(k))), contents[k]) << "file " << k;
  }
}

TEST_P(BatchIO, RequestsLargerThanTaskSizeAreCutIntoPieces)
{
  kvikio::defaults::set_task_size(64 * 1024);
  const auto data = random_bytes(2 * 1024 * 1024 + 9, 12);
  write_file(dir.file("big.bin"), data);
  FileHandle f(dir.file("big.bin"), "r+");
  std::vector<char> big(1024 * 1024 + 5), small(100), tail(300000);
  // The last one runs past the end: its short count comes from the last piece.
  EXPECT_EQ(f.pread_batch({{big.data(), big.size(), 4097},
                           {small.data(), small.size(), 3},
                           {tail.data(), tail.size(), data.size() - 100000}})
              .get(),
            big.size() + small.size() + 100000);
  EXPECT_TRUE(std::equal(big.begin(), big.end(), data.begin() + 4097));
  EXPECT_TRUE(std::equal(small.begin(), small.end(), data.begin() + 3));
  EXPECT_TRUE(std::equal(tail.begin(), tail.begin() + 100000, data.end() - 100000));
  // Written back one byte further on, in pieces too.
  EXPECT_EQ(f.pwrite_batch({{big.data(), big.size(), 4098}}).get(), big.size());
  const auto after = read_file(dir.file("big.bin"));
  EXPECT_TRUE(std::equal(big.begin(), big.end(), after.begin() + 4098));
}

TEST_P(BatchIO, ReadsPastTheEndOfTheFileGiveAShortCount)
{
  const auto data = random_bytes(5000, 9);
  write_file(dir.file("short.bin"), data);
  FileHandle f(dir.file("short.bin"), "r");
  std::vector<char> a(4096), b(4096, 'x'), c(100, 'y');
  EXPECT_EQ(
    f.pread_batch({{a.data(), 4096, 0}, {b.data(), 4096, 4000}, {c.data(), 100, 6000}}).get(),
    4096U + 1000U);
  EXPECT_TRUE(std::equal(a.begin(), a.end(), data.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.begin() + 1000, data.begin() + 4000));
  EXPECT_TRUE(std::all_of(b.begin() + 1000, b.end(), [](char ch) { return ch == 'x'; }));
  EXPECT_TRUE(std::all_of(c.begin(), c.end(), [](char ch) { return ch == 'y'; }));
}

TEST_P(BatchIO, AnEmptyBatchIsReadyWithZero)
{
  write_file(dir.file("e.bin"), random_bytes(10));
  FileHandle f(dir.file("e.bin"), "r+");
  EXPECT_EQ(f.pread_batch({}).get(), 0U);
  EXPECT_EQ(f.pwrite_batch({}).get(), 0U);
  EXPECT_EQ(kvikio::pread_batch({}).get(), 0U);
  char byte = 0;
  EXPECT_EQ(f.pread_batch({{&byte, 0, 3}, {&byte, 0, 100}}).get(), 0U);
}

TEST_P(BatchIO, ABadRequestIsRejectedByIndexBeforeAnyIO)
{
  const auto data = random_bytes(8192, 10);
  write_file(dir.file("r.bin"), data);
  FileHandle ro(dir.file("r.bin"), "r");
  FileHandle out(dir.file("w.bin"), "w");
  FileHandle closed(dir.file("c.bin"), "w");
  closed.close();
  std::vector<char> buf(4096, 'q');
  // A write to the read-only file at index 1: nothing is written, even request 0.
  KVIKIO_EXPECT_THROW_WITH(
    kvikio::pwrite_batch({{&out, buf.data(), 4096, 0}, {&ro, buf.data(), 10, 0}}).get(),
    std::invalid_argument,
    "batch request 1: cannot write to '" + dir.file("r.bin") + "': it was opened read-only");
  EXPECT_EQ(out.nbytes(), 0U);
  KVIKIO_EXPECT_THROW_WITH(
    kvikio::pread_batch(
      {{&ro, buf.data(), 10, 0}, {&ro, buf.data(), 10, 0}, {&closed, buf.data(), 1, 0}})
      .get(),
    std::invalid_argument,
    "batch request 2: IO on closed file");
  KVIKIO_EXPECT_THROW_WITH(ro.pread_batch({{buf.data(), 10, ~std::size_t{0} - 4}}).get(),
                           std::overflow_error,
                           "batch request 0: file offset");
  KVIKIO_EXPECT_THROW_WITH(
    kvikio::pread_batch({{nullptr, buf.data(), 1, 0}}).get(), std::invalid_argument, "null file");
  EXPECT_TRUE(std::all_of(buf.begin(), buf.end(), [](char ch) { return ch == 'q'; }));
}

TEST_P(BatchIO, AnErrorInTheMiddleReportsTheFirstAfterEveryRequestFinished)
{
  // /dev/full refuses every write with ENOSPC: requests 1 and 3 fail, 0, 2 and 4 must still
  // be written in full before the future reports request 1's error.
  FileHandle full("/dev/full", "w");
  FileHandle out(dir.file("ok.bin"), "w");
  const auto data = random_bytes(3 * 65536, 11);
  auto* p         = const_cast<char*>(data.data());
  std::vector<FileIORequest> writes{{&out, p, 65536, 0},
                                    {&full, p, 1000, 0},
                                    {&out, p + 65536, 65536, 65536},
                                    {&full, p, 1000, 8192},
                                    {&out, p + 131072, 65536, 131072}};
  try {
    kvikio::pwrite_batch(writes).get();
    ADD_FAILURE() << "expected an error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ENOSPC);
    EXPECT_NE(std::string(e.what()).find("'/dev/full' at offset 0 "), std::string::npos)
      << e.what();
  }
  out.close();
  EXPECT_EQ(read_file(dir.file("ok.bin")), data);
}

// Issue 14: threads reading one file through one open file description all update its
// reference count (16 threads of 4 KiB cached reads: 4.7M reads/s on the H200, against 15-18M
// through a description per thread). A batch of many requests per file reads through each
// pool thread's own description, opened once and closed with the file; a batch of a request
// or two per file (a zarr array's chunks) opens none.
TEST_P(BatchIO, ManyRequestsPerFileReadThroughEachThreadsOwnDescriptor)
{
  kvikio::defaults::set_num_threads(4);
  const auto data = random_bytes(8 * 1024 * 1024 + 5, 21);
  write_file(dir.file("hot.bin"), data);
  const auto path = dir.file("hot.bin");
  FileHandle f(path, "r");
  ASSERT_EQ(descriptors_of(path), 1U);
  auto read_and_compare = [&](unsigned seed) {
    const auto ranges = random_ranges(3000, data.size(), seed);
    std::vector<std::vector<char>> bufs;
    std::vector<IORequest> requests;
    std::size_t total = 0;
    for (const auto& r : ranges) {
      bufs.emplace_back(r.size);
      total += r.size;
    }
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      requests.push_back({bufs[i].data(), ranges[i].size, ranges[i].offset});
    }
    ASSERT_EQ(f.pread_batch(requests).get(), total);
    for (std::size_t i = 0; i < ranges.size(); ++i) {
      const auto begin = data.begin() + static_cast<long>(ranges[i].offset);
      ASSERT_TRUE(std::equal(bufs[i].begin(), bufs[i].end(), begin)) << "request " << i;
    }
  };
  read_and_compare(1);
  EXPECT_GT(descriptors_of(path), 1U) << "no thread read through a descriptor of its own";
  for (unsigned seed = 2; seed < 6; ++seed) {  // each thread opens its own once, ever
    read_and_compare(seed);
    EXPECT_LE(descriptors_of(path), 1U + 4) << "more descriptors than pool threads";
  }
  f.close();
  EXPECT_EQ(descriptors_of(path), 0U) << "the threads' descriptors outlived the file";

  // One request per file: the shared descriptor.
  std::vector<FileHandle> files;
  std::vector<std::vector<char>> bufs(40, std::vector<char>(4096));
  std::vector<FileIORequest> requests;
  for (int k = 0; k < 40; ++k) {
    files.emplace_back(path, "r");
  }
  for (int k = 0; k < 40; ++k) {
    requests.push_back({&files[k], bufs[k].data(), 4096, static_cast<std::size_t>(k) * 4096});
  }
  ASSERT_EQ(descriptors_of(path), 40U);
  ASSERT_EQ(kvikio::pread_batch(requests).get(), 40U * 4096);
  EXPECT_EQ(descriptors_of(path), 40U);
  for (int k = 0; k < 40; ++k) {
    EXPECT_TRUE(std::equal(bufs[k].begin(), bufs[k].end(), data.begin() + k * 4096)) << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends,
                         BatchIO,
                         ::testing::Values("io_uring", "thread_pool"),
                         [](const auto& p) { return p.param; });

TEST(BatchBackend, TheSettingTakesThreeWordsAndNamesThemOtherwise)
{
  KVIKIO_EXPECT_THROW_WITH(kvikio::defaults::set("batch_backend", std::string("uring")),
                           std::invalid_argument,
                           "one of auto io_uring thread_pool");
  kvikio::defaults::set("batch_backend", std::string(" Thread_Pool "));
  EXPECT_EQ(std::get<std::string>(kvikio::defaults::get("batch_backend")), "thread_pool");
  EXPECT_EQ(kvikio::batch_backend(), "thread_pool");
  kvikio::defaults::set("batch_backend", std::string("auto"));
  EXPECT_EQ(kvikio::batch_backend(),
            kvikio::io_uring_unavailable_reason().empty() ? "io_uring" : "thread_pool");
}

// Issue 14: a large batch with a driver takes buffers inside plain read-write mappings as host
// memory without asking it. Device-file mappings (where the driver puts pinned, managed and
// mapped device memory), inaccessible reservations (device address ranges), anon_inode
// objects and read-only or unparsable lines are left out; paths may hold spaces.
TEST(HostMappings, KeepsOnlyPlainReadWriteMappings)
{
  const auto maps = kvikio::detail::HostMappings::parse(
    "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/prog\n"
    "00651000-00652000 rw-p 00051000 08:02 173521      /usr/bin/prog\n"
    "01d9c000-01dbd000 rw-p 00000000 00:00 0           [heap]\n"
    "200000000-200100000 rwxs 411c5a000 00:06 512      /dev/nvidiactl\n"
    "200104000-200120000 ---p 00000000 00:00 0 \n"
    "300000000-300200000 rw-s 00000000 00:06 513       /dev/nvidia-uvm\n"
    "7f0000000000-7f0000100000 rw-p 00000000 00:00 0 \n"
    "7f0000100000-7f0000101000 rw-s 00000000 00:01 77  /dev/zero (deleted)\n"
    "7f0000200000-7f0000300000 rw-s 00000000 00:0e 9   anon_inode:dmabuf\n"
    "7f0000300000-7f0000301000 r--p 00000000 08:02 1   /usr/lib/x.so\n"
    "7f0000400000-7f0000500000 rw-s 00000000 08:02 99  /tmp/a file with spaces\n"
    "7f0000500000-7f0000600000 rw-p 00000000 00:00 0\n"
    "7f0000600000-7f0000700000 rwxp 00000000 00:00 0\n"
    "not a mapping\n"
    "7f0000800000-7f0000700000 rw-p 00000000 00:00 0\n"
    "7f0000900000-7f0000a00000 rw-p\n"
    "7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0   [stack]\n"
    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0   [vsyscall]");
  using R = std::pair<std::uintptr_t, std::uintptr_t>;
  const std::vector<R> expected{{0x651000, 0x652000},
                                {0x1d9c000, 0x1dbd000},
                                {0x7f0000000000, 0x7f0000100000},
                                {0x7f0000400000, 0x7f0000500000},
                                {0x7f0000500000, 0x7f0000600000},
                                {0x7f0000600000, 0x7f0000700000},
                                {0x7ffd00000000, 0x7ffd00021000}};
  EXPECT_EQ(maps.ranges(), expected);
  auto at = [](std::uintptr_t p) { return reinterpret_cast<const void*>(p); };
  EXPECT_TRUE(maps.contains(at(0x1d9c000), 0x21000));
  EXPECT_FALSE(maps.contains(at(0x1d9c000), 0x21001));
  EXPECT_FALSE(maps.contains(at(0x1d9bfff), 2));
  EXPECT_FALSE(maps.contains(at(0x200000000), 8));        // /dev/nvidiactl
  EXPECT_FALSE(maps.contains(at(0x200110000), 8));        // reserved ---p
  EXPECT_FALSE(maps.contains(at(0x300000000), 8));        // /dev/nvidia-uvm
  EXPECT_FALSE(maps.contains(at(0x7f0000100000), 8));     // /dev/zero
  EXPECT_FALSE(maps.contains(at(0x7f0000200000), 8));     // anon_inode
  EXPECT_FALSE(maps.contains(at(0x7f00000ff000), 8192));  // into the /dev/zero mapping
  // Across two adjacent mappings: each half is inside one, the whole is not (looked up).
  EXPECT_TRUE(maps.contains(at(0x7f00005ff000), 4096));
  EXPECT_TRUE(maps.contains(at(0x7f0000600000), 4096));
  EXPECT_FALSE(maps.contains(at(0x7f00005ff000), 8192));
  EXPECT_FALSE(maps.contains(at(0xffffffffff600000), 1));
  EXPECT_TRUE(kvikio::detail::HostMappings::parse("").ranges().empty());
}

/// Two mappings of this process for the mapping tests: `two`, two adjacent read-write pages
/// that are mappings of their own (a flag of its own on the second page splits them, both
/// rw-p), and `none`, an inaccessible page.
struct TestMappings {
  static constexpr std::size_t page = 4096;
  void* two = ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  void* none = ::mmap(nullptr, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  bool ok    = two != MAP_FAILED && none != MAP_FAILED &&
            ::madvise(static_cast<char*>(two) + page, page, MADV_DONTFORK) == 0;
  TestMappings()                               = default;
  TestMappings(const TestMappings&)            = delete;
  TestMappings& operator=(const TestMappings&) = delete;
  ~TestMappings()
  {
    if (two != MAP_FAILED) { ::munmap(two, 2 * page); }
    if (none != MAP_FAILED) { ::munmap(none, page); }
  }
};

// This process's own mappings: the heap, an anonymous mapping and the stack are found, an
// inaccessible reservation is not, and a buffer across two adjacent mappings is not either.
TEST(HostMappings, FindsThisProcessHeapStackAndMappings)
{
  std::vector<char> heap(3 << 20, 'x');
  char stack[4096];
  std::memset(stack, 1, sizeof stack);
  const TestMappings m;
  ASSERT_TRUE(m.ok);
  const std::size_t page = TestMappings::page;
  void* two              = m.two;
  void* none             = m.none;
  const auto maps        = kvikio::detail::HostMappings::read_self();
  EXPECT_TRUE(maps.contains(heap.data(), heap.size()));
  EXPECT_TRUE(maps.contains(stack, sizeof stack));
  EXPECT_TRUE(maps.contains(two, page));
  EXPECT_TRUE(maps.contains(static_cast<char*>(two) + page, page));
  EXPECT_FALSE(maps.contains(two, 2 * page));
  EXPECT_FALSE(maps.contains(none, 1));
}

// The same answers one buffer at a time from the kernel (PROCMAP_QUERY, Linux 6.11): every
// range of the text list is found whole from any address inside it, and what the text leaves
// out (an inaccessible reservation, a device file, a buffer across two mappings) is not.
TEST(MappingQuery, AgreesWithTheTextListOfThisProcess)
{
  const kvikio::detail::MappingQuery query;
  if (!query.available()) { GTEST_SKIP() << "this kernel has no PROCMAP_QUERY (Linux < 6.11)"; }
  std::vector<char> heap(3 << 20, 'x');
  const TestMappings m;
  ASSERT_TRUE(m.ok);
  const std::size_t page = TestMappings::page;
  void* two              = m.two;
  void* none             = m.none;
  const int zero_fd      = ::open("/dev/zero", O_RDWR);
  ASSERT_GE(zero_fd, 0);
  void* dev = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_SHARED, zero_fd, 0);
  ASSERT_NE(dev, MAP_FAILED);
  const auto maps = kvikio::detail::HostMappings::read_self();
  ASSERT_FALSE(maps.ranges().empty());
  // Each range of the list is asked for whole, by its last byte, and one byte longer. Ranges
  // that changed meanwhile (reading the list allocates; a sanitizer's runtime maps and
  // unmaps memory of its own) are left out: only those found unchanged in the list read again
  // after the queries are compared. Even those may have been split and joined again between
  // the two readings (seen under TSan), so the kernel may answer with a part of a range, but
  // never with more than the list holds: no buffer is taken for host memory that the list
  // would not take.
  using R = std::pair<std::uintptr_t, std::uintptr_t>;
  struct Answers {
    R whole, last, longer;
  };
  std::vector<Answers> answers;
  for (const auto& [start, end] : maps.ranges()) {
    const auto* first = reinterpret_cast<const void*>(start);
    const R whole     = query.find(first, end - start);
    answers.push_back({whole,
                       query.find(reinterpret_cast<const void*>(end - 1), 1),
                       query.find(first, std::max(whole.second, end) - start + 1)});
  }
  const auto again     = kvikio::detail::HostMappings::read_self();
  std::size_t compared = 0;
  std::size_t exact    = 0;
  for (std::size_t k = 0; k < maps.ranges().size(); ++k) {
    const auto [start, end] = maps.ranges()[k];
    const auto& later       = again.ranges();
    if (std::find(later.begin(), later.end(), R(start, end)) == later.end()) { continue; }
    ++compared;
    const auto& a = answers[k];
    if (a.whole == R(start, end) && a.last == R(start, end)) {
      ++exact;
    } else {
      EXPECT_EQ(a.whole, R(0, 0)) << std::hex << start;
      EXPECT_TRUE(a.last == R(0, 0) || (a.last.first >= start && a.last.second == end))
        << std::hex << start;
    }
    EXPECT_EQ(a.longer, R(0, 0)) << std::hex << start;
  }
  EXPECT_GT(exact, compared / 2);
  EXPECT_GT(compared, maps.ranges().size() / 2);
  EXPECT_NE(query.find(heap.data(), heap.size()), R(0, 0));
  EXPECT_NE(query.find(two, page), R(0, 0));
  EXPECT_EQ(query.find(two, 2 * page), R(0, 0));
  EXPECT_EQ(query.find(none, 1), R(0, 0));
  EXPECT_EQ(query.find(dev, 8), R(0, 0));  // /dev/zero: a device file
  EXPECT_FALSE(maps.contains(dev, 8));
  ::munmap(dev, page);
  ::close(zero_fd);
}

}  // namespace

// The threads' own descriptors (issue 14), one by one.
namespace {
bool same_file(int a, int b)
{
  struct stat sa {};
  struct stat sb {};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}
}  // namespace

TEST(ThreadDescriptors, EachThreadHasItsOwnOfTheSameFileUntilTheFileCloses)
{
  TempDir dir;
  const auto data = random_bytes(10000, 3);
  write_file(dir.file("f.bin"), data);
  kvikio::detail::OpenFile file(dir.file("f.bin"), "r", 0644);
  const int mine = file.read_fd_for_thread();
  EXPECT_NE(mine, file.fd());
  EXPECT_TRUE(same_file(mine, file.fd()));
  EXPECT_EQ(file.read_fd_for_thread(), mine) << "opened again on the same thread";
  int other = -1;
  std::thread([&] { other = file.read_fd_for_thread(); }).join();
  EXPECT_NE(other, mine);
  EXPECT_NE(other, file.fd());
  EXPECT_TRUE(same_file(other, file.fd()));
  // Its own position and flags: read-only, close-on-exec; reads give the file's bytes.
  EXPECT_EQ(::fcntl(mine, F_GETFL) & O_ACCMODE, O_RDONLY);
  EXPECT_NE(::fcntl(mine, F_GETFD) & FD_CLOEXEC, 0);
  std::vector<char> got(100);
  ASSERT_EQ(::pread(mine, got.data(), got.size(), 5000), 100);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + 5000));
  file.close();
  EXPECT_EQ(::fcntl(mine, F_GETFD), -1);
  EXPECT_EQ(::fcntl(other, F_GETFD), -1);
  EXPECT_EQ(file.read_fd_for_thread(), -1) << "a closed file gave a descriptor";
}

TEST(ThreadDescriptors, ReachTheOpenFileEvenAfterItsPathWasRemoved)
{
  TempDir dir;
  const auto data = random_bytes(10000, 4);
  write_file(dir.file("gone.bin"), data);
  kvikio::detail::OpenFile file(dir.file("gone.bin"), "r", 0644);
  ASSERT_EQ(::unlink(dir.file("gone.bin").c_str()), 0);
  write_file(dir.file("gone.bin"), random_bytes(10000, 5));  // another file at the path
  const int fd = file.read_fd_for_thread();
  EXPECT_NE(fd, file.fd());
  std::vector<char> got(data.size());
  ASSERT_EQ(::pread(fd, got.data(), got.size(), 0), static_cast<ssize_t>(data.size()));
  EXPECT_EQ(got, data);
}

TEST(ThreadDescriptors, TheSharedOneServesWithoutProcAndForWriteOnlyFiles)
{
  TempDir dir;
  write_file(dir.file("f.bin"), random_bytes(100, 6));
  {
    kvikio::detail::OpenFile write_only(dir.file("f.bin"), "w", 0644);
    EXPECT_EQ(write_only.read_fd_for_thread(), write_only.fd());
  }
  const char* saved = kvikio::detail::open_file_test_hooks.proc_fd_dir;
  kvikio::detail::open_file_test_hooks.proc_fd_dir = "/nonexistent-proc/self/fd/";
  kvikio::detail::OpenFile file(dir.file("f.bin"), "r", 0644);
  const int fd                                     = file.read_fd_for_thread();
  kvikio::detail::open_file_test_hooks.proc_fd_dir = saved;
  EXPECT_EQ(fd, file.fd());
  EXPECT_EQ(file.read_fd_for_thread(), file.fd()) << "a refused open is not retried";
}

TEST(ThreadDescriptors, OnlyAShareOfTheProcessDescriptorsIsTaken)
{
  TempDir dir;
  write_file(dir.file("f.bin"), random_bytes(100, 7));
  auto& hooks              = kvikio::detail::open_file_test_hooks;
  hooks.thread_fds_allowed = 2;
  std::vector<std::unique_ptr<kvikio::detail::OpenFile>> files;
  for (int k = 0; k < 3; ++k) {
    files.push_back(std::make_unique<kvikio::detail::OpenFile>(dir.file("f.bin"), "r", 0644));
  }
  EXPECT_NE(files[0]->read_fd_for_thread(), files[0]->fd());
  EXPECT_NE(files[1]->read_fd_for_thread(), files[1]->fd());
  EXPECT_EQ(files[2]->read_fd_for_thread(), files[2]->fd()) << "past the allowance";
  files[0]->close();  // gives its descriptor back to the allowance
  files.push_back(std::make_unique<kvikio::detail::OpenFile>(dir.file("f.bin"), "r", 0644));
  EXPECT_NE(files[3]->read_fd_for_thread(), files[3]->fd());
  files.clear();
  hooks.thread_fds_allowed = 0;
}

// Small reads outside batches (read(), pread().get()) run on the calling thread: through the
// file's own descriptor while one thread reads it, through each thread's own once several do.
TEST(ThreadDescriptors, SmallReadsOfSeveralThreadsUseTheirOwnDescriptors)
{
  TempDir dir;
  kvikio::test::ScopedSettings restore;
  const auto data = random_bytes(4 * 1024 * 1024 + 9, 8);
  const auto path = dir.file("small.bin");
  write_file(path, data);
  FileHandle f(path, "r");
  auto small_reads = [&](unsigned seed, bool futures) {
    std::mt19937 rng(seed);
    std::vector<char> buf(5000);
    for (int i = 0; i < 300; ++i) {
      const std::size_t size   = 1 + rng() % buf.size();
      const std::size_t offset = rng() % (data.size() - size);
      const std::size_t got =
        futures ? f.pread(buf.data(), size, offset).get() : f.read(buf.data(), size, offset, 0);
      ASSERT_EQ(got, size);
      ASSERT_TRUE(std::equal(buf.begin(),
                             buf.begin() + static_cast<long>(size),
                             data.begin() + static_cast<long>(offset)))
        << "read " << i << " of thread " << seed;
    }
  };
  small_reads(1, false);
  small_reads(2, true);
  EXPECT_EQ(descriptors_of(path), 1U) << "one reading thread opened another descriptor";
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { small_reads(10 + t, t % 2 == 0); });
  }
  for (auto& t : threads) {
    t.join();
  }
  EXPECT_GE(descriptors_of(path), 2U) << "threads sharing the file shared its descriptor";
  EXPECT_LE(descriptors_of(path), 1U + 4) << "more descriptors than reading threads";
  f.close();
  EXPECT_EQ(descriptors_of(path), 0U);
}

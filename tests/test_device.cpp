// Device memory through FileHandle and MmapHandle: the POSIX bounce-buffer pipeline and the
// cuFile backend, round trips at odd sizes and offsets, contexts, bounds and error paths.
#include <gtest/gtest.h>

#include <cuda.h>
#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <tuple>

#include <kvikio/batch.hpp>
#include <kvikio/batch_io.hpp>
#include <kvikio/bounce_buffer.hpp>
#include <kvikio/buffer.hpp>
#include <kvikio/cufile/driver.hpp>
#include <kvikio/device_memory.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/mmap.hpp>
#include <kvikio/shim.hpp>

#include "api/open_handle.hpp"
#include "core/open_file.hpp"
#include "device/pointer.hpp"
#include "device/staging.hpp"
#include "device_test_utils.hpp"
#include "test_utils.hpp"

using kvikio::CompatMode;
using kvikio::DeviceBuffer;
using kvikio::FileHandle;
using kvikio::test::random_bytes;
using kvikio::test::read_file;
using kvikio::test::TempDir;
using kvikio::test::to_host;
using kvikio::test::write_file;

namespace {

constexpr std::size_t KiB         = 1024;
constexpr std::size_t MiB         = 1024 * KiB;
constexpr std::size_t guard_bytes = 4096;  // checked untouched on both sides of the IO range

enum class Op { READ_WRITE, PREAD_1, PREAD_16, ASYNC };
std::string op_name(Op op)
{
  switch (op) {
    case Op::READ_WRITE:
      return "raw";
    case Op::PREAD_1:
      return "p1";
    case Op::PREAD_16:
      return "p16";
    case Op::ASYNC:
      return "async";
  }
  return "?";
}

// size, file offset, offset of the IO range inside a larger allocation, op, compat mode
using Param = std::tuple<std::size_t, std::size_t, std::size_t, Op, CompatMode>;

class DeviceRoundTrip : public ::testing::TestWithParam<Param> {
 protected:
  TempDir dir;
  kvikio::test::ScopedSettings restore;
};

/// Writes `n` bytes from `dev + off` at `file_offset`, the way `op` does.
std::size_t do_write(
  FileHandle& f, DeviceBuffer& dev, std::size_t off, std::size_t n, std::size_t file_offset, Op op)
{
  auto* base = static_cast<char*>(dev.data());
  switch (op) {
    case Op::READ_WRITE:
      return f.write(base, n, file_offset, off);
    case Op::PREAD_1:
    case Op::PREAD_16:
      return f.pwrite(base + off, n, file_offset, 1 * MiB).get();
    case Op::ASYNC: {
      auto fut =
        f.write_async(base, n, static_cast<off_t>(file_offset), static_cast<off_t>(off), nullptr);
      return fut.check_bytes_done();
    }
  }
  return 0;
}

std::size_t do_read(
  FileHandle& f, DeviceBuffer& dev, std::size_t off, std::size_t n, std::size_t file_offset, Op op)
{
  auto* base = static_cast<char*>(dev.data());
  switch (op) {
    case Op::READ_WRITE:
      return f.read(base, n, file_offset, off);
    case Op::PREAD_1:
    case Op::PREAD_16:
      return f.pread(base + off, n, file_offset, 1 * MiB).get();
    case Op::ASYNC: {
      auto fut =
        f.read_async(base, n, static_cast<off_t>(file_offset), static_cast<off_t>(off), nullptr);
      return fut.check_bytes_done();
    }
  }
  return 0;
}

}  // namespace

std::string param_name(const ::testing::TestParamInfo<Param>& p)
{
  const auto& [size, fo, bo, op, mode] = p.param;
  return "s" + std::to_string(size) + "_fo" + std::to_string(fo) + "_bo" + std::to_string(bo) +
         "_" + op_name(op) + (mode == CompatMode::ON ? "_posix" : "_cufile");
}

TEST_P(DeviceRoundTrip, WriteThenReadIsByteExactAndStaysInRange)
{
  KVIKIO_REQUIRE_DEVICE();
  auto [size, file_offset, buf_offset, op, mode] = GetParam();
  if (mode == CompatMode::OFF) {
    if (auto why = kvikio::test::cufile_unusable_reason(dir.file("probe.bin")); !why.empty()) {
      GTEST_SKIP() << "cuFile path not usable here: " << why;
    }
  }
  kvikio::defaults::set_num_threads(op == Op::PREAD_16 ? 16 : 1);
  // Small bounce buffers so that every size above a few pages runs through several chunks.
  kvikio::defaults::set_bounce_buffer_size(256 * KiB);
  const auto path = dir.file("device.bin");
  const auto data = random_bytes(size, size * 31 + file_offset + buf_offset);

  // Source: the IO range inside a larger allocation, with random bytes around it.
  const std::size_t alloc = buf_offset + size + guard_bytes;
  DeviceBuffer src(alloc);
  auto around = random_bytes(alloc, 7);
  std::copy(data.begin(), data.end(), around.begin() + static_cast<long>(buf_offset));
  src.copy_from_host(around.data(), alloc);
  {
    FileHandle f(path, "w", FileHandle::m644, mode);
    EXPECT_EQ(f.compat_mode(), mode);
    EXPECT_EQ(do_write(f, src, buf_offset, size, file_offset, op), size);
  }
  auto on_disk = read_file(path);
  ASSERT_EQ(on_disk.size(), size == 0 ? 0 : file_offset + size);
  EXPECT_TRUE(
    std::equal(data.begin(), data.end(), on_disk.begin() + static_cast<long>(file_offset)));

  // Destination: a different random fill, so that untouched bytes are recognisable.
  DeviceBuffer dst(alloc);
  const auto fill = random_bytes(alloc, 99);
  dst.copy_from_host(fill.data(), alloc);
  FileHandle f(path, "r", FileHandle::m644, mode);
  EXPECT_EQ(do_read(f, dst, buf_offset, size, file_offset, op), size);
  auto got = to_host(dst, alloc);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), got.begin() + static_cast<long>(buf_offset)))
    << "data differs";
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + static_cast<long>(buf_offset), fill.begin()))
    << "bytes before the range were written";
  EXPECT_TRUE(std::equal(got.begin() + static_cast<long>(buf_offset + size),
                         got.end(),
                         fill.begin() + static_cast<long>(buf_offset + size)))
    << "bytes after the range were written";
}

INSTANTIATE_TEST_SUITE_P(
  Sizes,
  DeviceRoundTrip,
  ::testing::Combine(::testing::Values(0, 1, 4095, 4096, 4097, 1 * MiB + 3, 64 * MiB),
                     ::testing::Values(0, 4096 + 13),   // aligned / unaligned file offset
                     ::testing::Values(0, 4096 + 517),  // IO range inside a larger allocation
                     ::testing::Values(Op::READ_WRITE, Op::PREAD_1, Op::PREAD_16, Op::ASYNC),
                     ::testing::Values(CompatMode::ON, CompatMode::OFF)),
  param_name);

class DeviceIO : public ::testing::Test {
 protected:
  void SetUp() override { KVIKIO_REQUIRE_DEVICE(); }
  TempDir dir;
  kvikio::test::ScopedSettings restore;

  std::string make_file(std::size_t n, std::uint64_t seed = 1)
  {
    auto path = dir.file("in.bin");
    write_file(path, random_bytes(n, seed));
    return path;
  }
};

TEST_F(DeviceIO, PointerKindsAreDetected)
{
  DeviceBuffer dev(1000);
  std::vector<char> host(10);
  EXPECT_TRUE(kvikio::is_device_memory(dev.data()));
  EXPECT_TRUE(kvikio::is_device_memory(static_cast<char*>(dev.data()) + 999));
  EXPECT_FALSE(kvikio::is_device_memory(host.data()));
  kvikio::PinnedBuffer pinned(100);
  EXPECT_FALSE(kvikio::is_device_memory(pinned.data()));
}

TEST_F(DeviceIO, ReadBeyondTheAllocationIsRejectedBeforeAnyByteMoves)
{
  auto path = make_file(8192);
  DeviceBuffer dev(1000);
  const auto fill = random_bytes(1000, 5);
  dev.copy_from_host(fill.data(), 1000);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  KVIKIO_EXPECT_THROW_WITH(
    f.read(dev.data(), 2000, 0, 0), std::out_of_range, "exceeds its allocation");
  KVIKIO_EXPECT_THROW_WITH(f.read(dev.data(), 100, 0, 950), std::out_of_range, "1000 bytes");
  KVIKIO_EXPECT_THROW_WITH(f.pread(dev.data(), 1001, 0).get(), std::out_of_range, path);
  KVIKIO_EXPECT_THROW_WITH(f.pread(static_cast<char*>(dev.data()) + 10, 991, 0).get(),
                           std::out_of_range,
                           "offset 10 into it");
  EXPECT_EQ(to_host(dev, 1000), fill);
}

TEST_F(DeviceIO, WriteBeyondTheAllocationIsRejectedAndWritesNothing)
{
  auto path = dir.file("out.bin");
  DeviceBuffer dev(4096);
  FileHandle f(path, "w", FileHandle::m644, CompatMode::ON);
  KVIKIO_EXPECT_THROW_WITH(f.write(dev.data(), 4097, 0, 0), std::out_of_range, "4096 bytes");
  KVIKIO_EXPECT_THROW_WITH(f.pwrite(dev.data(), 8192, 0).get(), std::out_of_range, path);
  EXPECT_EQ(f.nbytes(), 0U);
}

TEST_F(DeviceIO, ReadPastEndOfFileIntoDeviceRaisesEndOfFile)
{
  auto path = make_file(5000);
  DeviceBuffer dev(8192);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  KVIKIO_EXPECT_THROW_WITH(f.read(dev.data(), 8192, 0, 0), kvikio::EndOfFileError, path);
  KVIKIO_EXPECT_THROW_WITH(f.pread(dev.data(), 4000, 4000).get(), kvikio::EndOfFileError, "5000");
}

TEST_F(DeviceIO, CompatOffWithoutCufileRaisesNamingTheFile)
{
  if (kvikio::is_cufile_available()) { GTEST_SKIP() << "cuFile is usable here"; }
  auto path = make_file(10);
  KVIKIO_EXPECT_THROW_WITH(
    FileHandle(path, "r", FileHandle::m644, CompatMode::OFF), kvikio::CUfileException, path);
  // AUTO falls back to POSIX instead.
  FileHandle f(path, "r", FileHandle::m644, CompatMode::AUTO);
  EXPECT_EQ(f.compat_mode(), CompatMode::ON);
}

TEST_F(DeviceIO, AsyncWithHostMemoryIsRejected)
{
  auto path = make_file(100);
  std::vector<char> host(100);
  FileHandle f(path, "r+");
  KVIKIO_EXPECT_THROW_WITH(
    (void)f.read_async(host.data(), 100), std::invalid_argument, "needs device memory");
  KVIKIO_EXPECT_THROW_WITH((void)f.write_async(host.data(), 100), std::invalid_argument, path);
  EXPECT_EQ(read_file(path), random_bytes(100, 1));
}

TEST_F(DeviceIO, AsyncOnClosedFileIsRejected)
{
  auto path = make_file(100);
  DeviceBuffer dev(100);
  FileHandle f(path, "r+");
  f.close();
  KVIKIO_EXPECT_THROW_WITH((void)f.read_async(dev.data(), 100), std::invalid_argument, "closed");
  KVIKIO_EXPECT_THROW_WITH((void)f.write_async(dev.data(), 100), std::invalid_argument, path);
  std::size_t size = 100;
  off_t fo = 0, bo = 0;
  ssize_t done = 0;
  KVIKIO_EXPECT_THROW_WITH(
    f.read_async(dev.data(), &size, &fo, &bo, &done, nullptr), std::invalid_argument, "closed");
}

TEST_F(DeviceIO, AsyncRejectsNegativeOffsets)
{
  auto path = make_file(100);
  DeviceBuffer dev(100);
  FileHandle f(path, "r");
  KVIKIO_EXPECT_THROW_WITH((void)f.read_async(dev.data(), 10, -1), std::invalid_argument, "-1");
}

TEST_F(DeviceIO, BufferInAnotherDeviceContextIsReadOnPoolThreads)
{
  if (kvikio::device_count() < 2) { GTEST_SKIP() << "needs 2 devices"; }
  kvikio::defaults::set_num_threads(4);
  kvikio::defaults::set_bounce_buffer_size(64 * KiB);
  const std::size_t n = 3 * MiB + 77;
  auto path           = make_file(n, 3);
  DeviceBuffer dev(n, 1);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  EXPECT_EQ(f.pread(dev.data(), n, 0, 256 * KiB).get(), n);
  EXPECT_EQ(to_host(dev, n), random_bytes(n, 3));
  // The caller's thread holds device 0's buffer while reading device 1's: both work.
  DeviceBuffer dev0(n, 0);
  EXPECT_EQ(f.read(dev0.data(), n, 0, 0), n);
  EXPECT_EQ(to_host(dev0, n), random_bytes(n, 3));
}

TEST_F(DeviceIO, PinnedMemoryIsPooledAndBounded)
{
  const unsigned threads = 4;
  kvikio::defaults::set_num_threads(threads);
  kvikio::defaults::set_bounce_buffer_size(1 * MiB);
  kvikio::bounce_buffer_free();
  auto reset_peak = kvikio::test::standin_fn<void (*)()>("kvikio_standin_reset_peak");
  auto peak       = kvikio::test::standin_fn<std::size_t (*)()>("kvikio_standin_peak_pinned_bytes");
  auto pageable =
    kvikio::test::standin_fn<std::size_t (*)()>("kvikio_standin_pageable_async_copies");
  if (reset_peak != nullptr) { reset_peak(); }
  const std::size_t pageable_before = pageable != nullptr ? pageable() : 0;
  const std::size_t n               = 40 * MiB + 5;
  auto path                         = make_file(n, 4);
  DeviceBuffer dev(n);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(f.pread(dev.data(), n, 0, 1 * MiB).get(), n);
  }
  EXPECT_EQ(to_host(dev, n), random_bytes(n, 4));
  const auto stats = kvikio::bounce_buffer_stats();
  EXPECT_LE(stats.pinned_bytes, threads * 1 * MiB);
  EXPECT_GT(stats.pinned_bytes, 0U);
  if (peak != nullptr) {
    EXPECT_LE(peak(), threads * 1 * MiB) << "pinned memory above num_threads x bounce_buffer_size";
    EXPECT_EQ(pageable(), pageable_before) << "an async copy used pageable memory";
  }
  EXPECT_EQ(kvikio::bounce_buffer_free(), stats.pinned_bytes);
  EXPECT_EQ(kvikio::bounce_buffer_stats().pinned_bytes, 0U);
  EXPECT_EQ(kvikio::bounce_buffer_free(), 0U);
}

TEST_F(DeviceIO, DirectIoReadAndWriteThroughBounceBuffers)
{
  kvikio::defaults::set_auto_direct_io_read(true);
  kvikio::defaults::set_auto_direct_io_write(true);
  kvikio::defaults::set_bounce_buffer_size(128 * KiB);
  const std::size_t n = 2 * MiB + 4097;
  const auto data     = random_bytes(n, 8);
  DeviceBuffer dev(n);
  dev.copy_from_host(data.data(), n);
  auto path = dir.file("direct.bin");
  {
    FileHandle f(path, "w", FileHandle::m644, CompatMode::ON);
    EXPECT_EQ(f.pwrite(dev.data(), n, 4096 * 3, 512 * KiB).get(), n);
  }
  DeviceBuffer back(n);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  EXPECT_EQ(f.pread(back.data(), n, 4096 * 3, 512 * KiB).get(), n);
  EXPECT_EQ(to_host(back, n), data);
}

// Issue 14: small reads into device memory take one pinned buffer and one synchronous copy,
// and a buffer's attributes are remembered by its allocation. Reads of odd sizes at odd
// offsets land byte for byte; an allocation freed and replaced by a smaller one (maybe at the
// same address) is checked against its own size, not the remembered one; a failed copy
// names the file.
TEST_F(DeviceIO, SmallReadsAreByteExactAndEachAllocationIsCheckedAsItIs)
{
  const std::size_t n = 300 * KiB;
  auto path           = make_file(n, 21);
  const auto data     = random_bytes(n, 21);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  for (std::size_t size : {std::size_t{1}, std::size_t{4096}, std::size_t{4097}, 256 * KiB}) {
    DeviceBuffer dev(size + 7);
    const std::size_t file_offset = (size * 31 + 5) % (n - size);
    EXPECT_EQ(f.read(dev.data(), size, file_offset, 7), size);
    const auto got = to_host(dev, size + 7);
    EXPECT_TRUE(std::equal(got.begin() + 7, got.end(), data.begin() + file_offset)) << size;
    EXPECT_EQ(f.pread(dev.data(), size, file_offset, 4096, 0).get(), size);
  }
  for (int round = 0; round < 3; ++round) {
    {
      DeviceBuffer big(64 * KiB);
      EXPECT_EQ(f.read(big.data(), 64 * KiB, 0, 0), 64 * KiB);
    }
    DeviceBuffer small(4 * KiB);
    KVIKIO_EXPECT_THROW_WITH(
      f.read(small.data(), 8 * KiB, 0, 0), std::out_of_range, "exceeds its allocation");
    EXPECT_EQ(f.read(small.data(), 4 * KiB, 0, 0), 4 * KiB);
  }
  auto fail = kvikio::test::standin_fn<void (*)(const char*, int, int)>("kvikio_standin_fail");
  if (fail == nullptr) { return; }
  DeviceBuffer dev(4096);
  fail("cuMemcpyHtoD", 1, CUDA_ERROR_LAUNCH_FAILED);
  KVIKIO_EXPECT_THROW_WITH(f.read(dev.data(), 4096, 0, 0), kvikio::CudaDriverError, path);
  EXPECT_EQ(f.read(dev.data(), 4096, 0, 0), 4096U);
}

TEST_F(DeviceIO, FailedCopyRaisesNamingTheFileAndLeavesThePoolUsable)
{
  auto fail = kvikio::test::standin_fn<void (*)(const char*, int, int)>("kvikio_standin_fail");
  if (fail == nullptr) { GTEST_SKIP() << "fault injection needs the stand-in driver"; }
  kvikio::defaults::set_bounce_buffer_size(64 * KiB);
  const std::size_t n = 1 * MiB;
  auto path           = make_file(n, 9);
  DeviceBuffer dev(n);
  FileHandle f(path, "r+", FileHandle::m644, CompatMode::ON);
  fail("cuMemcpyHtoDAsync", 3, CUDA_ERROR_LAUNCH_FAILED);
  KVIKIO_EXPECT_THROW_WITH(
    f.read(dev.data(), n, 0, 0), kvikio::CudaDriverError, "CUDA_ERROR_LAUNCH_FAILED");
  fail("cuMemcpyHtoDAsync", 3, CUDA_ERROR_LAUNCH_FAILED);
  KVIKIO_EXPECT_THROW_WITH(f.read(dev.data(), n, 0, 0), kvikio::CudaDriverError, path);
  fail("cuMemcpyDtoHAsync", 2, CUDA_ERROR_LAUNCH_FAILED);
  KVIKIO_EXPECT_THROW_WITH(f.write(dev.data(), n, 0, 0), kvikio::CudaDriverError, path);
  fail("cuMemHostAlloc", 1, CUDA_ERROR_OUT_OF_MEMORY);
  kvikio::bounce_buffer_free();
  KVIKIO_EXPECT_THROW_WITH(
    f.pread(dev.data(), n, 0).get(), kvikio::CudaDriverError, "CUDA_ERROR_OUT_OF_MEMORY");
  // Everything works again afterwards.
  EXPECT_EQ(f.pread(dev.data(), n, 0, 256 * KiB).get(), n);
  EXPECT_EQ(to_host(dev, n), random_bytes(n, 9));
}

// In a child forked after the parent initialised CUDA, every driver call answers
// CUDA_ERROR_NOT_INITIALIZED; a host buffer must still take the host path there (the H200 run
// of Hardening.ParallelReadWorksInAForkedChildAfterTheParentUsedThePool failed without this).
TEST_F(DeviceIO, HostBufferWhereTheDriverAnswersNotInitializedTakesTheHostPath)
{
  auto fail = kvikio::test::standin_fn<void (*)(const char*, int, int)>("kvikio_standin_fail");
  if (fail == nullptr) { GTEST_SKIP() << "fault injection needs the stand-in driver"; }
  const std::size_t n = 64 * KiB + 3;
  auto path           = make_file(n, 23);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  std::vector<char> host(n);
  fail("cuPointerGetAttribute", 1, CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(f.read(host.data(), n, 0, 0), n);
  fail("cuPointerGetAttribute", 1, CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(f.pread(host.data(), n, 0, 16 * KiB).get(), n);
  EXPECT_EQ(host, random_bytes(n, 23));
}

TEST_F(DeviceIO, ManagedAndPinnedMemoryTakeTheHostPath)
{
  const std::size_t n = 100 * KiB + 1;
  auto path           = make_file(n, 10);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  DeviceBuffer managed(n, 0, true);
  EXPECT_FALSE(kvikio::is_device_memory(managed.data()));
  EXPECT_EQ(f.pread(managed.data(), n, 0, 8 * KiB).get(), n);
  EXPECT_EQ(to_host(managed, n), random_bytes(n, 10));
  kvikio::PinnedBuffer pinned(n);
  EXPECT_EQ(f.read(pinned.data(), n, 0, 0), n);
  auto expected = random_bytes(n, 10);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), static_cast<char*>(pinned.data())));
}

// Issue 14: a small read from the page cache is tried into the buffer before the driver is
// asked what the buffer is: a host buffer then costs no pointer query, while a device buffer
// (inaccessible to the CPU: the kernel refuses the copy) still goes the device path, byte
// exact, through read() and pread() alike; so does an uncached or Direct IO read.
TEST_F(DeviceIO, SmallCachedHostReadsAskTheDriverNothingAndDeviceReadsStillLand)
{
  const std::size_t n = 300 * KiB;
  auto path           = make_file(n, 23);
  const auto data     = random_bytes(n, 23);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  auto queries = kvikio::test::standin_fn<std::size_t (*)()>("kvikio_standin_pointer_queries");
  std::vector<char> host(64 * KiB);
  EXPECT_EQ(f.read(host.data(), 4096, 0, 0), 4096U);  // the file is now cached
  for (std::size_t size : {std::size_t{1}, std::size_t{4096}, std::size_t{5000}, 64 * KiB}) {
    SCOPED_TRACE(size);
    const std::size_t off = (size * 13 + 3) % (n - size);
    std::fill(host.begin(), host.end(), 'x');
    const std::size_t before = queries != nullptr ? queries() : 0;
    EXPECT_EQ(f.read(host.data(), size, off, 0), size);
    EXPECT_EQ(f.pread(host.data() + 1, size - 1, off + 1).get(), size - 1);
    if (queries != nullptr) { EXPECT_EQ(queries() - before, 0U); }
    EXPECT_TRUE(std::equal(
      host.begin(), host.begin() + static_cast<long>(size), data.begin() + static_cast<long>(off)));
    DeviceBuffer dev(size);
    EXPECT_EQ(f.read(dev.data(), size, off, 0), size);
    auto got = to_host(dev, size);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + static_cast<long>(off)));
    dev.copy_from_host(std::vector<char>(size, 0).data(), size);
    EXPECT_EQ(f.pread(dev.data(), size, off).get(), size);
    got = to_host(dev, size);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + static_cast<long>(off)));
  }
  // A device buffer one byte short is still refused, naming the request.
  DeviceBuffer small(4096);
  EXPECT_THROW(f.read(small.data(), 4097, 0, 0), std::out_of_range);
}

TEST_F(DeviceIO, SmallDeviceRequestsBelowGdsThresholdCompleteSynchronously)
{
  auto path = make_file(1000, 11);
  DeviceBuffer dev(1000);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  auto fut = f.pread(dev.data(), 1000, 0, 4096, 16 * KiB);
  EXPECT_EQ(fut.wait_for(std::chrono::seconds(0)), std::future_status::ready);
  EXPECT_EQ(fut.get(), 1000U);
  EXPECT_EQ(to_host(dev, 1000), random_bytes(1000, 11));
}

TEST_F(DeviceIO, BounceBufferSizeChangesTakeEffect)
{
  const std::size_t n = 3 * MiB + 11;
  auto path           = make_file(n, 12);
  DeviceBuffer dev(n);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  for (std::size_t bbs : {std::size_t{4096}, 64 * KiB, 5 * MiB + 1}) {
    kvikio::defaults::set_bounce_buffer_size(bbs);
    EXPECT_EQ(f.read(dev.data(), n, 0, 0), n) << bbs;
    EXPECT_EQ(to_host(dev, n), random_bytes(n, 12)) << bbs;
  }
}

TEST_F(DeviceIO, MmapIntoDeviceMemoryChunksThroughTheBounceBuffer)
{
  kvikio::defaults::set_bounce_buffer_size(64 * KiB);
  kvikio::defaults::set_num_threads(3);
  const std::size_t n = 3 * MiB + 5;
  auto path           = make_file(n, 13);
  const auto data     = random_bytes(n, 13);
  kvikio::MmapHandle m(path, "r");
  for (std::size_t size : {std::size_t{0}, std::size_t{1}, std::size_t{4097}, n - 7}) {
    DeviceBuffer dev(size + 1);
    EXPECT_EQ(m.read(dev.data(), size, 7), size);
    auto got = to_host(dev, size);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + 7)) << size;
    DeviceBuffer dev2(size + 1);
    EXPECT_EQ(m.pread(dev2.data(), size, 7, 256 * KiB).get(), size);
    got = to_host(dev2, size);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + 7)) << size;
  }
  DeviceBuffer small(10);
  KVIKIO_EXPECT_THROW_WITH(
    m.read(small.data(), 11, 0), std::out_of_range, "exceeds its allocation");
}

TEST_F(DeviceIO, BatchReadsAndWritesComplete)
{
  kvikio::defaults::set_num_threads(2);
  const std::size_t n = 300 * KiB + 3;
  auto path           = make_file(4 * n, 14);
  const auto data     = random_bytes(4 * n, 14);
  FileHandle f(path, "r+", FileHandle::m644, CompatMode::ON);
  DeviceBuffer dev(4 * n);
  kvikio::BatchHandle batch(8);
  std::vector<kvikio::BatchOp> ops;
  for (std::size_t i = 0; i < 4; ++i) {
    // Reads into the buffer in reverse order of the file's pieces.
    ops.push_back(
      {f, dev.data(), static_cast<off_t>(i * n), static_cast<off_t>((3 - i) * n), n, CUFILE_READ});
  }
  batch.submit(ops);
  std::vector<CUfileIOEvents_t> events;
  while (events.size() < 4) {
    auto got = batch.status(1, 4);
    events.insert(events.end(), got.begin(), got.end());
  }
  for (const auto& e : events) {
    EXPECT_EQ(e.status, CUFILE_COMPLETE);
    EXPECT_EQ(e.ret, n);
  }
  auto got = to_host(dev, 4 * n);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_TRUE(std::equal(got.begin() + static_cast<long>((3 - i) * n),
                           got.begin() + static_cast<long>((4 - i) * n),
                           data.begin() + static_cast<long>(i * n)))
      << i;
  }
  // Write the buffer back at the end of the file, in one op.
  batch.submit({{f, dev.data(), static_cast<off_t>(4 * n), 0, 4 * n, CUFILE_WRITE}});
  auto done = batch.status(1, 1);
  ASSERT_EQ(done.size(), 1U);
  EXPECT_EQ(done[0].status, CUFILE_COMPLETE);
  auto on_disk = read_file(path);
  ASSERT_EQ(on_disk.size(), 8 * n);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), on_disk.begin() + static_cast<long>(4 * n)));

  std::vector<kvikio::BatchOp> too_many(9, ops[0]);
  KVIKIO_EXPECT_THROW_WITH(batch.submit(too_many), kvikio::CUfileException, "at most 8");
  // A failing op is reported FAILED, not thrown.
  batch.submit({{f, dev.data(), static_cast<off_t>(100 * n), 0, n, CUFILE_READ}});
  auto failed = batch.status(1, 1);
  ASSERT_EQ(failed.size(), 1U);
  EXPECT_EQ(failed[0].status, CUFILE_FAILED);
}

TEST_F(DeviceIO, BatchCancelReportsEveryOperation)
{
  kvikio::defaults::set_num_threads(1);
  const std::size_t n = 1 * MiB;
  auto path           = make_file(n, 15);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  DeviceBuffer dev(n);
  kvikio::BatchHandle batch(64);
  std::vector<kvikio::BatchOp> ops(64, {f, dev.data(), 0, 0, n, CUFILE_READ});
  batch.submit(ops);
  batch.cancel();
  auto events = batch.status(64, 64);
  ASSERT_EQ(events.size(), 64U);
  for (const auto& e : events) {
    EXPECT_TRUE(e.status == CUFILE_COMPLETE || e.status == CUFILE_CANCELED);
  }
  batch.close();
  EXPECT_TRUE(batch.closed());
  KVIKIO_EXPECT_THROW_WITH(batch.submit(ops), std::invalid_argument, "closed");
}

TEST_F(DeviceIO, LibraryStatusReportsTheDriver)
{
  auto status = kvikio::library_status();
  ASSERT_EQ(status.size(), 3U);
  EXPECT_EQ(status[0].library, "libcuda");
  EXPECT_TRUE(status[0].loaded);
  EXPECT_EQ(status[2].library, "libcurl");
  EXPECT_TRUE(status[2].loaded);
  EXPECT_NE(status[2].reason.find("libcurl"), std::string::npos) << status[2].reason;
  EXPECT_NE(status[0].reason.find("device"), std::string::npos) << status[0].reason;
  EXPECT_EQ(status[1].library, "libcufile");
  EXPECT_FALSE(status[1].reason.empty());
  if (kvikio::test::using_standin() && std::getenv("KVIKIO_LIBCUFILE_PATH") == nullptr) {
    EXPECT_FALSE(status[1].loaded);
    EXPECT_NE(status[1].reason.find("KVIKIO_LIBCUDA_PATH"), std::string::npos) << status[1].reason;
  }
}

TEST_F(DeviceIO, DriverPropertiesWithoutCufileRaiseOrSayUnavailable)
{
  if (kvikio::is_cufile_available()) {
    auto names = kvikio::cufile_driver::property_names();
    EXPECT_EQ(names.size(), 10U);
    KVIKIO_EXPECT_THROW_WITH(kvikio::cufile_driver::set("major_version", std::size_t{1}),
                             std::invalid_argument,
                             "read-only");
    auto v = kvikio::cufile_driver::get("max_device_cache_size");
    EXPECT_TRUE(std::holds_alternative<std::size_t>(v));
    auto poll = std::get<bool>(kvikio::cufile_driver::get("poll_mode"));
    kvikio::cufile_driver::set("poll_mode", !poll);
    EXPECT_EQ(std::get<bool>(kvikio::cufile_driver::get("poll_mode")), !poll);
    kvikio::cufile_driver::set("poll_mode", poll);
    KVIKIO_EXPECT_THROW_WITH(
      kvikio::cufile_driver::set("poll_mode", std::size_t{1}), std::invalid_argument, "bool");
    kvikio::cufile_driver::set("max_device_cache_size", std::size_t{2048});
    EXPECT_EQ(std::get<std::size_t>(kvikio::cufile_driver::get("max_device_cache_size")), 2048U);
    kvikio::cufile_driver::set("max_device_cache_size", std::get<std::size_t>(v));
    // Registration: a second registration of the same buffer fails unless ignored.
    kvikio::test::ScopedCompatMode off(CompatMode::OFF);
    DeviceBuffer dev(8192);
    kvikio::memory_register(static_cast<char*>(dev.data()) + 100);
    KVIKIO_EXPECT_THROW_WITH(
      kvikio::memory_register(dev.data()), kvikio::CUfileException, "cuFileBufRegister");
    EXPECT_NO_THROW(kvikio::memory_register(dev.data(), 0, {5023}));
    kvikio::memory_deregister(dev.data());
    KVIKIO_EXPECT_THROW_WITH(
      kvikio::memory_deregister(dev.data()), kvikio::CUfileException, "cuFileBufDeregister");
    return;
  }
  EXPECT_FALSE(std::get<bool>(kvikio::cufile_driver::get("is_gds_available")));
  KVIKIO_EXPECT_THROW_WITH(
    kvikio::cufile_driver::get("poll_mode"), kvikio::CUfileException, "not usable");
  KVIKIO_EXPECT_THROW_WITH(kvikio::cufile_driver::get("nope"), std::invalid_argument, "'nope'");
  KVIKIO_EXPECT_THROW_WITH(kvikio::cufile_driver::set("per_buffer_cache_size", std::size_t{1}),
                           std::invalid_argument,
                           "read-only");
  // Buffer registration is a no-op under POSIX-preferred mode, and rejects host memory.
  DeviceBuffer dev(4096);
  EXPECT_NO_THROW(kvikio::memory_register(dev.data()));
  EXPECT_NO_THROW(kvikio::memory_deregister(dev.data()));
  std::vector<char> host(10);
  KVIKIO_EXPECT_THROW_WITH(
    kvikio::memory_register(host.data()), std::invalid_argument, "not device memory");
}

TEST_F(DeviceIO, AutoFallsBackPerFileWhenCufileCannotRegisterIt)
{
  if (!kvikio::is_cufile_available()) { GTEST_SKIP() << "cuFile is not usable here"; }
  if (kvikio::defaults::is_compat_mode_preferred(CompatMode::AUTO)) {
    GTEST_SKIP() << "AUTO does not try cuFile here (no nvidia-fs)";
  }
  auto path = make_file(4096, 16);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::AUTO);
  if (f.compat_mode() == CompatMode::OFF) {
    GTEST_SKIP() << "cuFile registers files here (no fallback to test)";
  }
  const auto why = kvikio::detail::open_state(f)->fallback_reason;
  EXPECT_FALSE(why.empty());
  KVIKIO_EXPECT_THROW_WITH(
    FileHandle(path, "r", FileHandle::m644, CompatMode::OFF), kvikio::CUfileException, path);
  DeviceBuffer dev(4096);
  EXPECT_EQ(f.pread(dev.data(), 4096, 0).get(), 4096U);
  EXPECT_EQ(to_host(dev, 4096), random_bytes(4096, 16));
}

// DESIGN.md §1: AUTO takes cuFile only where libcufile loads, its driver opens and nvidia-fs
// is present; where libcufile would run its own compat mode, AUTO takes our POSIX path, and
// OFF still forces cuFile. With the stand-in libcufile, KVIKIO_STANDIN_NVIDIA_FS=1 says
// whether nvidia-fs is simulated.
TEST_F(DeviceIO, AutoTakesCufileOnlyWhereNvidiaFsIsPresent)
{
  KVIKIO_REQUIRE_DEVICE();
  const char* standin = std::getenv("KVIKIO_TEST_USE_CUFILE_STANDIN");
  const char* nvfs    = std::getenv("KVIKIO_STANDIN_NVIDIA_FS");
  const bool gds      = kvikio::get_driver_properties().is_gds_available();
  if (standin != nullptr && std::string(standin) == "1") {
    ASSERT_TRUE(kvikio::is_cufile_available());
    EXPECT_EQ(gds, nvfs != nullptr && std::string(nvfs) == "1");
  }
  const bool cufile = kvikio::is_cufile_available();
  EXPECT_EQ(kvikio::defaults::is_compat_mode_preferred(CompatMode::AUTO), !(cufile && gds));
  EXPECT_TRUE(kvikio::defaults::is_compat_mode_preferred(CompatMode::ON));
  EXPECT_FALSE(kvikio::defaults::is_compat_mode_preferred(CompatMode::OFF));
  {
    kvikio::test::ScopedCompatMode automatic(CompatMode::AUTO);
    EXPECT_EQ(kvikio::defaults::is_compat_mode_preferred(), !(cufile && gds));
  }
  auto path = make_file(8192, 21);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::AUTO);
  if (!(cufile && gds)) {
    EXPECT_EQ(f.compat_mode(), CompatMode::ON);
    EXPECT_TRUE(
      kvikio::detail::open_state(f)->fallback_reason.empty());  // decided once, not per file
  } else {
    // With nvidia-fs a file still falls back when its own registration fails.
    EXPECT_TRUE(f.compat_mode() == CompatMode::OFF ||
                !kvikio::detail::open_state(f)->fallback_reason.empty());
  }
  DeviceBuffer dev(8192);
  EXPECT_EQ(f.pread(dev.data(), 8192, 0).get(), 8192U);
  EXPECT_EQ(to_host(dev, 8192), random_bytes(8192, 21));
  if (cufile && !gds && kvikio::test::cufile_unusable_reason(dir.file("probe.bin")).empty()) {
    // OFF still forces cuFile without nvidia-fs.
    FileHandle off(path, "r", FileHandle::m644, CompatMode::OFF);
    EXPECT_EQ(off.compat_mode(), CompatMode::OFF);
  }
}

TEST_F(DeviceIO, BatchThroughCufile)
{
  if (auto why = kvikio::test::cufile_unusable_reason(dir.file("probe.bin")); !why.empty()) {
    GTEST_SKIP() << "cuFile path not usable here: " << why;
  }
  const std::size_t n = 256 * KiB;
  auto path           = make_file(2 * n, 17);
  FileHandle f(path, "r+", FileHandle::m644, CompatMode::OFF);
  DeviceBuffer dev(2 * n);
  // A batch follows the process-wide mode; AUTO would take POSIX without nvidia-fs.
  kvikio::test::ScopedCompatMode off(CompatMode::OFF);
  kvikio::BatchHandle batch(4);
  batch.submit({{f, dev.data(), 0, static_cast<off_t>(n), n, CUFILE_READ},
                {f, dev.data(), static_cast<off_t>(n), 0, n, CUFILE_READ}});
  EXPECT_TRUE(batch.uses_cufile());
  std::vector<CUfileIOEvents_t> events;
  while (events.size() < 2) {
    auto got = batch.status(1, 2);
    events.insert(events.end(), got.begin(), got.end());
  }
  for (const auto& e : events) {
    EXPECT_EQ(e.status, CUFILE_COMPLETE);
    EXPECT_EQ(e.ret, n);
  }
  auto data = random_bytes(2 * n, 17);
  auto got  = to_host(dev, 2 * n);
  EXPECT_TRUE(std::equal(
    got.begin(), got.begin() + static_cast<long>(n), data.begin() + static_cast<long>(n)));
  EXPECT_TRUE(std::equal(got.begin() + static_cast<long>(n), got.end(), data.begin()));
}

namespace {
/// The stand-in libcufile's count of cuFileRead/cuFileWrite calls; null on a real libcufile.
std::size_t (*cufile_io_calls())()
{
  const char* lib = std::getenv("KVIKIO_LIBCUFILE_PATH");
  void* handle    = lib != nullptr ? ::dlopen(lib, RTLD_NOW | RTLD_NOLOAD) : nullptr;
  return handle != nullptr
           ? reinterpret_cast<std::size_t (*)()>(::dlsym(handle, "kvikio_standin_cufile_io_calls"))
           : nullptr;
}
}  // namespace

TEST_F(DeviceIO, CufileRequestsBelowGdsThresholdGoThroughPosix)
{
  if (auto why = kvikio::test::cufile_unusable_reason(dir.file("probe.bin")); !why.empty()) {
    GTEST_SKIP() << "cuFile path not usable here: " << why;
  }
  const auto calls = cufile_io_calls();
  if (calls == nullptr) { GTEST_SKIP() << "counting cuFile calls needs the stand-in libcufile"; }
  const std::size_t n = 64 * KiB;
  auto path           = make_file(n, 18);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::OFF);
  DeviceBuffer dev(n);
  const auto before = calls();
  EXPECT_EQ(f.pread(dev.data(), 1000, 0, 4096, 16 * KiB).get(), 1000U);
  EXPECT_EQ(calls(), before) << "a request below gds_threshold reached cuFile";
  EXPECT_EQ(f.pread(dev.data(), n, 0, 16 * KiB, 16 * KiB).get(), n);
  EXPECT_EQ(calls(), before + 4) << "one cuFileRead per task";
  EXPECT_EQ(to_host(dev, n), random_bytes(n, 18));
}

// ------------------------------------------------------- DeviceStager and DeviceDrainer

TEST_F(DeviceIO, FailedCopyNamesItsChunkInBothDirections)
{
  auto fail = kvikio::test::standin_fn<void (*)(const char*, int, int)>("kvikio_standin_fail");
  if (fail == nullptr) { GTEST_SKIP() << "fault injection needs the stand-in driver"; }
  kvikio::defaults::set_bounce_buffer_size(64 * KiB);  // halves of 32 KiB
  const std::size_t n = 200 * KiB;
  auto path           = make_file(n, 21);
  DeviceBuffer dev(n);
  FileHandle f(path, "r+", FileHandle::m644, CompatMode::ON);
  fail("cuMemcpyHtoDAsync", 3, CUDA_ERROR_LAUNCH_FAILED);
  KVIKIO_EXPECT_THROW_WITH(f.read(dev.data(), n, 0, 0),
                           kvikio::CudaDriverError,
                           "reading into device memory for '" + path +
                             "' at offset 0 (204800 bytes), the 32768 bytes at byte 65536");
  fail("cuMemcpyDtoHAsync", 2, CUDA_ERROR_LAUNCH_FAILED);
  KVIKIO_EXPECT_THROW_WITH(f.write(dev.data(), n, 4096, 0),
                           kvikio::CudaDriverError,
                           "writing from device memory for '" + path +
                             "' at offset 4096 (204800 bytes), the 32768 bytes at byte 32768");
}

TEST_F(DeviceIO, StagerAbandonedMidwayLeavesNoCopyReadingThePooledBuffer)
{
  // A producer that throws (a failed network read) leaves a queued copy from the bounce
  // buffer. The buffer goes back to the pool and is the next one this thread gets; were the
  // copy still queued then, it would run later with the next transfer's bytes. (On the
  // stand-in, queued copies run when their stream is synchronised.)
  kvikio::defaults::set_bounce_buffer_size(64 * KiB);
  const std::size_t half = 32 * KiB;
  DeviceBuffer a(2 * half), b(2 * half);
  const auto first  = random_bytes(half, 22);
  const auto second = random_bytes(2 * half, 23);
  auto* ctx         = kvikio::detail::get_pointer_info(a.data()).context;
  try {
    kvikio::detail::DeviceStager stager(ctx, a.data(), "first");
    stager(first.data(), half);  // a full half: its copy is queued
    throw std::runtime_error("the network went away");
  } catch (const std::runtime_error&) {
  }
  kvikio::detail::DeviceStager stager(ctx, b.data(), "second");
  stager(second.data(), second.size());
  EXPECT_EQ(stager.finish(), second.size());
  EXPECT_EQ(to_host(a, half), first);
  EXPECT_EQ(to_host(b, 2 * half), second);
}

TEST_F(DeviceIO, DrainerAbandonedMidwayLeavesNoCopyWritingThePooledBuffer)
{
  // The mirror: a consumer that stops after the first chunk (a failed file write) leaves the
  // second chunk's copy into the other half queued; it must not land in the next transfer.
  kvikio::defaults::set_bounce_buffer_size(64 * KiB);
  const std::size_t half = 32 * KiB;
  const auto source      = random_bytes(2 * half, 24);
  const auto staged      = random_bytes(2 * half, 25);
  DeviceBuffer a(2 * half), b(2 * half);
  a.copy_from_host(source.data(), source.size());
  auto* ctx = kvikio::detail::get_pointer_info(a.data()).context;
  {
    kvikio::detail::DeviceDrainer drainer(ctx, a.data(), source.size(), "draining");
    auto chunk = drainer.next();
    ASSERT_EQ(chunk.size, half);
    EXPECT_TRUE(std::equal(chunk.data, chunk.data + half, source.begin()));
  }
  kvikio::detail::DeviceStager stager(ctx, b.data(), "staging");
  stager(staged.data(), staged.size());
  EXPECT_EQ(stager.finish(), staged.size());
  EXPECT_EQ(to_host(b, 2 * half), staged);
}

// Issue 14: a batch mixing device and host buffers, both directions, byte for byte; device
// requests take the device path on the pool, host ones io_uring or the pool.
TEST_F(DeviceIO, BatchOfDeviceAndHostRequestsIsByteExact)
{
  const auto data = random_bytes(3 * MiB + 11, 31);
  auto path       = dir.file("batch.bin");
  write_file(path, data);
  FileHandle f(path, "r+", FileHandle::m644, CompatMode::ON);
  struct R {
    std::size_t offset, size;
  };
  const std::vector<R> ranges{{0, 4096}, {4097, 1 * MiB + 3}, {3 * MiB, 11}, {77, 20000}, {9, 0}};
  std::vector<DeviceBuffer> devs;
  std::vector<kvikio::IORequest> reads;
  for (const auto& r : ranges) {
    devs.emplace_back(std::max<std::size_t>(r.size, 1));
  }
  std::vector<char> host(5000);
  std::size_t total = host.size();
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    reads.push_back({devs[i].data(), ranges[i].size, ranges[i].offset});
    total += ranges[i].size;
  }
  reads.push_back({host.data(), host.size(), 100});
  EXPECT_EQ(f.pread_batch(reads).get(), total);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    auto got = to_host(devs[i], ranges[i].size);
    ASSERT_TRUE(
      std::equal(got.begin(), got.end(), data.begin() + static_cast<long>(ranges[i].offset)))
      << "request " << i;
  }
  EXPECT_TRUE(std::equal(host.begin(), host.end(), data.begin() + 100));
  // Written back shifted by one MiB, from the device buffers, into a fresh file.
  FileHandle out(dir.file("batch_out.bin"), "w", FileHandle::m644, CompatMode::ON);
  std::vector<kvikio::IORequest> writes;
  for (std::size_t i = 0; i < 3; ++i) {
    writes.push_back({devs[i].data(), ranges[i].size, ranges[i].offset + MiB});
  }
  EXPECT_EQ(out.pwrite_batch(writes).get(), ranges[0].size + ranges[1].size + ranges[2].size);
  out.close();
  const auto written = read_file(dir.file("batch_out.bin"));
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(std::equal(data.begin() + static_cast<long>(ranges[i].offset),
                           data.begin() + static_cast<long>(ranges[i].offset + ranges[i].size),
                           written.begin() + static_cast<long>(ranges[i].offset + MiB)))
      << "request " << i;
  }
}

// Issue 14: the driver serialises pointer queries, so a large batch takes buffers inside plain
// read-write mappings (the heap, anonymous mappings, the stack) as host memory without one;
// device buffers, and a host buffer across two mappings, are still looked up. Every request
// lands byte for byte; under the stand-in, the queries are counted.
TEST_F(DeviceIO, LargeBatchTakesHostBuffersWithoutPointerQueries)
{
  kvikio::defaults::set_num_threads(8);
  const auto data = random_bytes(1 * MiB + 3, 35);
  auto path       = dir.file("host_batch.bin");
  write_file(path, data);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  const std::size_t count = 4000;
  const std::size_t io    = 100;
  const std::size_t page  = 4096;
  std::vector<char> heap(count * io, 'h');
  const std::size_t mapped_bytes = (count * io + page - 1) / page * page;
  auto* mapped                   = static_cast<char*>(
    ::mmap(nullptr, mapped_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(mapped, MAP_FAILED);
  // Two adjacent read-write mappings (a flag of its own splits the second page off).
  auto* two = static_cast<char*>(
    ::mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(two, MAP_FAILED);
  ASSERT_EQ(::madvise(two + page, page, MADV_DONTFORK), 0);
  char stack[64 * io];
  std::memset(stack, 's', sizeof stack);
  DeviceBuffer dev(count * io);
  const std::size_t across = 1001;  // the request into both mappings of `two`
  std::vector<kvikio::IORequest> reads;
  std::vector<kvikio::IORequest> host_reads;
  std::vector<std::size_t> offsets;
  for (std::size_t i = 0; i < count; ++i) {
    offsets.push_back(i * 7919 % (data.size() - io));
    char* buf = nullptr;
    if (i == across) {
      buf = two + page - io / 2;
    } else if (i % 4 == 0) {
      buf = heap.data() + i * io;
    } else if (i % 4 == 1) {
      buf = mapped + i * io;
    } else if (i % 4 == 2) {
      buf = i / 4 < 64 ? stack + i / 4 * io : heap.data() + i * io;
    } else {
      buf = static_cast<char*>(dev.data()) + i * io;
    }
    reads.push_back({buf, io, offsets[i]});
    if (i % 4 != 3) { host_reads.push_back(reads.back()); }
  }
  auto queries    = kvikio::test::standin_fn<std::size_t (*)()>("kvikio_standin_pointer_queries");
  auto check_host = [&] {
    for (std::size_t i = 0; i < count; ++i) {
      if (i % 4 == 3) { continue; }
      const auto* p = static_cast<const char*>(reads[i].buf);
      ASSERT_TRUE(std::equal(p, p + io, data.begin() + static_cast<long>(offsets[i]))) << i;
    }
  };
  const std::size_t before = queries != nullptr ? queries() : 0;
  EXPECT_EQ(f.pread_batch(host_reads).get(), host_reads.size() * io);
  // One query: the buffer across two mappings (one per request before issue 14's fix).
  if (queries != nullptr) { EXPECT_EQ(queries() - before, 1U); }
  check_host();
  std::memset(stack, 's', sizeof stack);
  std::fill(heap.begin(), heap.end(), 'h');
  std::memset(mapped, 'm', mapped_bytes);
  std::memset(two, 't', 2 * page);
  const std::size_t before_all = queries != nullptr ? queries() : 0;
  EXPECT_EQ(f.pread_batch(reads).get(), count * io);
  // The device requests: a few queries per block of requests (the rest reuse the attributes
  // of the one before in the same allocation), none per host request.
  if (queries != nullptr) { EXPECT_LT(queries() - before_all, 200U); }
  check_host();
  const auto got = to_host(dev, count * io);
  for (std::size_t i = 3; i < count; i += 4) {
    ASSERT_TRUE(std::equal(
      got.data() + i * io, got.data() + (i + 1) * io, data.begin() + static_cast<long>(offsets[i])))
      << i;
  }
  ::munmap(mapped, mapped_bytes);
  ::munmap(two, 2 * page);
}

// Issue 14: a large batch looks its buffers' attributes up on the pool (blocks of requests);
// every request is still checked before any IO: a device range outside its allocation deep in
// the batch is reported by its index and nothing is read, and a good batch of interleaved
// host and device buffers at 16 threads lands byte for byte.
TEST_F(DeviceIO, LargeBatchChecksEveryRequestBeforeAnyIoAndIsByteExact)
{
  kvikio::defaults::set_num_threads(16);
  const auto data = random_bytes(2 * MiB + 5, 33);
  auto path       = dir.file("large_batch.bin");
  write_file(path, data);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  const std::size_t count = 3000;
  const std::size_t io    = 1000;
  DeviceBuffer dev(count * io);
  std::vector<char> host(count * io, 'h');
  std::vector<kvikio::IORequest> reads;
  std::vector<std::size_t> offsets;
  for (std::size_t i = 0; i < count; ++i) {
    offsets.push_back(i * 7919 % (data.size() - io));
    char* buf = i % 3 == 0 ? host.data() + i * io : static_cast<char*>(dev.data()) + i * io;
    reads.push_back({buf, io, offsets[i]});
  }
  auto bad     = reads;
  bad[2900]    = {static_cast<char*>(dev.data()) + (count - 1) * io, 2 * io, 0};
  const auto z = std::vector<char>(count * io, 0);
  dev.copy_from_host(z.data(), z.size());
  KVIKIO_EXPECT_THROW_WITH(
    f.pread_batch(bad).get(), std::out_of_range, "batch request 2900: pread_batch of '" + path);
  EXPECT_EQ(to_host(dev, count * io), z);
  EXPECT_TRUE(std::all_of(host.begin(), host.end(), [](char c) { return c == 'h'; }));
  EXPECT_EQ(f.pread_batch(reads).get(), count * io);
  const auto got = to_host(dev, count * io);
  for (std::size_t i = 0; i < count; ++i) {
    const char* p = i % 3 == 0 ? host.data() + i * io : got.data() + i * io;
    ASSERT_TRUE(std::equal(p, p + io, data.begin() + static_cast<long>(offsets[i]))) << i;
  }
}

// ---- Issue 14: small device pieces of a batch staged in groups through one pinned buffer ----

namespace {

/// The stand-in's call counters (all null on a real driver).
struct CopyCounters {
  using Fn           = std::size_t (*)();
  Fn sync_copies     = kvikio::test::standin_fn<Fn>("kvikio_standin_sync_copies");
  Fn async_copies    = kvikio::test::standin_fn<Fn>("kvikio_standin_async_copies");
  Fn stream_syncs    = kvikio::test::standin_fn<Fn>("kvikio_standin_stream_syncs");
  std::size_t sync0  = sync_copies != nullptr ? sync_copies() : 0;
  std::size_t async0 = async_copies != nullptr ? async_copies() : 0;
  std::size_t syncs0 = stream_syncs != nullptr ? stream_syncs() : 0;
  [[nodiscard]] bool counting() const { return sync_copies != nullptr && stream_syncs != nullptr; }
  [[nodiscard]] std::size_t sync() const { return sync_copies() - sync0; }
  [[nodiscard]] std::size_t async() const { return async_copies() - async0; }
  [[nodiscard]] std::size_t syncs() const { return stream_syncs() - syncs0; }
};

}  // namespace

// Pieces in two allocations that touch (as a caching allocator such as CuPy's hands them out)
// are adjacent in device memory and in the pinned buffer, but one copy may not span two
// allocations: each gets its own (the H200 answered CUDA_ERROR_INVALID_VALUE to a merged one).
TEST_F(DeviceIO, GroupedDeviceBatchDoesNotMergeCopiesAcrossAllocations)
{
  using Toggle        = void (*)(int);
  const auto touching = kvikio::test::standin_fn<Toggle>("kvikio_standin_touching_allocations");
  kvikio::defaults::set_num_threads(1);  // one group
  const auto data = random_bytes(3 * 4096 + 11, 43);
  auto path       = dir.file("touching.bin");
  write_file(path, data);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  if (touching != nullptr) { touching(1); }
  DeviceBuffer a(4096);
  DeviceBuffer b(2 * 4096 + 11);
  if (touching != nullptr) {
    touching(0);
    ASSERT_EQ(static_cast<char*>(b.data()), static_cast<char*>(a.data()) + 4096);
  }
  CopyCounters c;
  EXPECT_EQ(f.pread_batch({{a.data(), 4096, 0}, {b.data(), 2 * 4096 + 11, 4096}}).get(),
            data.size());
  if (c.counting()) {
    EXPECT_EQ(c.async(), 2U);
    EXPECT_EQ(c.syncs(), 1U);
  }
  const auto got_a = to_host(a, 4096);
  const auto got_b = to_host(b, 2 * 4096 + 11);
  EXPECT_TRUE(std::equal(got_a.begin(), got_a.end(), data.begin()));
  EXPECT_TRUE(std::equal(got_b.begin(), got_b.end(), data.begin() + 4096));
}

// One pool thread: the whole batch is one group, so 64 reads of 4 KiB into one array make one
// copy and one synchronisation (64 synchronous copies before), scattered destinations one copy
// each but still one synchronisation, and the writes the mirror. With 4 threads a batch of
// 2048 pieces makes a few groups per thread, not 2048 copy calls.
TEST_F(DeviceIO, SmallDeviceBatchMakesOneSynchronisationPerGroup)
{
  for (const char* backend : {"thread_pool", "auto"}) {
    SCOPED_TRACE(backend);
    kvikio::defaults::set("batch_backend", std::string(backend));
    kvikio::defaults::set_num_threads(1);
    const auto data = random_bytes(4 * MiB + 5, 41);
    auto path       = dir.file("groups.bin");
    write_file(path, data);
    FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
    const std::size_t count = 64;
    const std::size_t io    = 4096;
    DeviceBuffer dev(count * io);
    std::vector<kvikio::IORequest> reads;
    std::vector<std::size_t> offsets;
    for (std::size_t i = 0; i < count; ++i) {
      offsets.push_back(i * 7919 * 13 % (data.size() - io));
      reads.push_back({static_cast<char*>(dev.data()) + i * io, io, offsets[i]});
    }
    auto check = [&](const std::vector<char>& got, std::size_t i, std::size_t slot) {
      ASSERT_TRUE(std::equal(got.begin() + static_cast<long>(slot * io),
                             got.begin() + static_cast<long>((slot + 1) * io),
                             data.begin() + static_cast<long>(offsets[i])))
        << "request " << i;
    };
    {
      CopyCounters c;
      EXPECT_EQ(f.pread_batch(reads).get(), count * io);
      if (c.counting()) {
        EXPECT_EQ(c.sync(), 0U);
        EXPECT_EQ(c.async(), 1U);
        EXPECT_EQ(c.syncs(), 1U);
      }
      const auto got = to_host(dev, count * io);
      for (std::size_t i = 0; i < count; ++i) {
        check(got, i, i);
      }
    }
    // Reversed slots: no two pieces adjacent in device memory.
    auto reversed = reads;
    for (std::size_t i = 0; i < count; ++i) {
      reversed[i].buf = static_cast<char*>(dev.data()) + (count - 1 - i) * io;
    }
    {
      CopyCounters c;
      EXPECT_EQ(f.pread_batch(reversed).get(), count * io);
      if (c.counting()) {
        EXPECT_EQ(c.sync(), 0U);
        EXPECT_EQ(c.async(), count);
        EXPECT_EQ(c.syncs(), 1U);
      }
      const auto got = to_host(dev, count * io);
      for (std::size_t i = 0; i < count; ++i) {
        check(got, i, count - 1 - i);
      }
    }
    // Writes: the device array (slot i holds offsets[count - 1 - i]) out at shuffled offsets.
    {
      auto out_path = dir.file("groups_out.bin");
      FileHandle out(out_path, "w", FileHandle::m644, CompatMode::ON);
      std::vector<kvikio::IORequest> writes;
      for (std::size_t i = 0; i < count; ++i) {
        writes.push_back({static_cast<char*>(dev.data()) + i * io, io, (i * 37 % count) * io});
      }
      CopyCounters c;
      EXPECT_EQ(out.pwrite_batch(writes).get(), count * io);
      if (c.counting()) {
        EXPECT_EQ(c.sync(), 0U);
        EXPECT_EQ(c.async(), 1U);
        EXPECT_EQ(c.syncs(), 1U);
      }
      out.close();
      const auto written = read_file(out_path);
      ASSERT_EQ(written.size(), count * io);
      for (std::size_t i = 0; i < count; ++i) {
        const auto from = data.begin() + static_cast<long>(offsets[count - 1 - i]);
        ASSERT_TRUE(
          std::equal(from, from + io, written.begin() + static_cast<long>(i * 37 % count * io)))
          << "write " << i;
      }
    }
    // Four threads, 2048 pieces: a few groups per thread.
    kvikio::defaults::set_num_threads(4);
    const std::size_t many = 2048;
    DeviceBuffer big(many * io);
    std::vector<kvikio::IORequest> lots;
    offsets.clear();
    for (std::size_t i = 0; i < many; ++i) {
      offsets.push_back(i * 7919 * 13 % (data.size() - io));
      lots.push_back({static_cast<char*>(big.data()) + i * io, io, offsets[i]});
    }
    CopyCounters c;
    EXPECT_EQ(f.pread_batch(lots).get(), many * io);
    if (c.counting()) {
      EXPECT_EQ(c.sync(), 0U);
      EXPECT_LE(c.syncs(), 16U);
      EXPECT_EQ(c.async(), c.syncs());
    }
    const auto got = to_host(big, many * io);
    for (std::size_t i = 0; i < many; ++i) {
      check(got, i, i);
    }
  }
  kvikio::defaults::set("batch_backend", std::string("auto"));
}

// Odd sizes at odd offsets, destinations now adjacent and now apart in two allocations, a few
// pieces larger than a (small) pinned buffer and one larger than the grouped size, reads that
// meet the end of the file clamped: every byte lands, and no byte outside the requests moves.
TEST_F(DeviceIO, DeviceBatchOfOddPiecesIsByteExact)
{
  const auto data = random_bytes(1 * MiB + 17, 43);
  auto path       = dir.file("odd.bin");
  write_file(path, data);
  // "direct": the thread pool with Direct IO for reads (pieces land at unaligned places).
  for (const std::string backend : {"thread_pool", "auto", "direct"}) {
    kvikio::defaults::set_auto_direct_io_read(backend == "direct");
    FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
    for (std::size_t bounce : {std::size_t{16 * MiB}, std::size_t{16 * KiB}}) {
      SCOPED_TRACE(backend + " bounce " + std::to_string(bounce));
      kvikio::defaults::set("batch_backend",
                            backend == "direct" ? std::string("thread_pool") : backend);
      kvikio::defaults::set_bounce_buffer_size(bounce);
      kvikio::defaults::set_num_threads(3);
      std::mt19937 rng(7);
      const std::size_t span = 4 * MiB;
      DeviceBuffer a(span);
      DeviceBuffer b(span);
      std::vector<char> want_a(span, 'a');
      std::vector<char> want_b(span, 'b');
      a.copy_from_host(want_a.data(), span);
      b.copy_from_host(want_b.data(), span);
      std::vector<kvikio::IORequest> reads;
      std::size_t pos_a = 3;
      std::size_t pos_b = 5;
      std::size_t total = 0;
      auto add          = [&](std::size_t size, std::size_t offset, bool in_b) {
        auto& pos  = in_b ? pos_b : pos_a;
        auto& want = in_b ? want_b : want_a;
        char* dev  = static_cast<char*>(in_b ? b.data() : a.data());
        reads.push_back({dev + pos, size, offset});
        const std::size_t n = offset >= data.size() ? 0 : std::min(size, data.size() - offset);
        std::copy(data.begin() + static_cast<long>(offset),
                  data.begin() + static_cast<long>(offset + n),
                  want.begin() + static_cast<long>(pos));
        total += n;
        pos += size;
      };
      for (int i = 0; i < 400; ++i) {
        const std::size_t size = i % 50 == 7 ? 20000 + rng() % 100 : rng() % 5000;
        add(size, rng() % (data.size() - size), i % 7 == 3);
        if (rng() % 2 == 0) { pos_a += 1 + rng() % 100; }  // else adjacent to the one before
      }
      add(300 * KiB + 1, 4097, false);      // larger than a grouped piece
      add(1000, data.size() - 100, false);  // meets the end of the file: 100 bytes
      add(50, data.size() + 5, true);       // past the end: nothing
      add(4096, 13, false);
      ASSERT_LT(pos_a, span);
      EXPECT_EQ(f.pread_batch(reads).get(), total);
      EXPECT_TRUE(to_host(a, span) == want_a);
      EXPECT_TRUE(to_host(b, span) == want_b);
    }
  }
  kvikio::defaults::set("batch_backend", std::string("auto"));
}

// A failing piece reports its request index, the lowest one when several fail, only after
// every other piece finished; a failed copy or synchronisation names the file and range, and
// the pinned pool and the thread's stream work afterwards.
TEST_F(DeviceIO, DeviceBatchErrorsReportTheLowestRequestAfterTheRestFinished)
{
  kvikio::defaults::set_num_threads(2);
  const auto data = random_bytes(512 * KiB, 45);
  auto path       = dir.file("err.bin");
  write_file(path, data);
  const std::size_t io = 4096;
  DeviceBuffer dev(64 * io);
  dev.copy_from_host(data.data(), 64 * io);
  // Writes: requests 1 and 3 go to /dev/full (ENOSPC); the others land in full.
  for (const char* backend : {"thread_pool", "auto"}) {
    SCOPED_TRACE(backend);
    kvikio::defaults::set("batch_backend", std::string(backend));
    FileHandle full("/dev/full", "w");
    auto out_path = dir.file("err_out.bin");
    FileHandle out(out_path, "w", FileHandle::m644, CompatMode::ON);
    auto* d = static_cast<char*>(dev.data());
    std::vector<kvikio::FileIORequest> writes;
    for (std::size_t i = 0; i < 40; ++i) {
      const bool bad = i == 1 || i == 3;
      writes.push_back({bad ? &full : &out, d + i * io, io, bad ? 8192 * i : i * io});
    }
    try {
      kvikio::pwrite_batch(writes).get();
      ADD_FAILURE() << "expected an error";
    } catch (const std::system_error& e) {
      EXPECT_EQ(e.code().value(), ENOSPC);
      EXPECT_NE(std::string(e.what()).find("'/dev/full' at offset 8192 "), std::string::npos)
        << e.what();
    }
    out.close();
    const auto written = read_file(out_path);
    ASSERT_EQ(written.size(), 40 * io);
    for (std::size_t i = 0; i < 40; ++i) {
      if (i == 1 || i == 3) { continue; }
      ASSERT_TRUE(std::equal(written.begin() + static_cast<long>(i * io),
                             written.begin() + static_cast<long>((i + 1) * io),
                             data.begin() + static_cast<long>(i * io)))
        << i;
    }
  }
  kvikio::defaults::set("batch_backend", std::string("auto"));
  auto fail = kvikio::test::standin_fn<void (*)(const char*, int, int)>("kvikio_standin_fail");
  if (fail == nullptr) { return; }  // fault injection needs the stand-in driver
  kvikio::defaults::set_num_threads(1);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  // Scattered destinations (every other slot): one copy per piece; the 5th copy fails.
  std::vector<kvikio::IORequest> reads;
  for (std::size_t i = 0; i < 16; ++i) {
    reads.push_back({static_cast<char*>(dev.data()) + 2 * i * io, io, (i * 5 + 1) * io + 3});
  }
  const std::vector<char> zero(64 * io, 0);
  dev.copy_from_host(zero.data(), zero.size());
  fail("cuMemcpyHtoDAsync", 5, CUDA_ERROR_LAUNCH_FAILED);
  KVIKIO_EXPECT_THROW_WITH(f.pread_batch(reads).get(),
                           kvikio::CudaDriverError,
                           "cuMemcpyHtoDAsync failed: CUDA_ERROR_LAUNCH_FAILED");
  auto got = to_host(dev, 64 * io);
  for (std::size_t i = 0; i < 16; ++i) {
    const auto at   = got.begin() + static_cast<long>(2 * i * io);
    const auto from = data.begin() + static_cast<long>((i * 5 + 1) * io + 3);
    if (i == 4) {
      EXPECT_TRUE(std::all_of(at, at + static_cast<long>(io), [](char ch) { return ch == 0; }));
    } else {
      ASSERT_TRUE(std::equal(at, at + static_cast<long>(io), from)) << i;
    }
  }
  fail("cuMemcpyHtoDAsync", 5, CUDA_ERROR_LAUNCH_FAILED);
  KVIKIO_EXPECT_THROW_WITH(
    f.pread_batch(reads).get(),
    kvikio::CudaDriverError,
    "'" + path + "' at offset " + std::to_string(21 * io + 3) + " (4096 bytes)");
  // A failed synchronisation fails the group, reported by its first request.
  fail("cuStreamSynchronize", 1, CUDA_ERROR_LAUNCH_FAILED);
  KVIKIO_EXPECT_THROW_WITH(f.pread_batch(reads).get(),
                           kvikio::CudaDriverError,
                           "cuStreamSynchronize failed: CUDA_ERROR_LAUNCH_FAILED (719) reading "
                           "into device memory for '" +
                             path + "' at offset " + std::to_string(io + 3));
  // A failed write-side copy: that piece is not written, the others are.
  fail("cuMemcpyDtoHAsync", 2, CUDA_ERROR_LAUNCH_FAILED);
  {
    FileHandle out(dir.file("err_out2.bin"), "w", FileHandle::m644, CompatMode::ON);
    std::vector<kvikio::IORequest> writes;
    for (std::size_t i = 0; i < 4; ++i) {
      writes.push_back({static_cast<char*>(dev.data()) + 2 * i * io, io, i * io});
    }
    KVIKIO_EXPECT_THROW_WITH(out.pwrite_batch(writes).get(),
                             kvikio::CudaDriverError,
                             "writing from device memory for '" + dir.file("err_out2.bin") +
                               "' at offset 4096 (4096 bytes)");
  }
  // Everything works again afterwards.
  dev.copy_from_host(zero.data(), zero.size());
  EXPECT_EQ(f.pread_batch(reads).get(), 16 * io);
  got = to_host(dev, 64 * io);
  for (std::size_t i = 0; i < 16; ++i) {
    const auto at = got.begin() + static_cast<long>(2 * i * io);
    ASSERT_TRUE(std::equal(
      at, at + static_cast<long>(io), data.begin() + static_cast<long>((i * 5 + 1) * io + 3)))
      << i;
  }
}

// The case on a real GPU: 20000 reads of 4 KiB from a hot file into one device array,
// as one batch and one pread().get() at a time. Byte for byte both ways; the times are
// recorded (the batch must not be slower; the benchmark measures the ratio the issue asks for).
TEST_F(DeviceIO, GroupedDeviceBatchOfSmallReadsBeatsOneAtATime)
{
  const std::size_t count = 20000;
  const std::size_t io    = 4096;
  const auto data         = random_bytes(64 * MiB, 47);
  auto path               = dir.file("hot.bin");
  write_file(path, data);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  DeviceBuffer dev(count * io);
  std::vector<kvikio::IORequest> reads;
  std::mt19937_64 rng(14);
  for (std::size_t i = 0; i < count; ++i) {
    reads.push_back({static_cast<char*>(dev.data()) + i * io, io, rng() % (data.size() / io) * io});
  }
  auto verify = [&] {
    const auto got = to_host(dev, count * io);
    for (std::size_t i = 0; i < count; ++i) {
      const auto from = data.begin() + static_cast<long>(reads[i].file_offset);
      ASSERT_TRUE(
        std::equal(from, from + static_cast<long>(io), got.begin() + static_cast<long>(i * io)))
        << i;
    }
  };
  using clock = std::chrono::steady_clock;
  EXPECT_EQ(f.pread_batch(reads).get(), count * io);  // warm: pinned buffers, streams
  const auto t0 = clock::now();
  EXPECT_EQ(f.pread_batch(reads).get(), count * io);
  const auto t1 = clock::now();
  verify();
  const std::vector<char> zero(count * io, 0);
  dev.copy_from_host(zero.data(), zero.size());
  const auto t2 = clock::now();
  for (const auto& r : reads) {
    ASSERT_EQ(f.pread(r.buf, io, r.file_offset).get(), io);
  }
  const auto t3 = clock::now();
  verify();
  const double batch_s = std::chrono::duration<double>(t1 - t0).count();
  const double one_s   = std::chrono::duration<double>(t3 - t2).count();
  RecordProperty("batch_iops", std::to_string(static_cast<long>(count / batch_s)));
  RecordProperty("one_at_a_time_iops", std::to_string(static_cast<long>(count / one_s)));
  std::printf(
    "device batch of %zu 4 KiB reads: %.0f IOPS, one pread().get() at a time: %.0f IOPS "
    "(%.2fx)\n",
    count,
    count / batch_s,
    count / one_s,
    one_s / batch_s);
  if (!kvikio::test::using_standin()) { EXPECT_LT(batch_s, one_s); }
}

// Pieces of a file that registered with cuFile stay on cuFile, one call each: only the POSIX
// path is staged in groups.
TEST_F(DeviceIO, DeviceBatchOnACufileFileStaysOnCufile)
{
  if (auto why = kvikio::test::cufile_unusable_reason(dir.file("probe.bin")); !why.empty()) {
    GTEST_SKIP() << "cuFile path not usable here: " << why;
  }
  const auto calls = cufile_io_calls();
  if (calls == nullptr) { GTEST_SKIP() << "counting cuFile calls needs the stand-in libcufile"; }
  const std::size_t n = 64 * KiB;
  auto path           = make_file(n, 19);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::OFF);
  DeviceBuffer dev(n);
  std::vector<kvikio::IORequest> reads;
  for (std::size_t i = 0; i < 8; ++i) {
    reads.push_back({static_cast<char*>(dev.data()) + i * 4096, 4096, (7 - i) * 4096});
  }
  const auto before = calls();
  EXPECT_EQ(f.pread_batch(reads).get(), 8 * 4096U);
  EXPECT_EQ(calls(), before + 8);
  const auto got  = to_host(dev, 8 * 4096);
  const auto data = random_bytes(n, 19);
  for (std::size_t i = 0; i < 8; ++i) {
    ASSERT_TRUE(std::equal(got.begin() + static_cast<long>(i * 4096),
                           got.begin() + static_cast<long>((i + 1) * 4096),
                           data.begin() + static_cast<long>((7 - i) * 4096)))
      << i;
  }
}

// A group holds one context: pieces for two devices, in runs of three, each run a group of its
// own (made current on the pool thread), byte for byte.
TEST_F(DeviceIO, DeviceBatchAcrossTwoDevicesGroupsByContext)
{
  if (kvikio::device_count() < 2) { GTEST_SKIP() << "needs 2 devices"; }
  kvikio::defaults::set_num_threads(1);
  const auto data = random_bytes(512 * KiB, 49);
  auto path       = dir.file("two.bin");
  write_file(path, data);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  const std::size_t io = 1000;
  DeviceBuffer d0(12 * io, 0);
  DeviceBuffer d1(12 * io, 1);
  std::vector<kvikio::IORequest> reads;
  for (std::size_t i = 0; i < 24; ++i) {
    auto& d = i / 3 % 2 == 0 ? d0 : d1;
    reads.push_back({static_cast<char*>(d.data()) + (i / 6 * 3 + i % 3) * io, io, i * 9001});
  }
  CopyCounters c;
  EXPECT_EQ(f.pread_batch(reads).get(), 24 * io);
  if (c.counting()) {
    EXPECT_EQ(c.syncs(), 8U);
    EXPECT_EQ(c.async(), 8U);
  }
  const auto got0 = to_host(d0, 12 * io);
  const auto got1 = to_host(d1, 12 * io);
  for (std::size_t i = 0; i < 24; ++i) {
    const auto& got = i / 3 % 2 == 0 ? got0 : got1;
    const auto at   = got.begin() + static_cast<long>((i / 6 * 3 + i % 3) * io);
    const auto from = data.begin() + static_cast<long>(i * 9001);
    ASSERT_TRUE(std::equal(from, from + static_cast<long>(io), at)) << i;
  }
}

// Device memory through FileHandle and MmapHandle on the POSIX bounce-buffer pipeline: round
// trips at odd sizes and offsets (both backends), pointer kinds, contexts, bounds, the pinned
// pool and error paths. The cuFile backend, the staging drivers and device batches have files
// of their own (test_device_gds.cpp, test_device_staging.cpp, test_device_batch.cpp).
#include <gtest/gtest.h>

#include <cuda.h>
#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
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
#include "device_io_fixture.hpp"
#include "device_test_utils.hpp"
#include "test_utils.hpp"

using kvikio::CompatMode;
using kvikio::DeviceBuffer;
using kvikio::FileHandle;
using kvikio::test::DeviceIO;
using kvikio::test::KiB;
using kvikio::test::MiB;
using kvikio::test::random_bytes;
using kvikio::test::read_file;
using kvikio::test::TempDir;
using kvikio::test::to_host;
using kvikio::test::write_file;

namespace {

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

// Issue 24: as upstream, bounce_buffer_free() counts each freed buffer as the
// bounce_buffer_size it was used with, also when the pinned block behind it is rounded up to
// whole pages (1024 and 5000 bytes take two pages here).
TEST_F(DeviceIO, BounceBufferFreeCountsTheBufferSizeSetting)
{
  kvikio::defaults::set_num_threads(1);
  kvikio::bounce_buffer_free();
  const auto path = dir.file("small.bin");
  FileHandle f(path, "w+", FileHandle::m644, CompatMode::ON);
  const auto data = random_bytes(80, 24);
  DeviceBuffer dev(data.size());
  dev.copy_from_host(data.data(), data.size());
  for (std::size_t size : {std::size_t{1024}, std::size_t{2048}, std::size_t{5000}, 1 * MiB}) {
    kvikio::defaults::set_bounce_buffer_size(size);
    EXPECT_EQ(f.pwrite(dev.data(), data.size(), 0).get(), data.size());
    EXPECT_GE(kvikio::bounce_buffer_stats().pinned_bytes, size);
    EXPECT_EQ(kvikio::bounce_buffer_free(), size);
    EXPECT_EQ(kvikio::bounce_buffer_stats().pinned_bytes, 0U);
    EXPECT_EQ(kvikio::bounce_buffer_free(), 0U);
  }
  EXPECT_EQ(read_file(path), data);
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

// Issue 14: small reads into device memory take one pinned buffer and one copy on the
// thread's stream, and a buffer's attributes are remembered by its allocation. Reads of odd sizes
// at odd offsets land byte for byte; an allocation freed and replaced by a smaller one (maybe at
// the same address) is checked against its own size, not the remembered one; a failed copy names
// the file.
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
  fail("cuMemcpyHtoDAsync", 1, CUDA_ERROR_LAUNCH_FAILED);
  KVIKIO_EXPECT_THROW_WITH(f.read(dev.data(), 4096, 0, 0), kvikio::CudaDriverError, path);
  EXPECT_EQ(f.read(dev.data(), 4096, 0, 0), 4096U);
  fail("cuStreamSynchronize", 1, CUDA_ERROR_LAUNCH_FAILED);
  KVIKIO_EXPECT_THROW_WITH(
    f.read(dev.data(), 4096, 0, 0), kvikio::CudaDriverError, "cuStreamSynchronize");
  EXPECT_EQ(f.read(dev.data(), 4096, 0, 0), 4096U);
}

// Issue 28: a write from device memory stores what the caller queued before the call on any
// stream: here a copy on a non-blocking stream of the caller's that the stand-in runs only when
// something synchronises it. One cuCtxSynchronize per request, not one per piece.
TEST_F(DeviceIO, WritesStoreWhatWasQueuedBeforeTheCallOnAnyStream)
{
  auto ctx_syncs = kvikio::test::standin_fn<std::size_t (*)()>("kvikio_standin_ctx_syncs");
  if (ctx_syncs == nullptr) { GTEST_SKIP() << "a deferred copy needs the stand-in driver"; }
  auto retain =
    kvikio::test::standin_fn<CUresult (*)(CUcontext*, CUdevice)>("cuDevicePrimaryCtxRetain");
  auto set_current = kvikio::test::standin_fn<CUresult (*)(CUcontext)>("cuCtxSetCurrent");
  auto create      = kvikio::test::standin_fn<CUresult (*)(CUstream*, unsigned)>("cuStreamCreate");
  auto destroy     = kvikio::test::standin_fn<CUresult (*)(CUstream)>("cuStreamDestroy_v2");
  auto copy_async =
    kvikio::test::standin_fn<CUresult (*)(CUdeviceptr, const void*, size_t, CUstream)>(
      "cuMemcpyHtoDAsync_v2");
  ASSERT_TRUE(retain && set_current && create && destroy && copy_async);
  CUcontext ctx = nullptr;
  ASSERT_EQ(retain(&ctx, 0), CUDA_SUCCESS);
  ASSERT_EQ(set_current(ctx), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(create(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  auto sync = kvikio::test::standin_fn<CUresult (*)(CUstream)>("cuStreamSynchronize");
  ASSERT_NE(sync, nullptr);
  for (const std::size_t n : {std::size_t{4096}, std::size_t{3 * MiB + 5}}) {
    const auto old_bytes = random_bytes(n, 1);
    const auto new_bytes = random_bytes(n, 2);
    DeviceBuffer dev(n);
    auto write_and_check = [&](const char* what) {
      auto path = make_file(0, 3);
      FileHandle f(path, "w", FileHandle::m644, CompatMode::ON);
      const auto before = ctx_syncs();
      EXPECT_EQ(f.pwrite(dev.data(), n, 0, 256 * KiB).get(), n);
      EXPECT_EQ(ctx_syncs(), before + 1) << what << n;
      f.close();
      EXPECT_EQ(kvikio::test::read_file(path), new_bytes) << what << n;
    };
    // A copy from pinned memory queued on the caller's non-blocking stream.
    dev.copy_from_host(old_bytes.data(), n);
    ASSERT_EQ(sync(nullptr), CUDA_SUCCESS);
    kvikio::PinnedBuffer pinned(n);
    std::memcpy(pinned.data(), new_bytes.data(), n);
    ASSERT_EQ(copy_async(reinterpret_cast<CUdeviceptr>(dev.data()), pinned.data(), n, stream),
              CUDA_SUCCESS);
    write_and_check("non-blocking stream ");
    // A pageable copy whose DMA outlived its call (the stand-in ends it on the legacy stream).
    dev.copy_from_host(old_bytes.data(), n);
    ASSERT_EQ(sync(nullptr), CUDA_SUCCESS);
    dev.copy_from_host(new_bytes.data(), n);
    write_and_check("pageable copy ");
  }
  EXPECT_EQ(destroy(stream), CUDA_SUCCESS);
}

// Issue 28: no read into device memory, small or large, one at a time or many in flight, copies
// on the legacy default stream (cuMemcpyHtoD): such a copy waits for every copy queued on
// every blocking stream of the context and holds back those queued after it, so the small
// tensors of a checkpoint stalled its large ones (profiled on the H200).
TEST_F(DeviceIO, ReadsIntoDeviceMemoryNeverCopyOnTheLegacyStream)
{
  auto sync_copies = kvikio::test::standin_fn<std::size_t (*)()>("kvikio_standin_sync_copies");
  if (sync_copies == nullptr) { GTEST_SKIP() << "counting copies needs the stand-in driver"; }
  const std::size_t n = 3 * MiB + 123;
  auto path           = make_file(n, 28);
  const auto data     = random_bytes(n, 28);
  FileHandle f(path, "r", FileHandle::m644, CompatMode::ON);
  const std::vector<std::size_t> sizes{
    1, 4096, 16 * KiB + 3, 64 * KiB, 64 * KiB + 1, 256 * KiB, 1 * MiB + 17, 2 * MiB};
  std::vector<DeviceBuffer> bufs;
  for (auto size : sizes) {
    bufs.emplace_back(size);
  }
  const auto before = sync_copies();
  std::vector<std::future<std::size_t>> futures;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::size_t offset = (i * 7919) % (n - sizes[i]);
    EXPECT_EQ(f.read(bufs[i].data(), sizes[i], offset, 0), sizes[i]);
    futures.push_back(f.pread(bufs[i].data(), sizes[i], offset, 256 * KiB));
  }
  for (auto& fu : futures) {
    fu.get();
  }
  EXPECT_EQ(sync_copies(), before);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::size_t offset = (i * 7919) % (n - sizes[i]);
    const auto got           = to_host(bufs[i], sizes[i]);
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin() + offset)) << sizes[i];
  }
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

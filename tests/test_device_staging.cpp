// The device floor's staging drivers (DeviceStager, DeviceDrainer) on the driver: failed
// copies and abandoned transfers.
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

// The cuFile backend through the stand-in libcufile (or the real one on a GPU machine):
// compat mode OFF and AUTO, driver properties, per-file fallback, batches through cuFile.
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

// Several GPUs on one host: IO into a buffer on any device works whatever context the calling
// thread has current (the library uses the buffer's own context and leaves the caller's
// alone), and reads into different devices run at the same time rather than one after the
// other. Runs against the stand-in driver (2 devices) and, with label gpu, a real one;
// every test skips visibly with fewer than 2 devices.
#include <gtest/gtest.h>

#include <cuda.h>

#include <algorithm>
#include <exception>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/device_memory.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>

#include "device/pointer.hpp"
#include "device_test_utils.hpp"
#include "shim/cuda_api.hpp"
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
constexpr std::size_t guard_bytes = 4096;

#define KVIKIO_REQUIRE_TWO_DEVICES()                                                   \
  do {                                                                                 \
    if (kvikio::device_count() < 2) {                                                  \
      GTEST_SKIP() << "needs 2 CUDA devices, found " << kvikio::device_count() << " (" \
                   << kvikio::test::cuda_reason() << ")";                              \
    }                                                                                  \
  } while (0)

CUcontext current_context()
{
  CUcontext ctx = nullptr;
  kvikio::detail::CudaAPI::instance().CtxGetCurrent(&ctx);
  return ctx;
}

/// Makes device `ordinal`'s primary context current on this thread (cuCtxSetCurrent, as an
/// application using the runtime's cudaSetDevice would), restoring the previous one after.
class ScopedCurrentDevice {
 public:
  explicit ScopedCurrentDevice(int ordinal)
    : previous_(current_context()), ctx_(kvikio::detail::primary_context(ordinal))
  {
    kvikio::detail::cuda_check(kvikio::detail::CudaAPI::instance().CtxSetCurrent(ctx_),
                               "cuCtxSetCurrent");
  }
  ~ScopedCurrentDevice() { kvikio::detail::CudaAPI::instance().CtxSetCurrent(previous_); }
  ScopedCurrentDevice(const ScopedCurrentDevice&)            = delete;
  ScopedCurrentDevice& operator=(const ScopedCurrentDevice&) = delete;
  [[nodiscard]] CUcontext context() const noexcept { return ctx_; }

 private:
  CUcontext previous_;
  CUcontext ctx_;
};

/// Skips (returns a reason) when `mode` is the cuFile path and it cannot be used here.
std::string unusable_reason(CompatMode mode, const TempDir& dir)
{
  if (mode != CompatMode::OFF) { return {}; }
  return kvikio::test::cufile_unusable_reason(dir.file("probe.bin"));
}

/// The stand-in's rendezvous controls, or null on a real driver.
struct Rendezvous {
  void (*arm)(int, int) = kvikio::test::standin_fn<void (*)(int, int)>("kvikio_standin_rendezvous");
  int (*met)()          = kvikio::test::standin_fn<int (*)()>("kvikio_standin_rendezvous_met");
  [[nodiscard]] bool available() const { return arm != nullptr && met != nullptr; }
};

enum class Op { RAW, PREAD };

// device holding the buffer, op, compat mode
using Param = std::tuple<int, Op, CompatMode>;

std::string param_name(const ::testing::TestParamInfo<Param>& p)
{
  const auto& [device, op, mode] = p.param;
  return "dev" + std::to_string(device) + (op == Op::RAW ? "_raw" : "_p8") +
         (mode == CompatMode::ON ? "_posix" : "_cufile");
}

class MultiDeviceRoundTrip : public ::testing::TestWithParam<Param> {
 protected:
  TempDir dir;
  kvikio::test::ScopedSettings restore;
};

}  // namespace

// Write from, then read into, a buffer on `device` while the other device's context is current
// on the calling thread: the bytes land exactly, the guard bytes around the range stay, and
// the caller's current context is the same afterwards.
TEST_P(MultiDeviceRoundTrip, OtherDeviceCurrentOnCallingThread)
{
  KVIKIO_REQUIRE_TWO_DEVICES();
  const auto [device, op, mode] = GetParam();
  if (auto why = unusable_reason(mode, dir); !why.empty()) {
    GTEST_SKIP() << "cuFile path not usable here: " << why;
  }
  kvikio::defaults::set_num_threads(op == Op::PREAD ? 8 : 1);
  kvikio::defaults::set_bounce_buffer_size(128 * KiB);
  kvikio::defaults::set_gds_threshold(4 * KiB);
  const int other             = 1 - device;
  const std::size_t size      = 2 * MiB + 333;
  const std::size_t file_off  = 4096 + 13;
  const std::size_t buf_off   = 517;
  const std::size_t alloc     = buf_off + size + guard_bytes;
  const std::size_t task_size = 256 * KiB + 7;
  const auto path             = dir.file("multi.bin");
  const auto data             = random_bytes(size, 1000 + static_cast<unsigned>(device));
  auto around                 = random_bytes(alloc, 7);
  std::copy(data.begin(), data.end(), around.begin() + static_cast<long>(buf_off));

  DeviceBuffer src(alloc, device);
  src.copy_from_host(around.data(), alloc);
  DeviceBuffer dst(alloc, device);
  const auto fill = random_bytes(alloc, 99);
  dst.copy_from_host(fill.data(), alloc);

  ScopedCurrentDevice current(other);
  {
    FileHandle f(path, "w", FileHandle::m644, mode);
    ASSERT_EQ(f.compat_mode(), mode);
    auto* base          = static_cast<char*>(src.data());
    const std::size_t n = op == Op::RAW ? f.write(base, size, file_off, buf_off)
                                        : f.pwrite(base + buf_off, size, file_off, task_size).get();
    EXPECT_EQ(n, size);
  }
  EXPECT_EQ(current_context(), current.context()) << "write changed the caller's context";
  auto on_disk = read_file(path);
  ASSERT_EQ(on_disk.size(), file_off + size);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), on_disk.begin() + static_cast<long>(file_off)))
    << "file differs from device " << device << "'s buffer";

  {
    FileHandle f(path, "r", FileHandle::m644, mode);
    auto* base          = static_cast<char*>(dst.data());
    const std::size_t n = op == Op::RAW ? f.read(base, size, file_off, buf_off)
                                        : f.pread(base + buf_off, size, file_off, task_size).get();
    EXPECT_EQ(n, size);
  }
  EXPECT_EQ(current_context(), current.context()) << "read changed the caller's context";
  auto got = to_host(dst, alloc);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), got.begin() + static_cast<long>(buf_off)))
    << "device " << device << " buffer differs from the file";
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + static_cast<long>(buf_off), fill.begin()))
    << "bytes before the range were written";
  EXPECT_TRUE(std::equal(got.begin() + static_cast<long>(buf_off + size),
                         got.end(),
                         fill.begin() + static_cast<long>(buf_off + size)))
    << "bytes after the range were written";
}

INSTANTIATE_TEST_SUITE_P(Devices,
                         MultiDeviceRoundTrip,
                         ::testing::Combine(::testing::Values(0, 1),
                                            ::testing::Values(Op::RAW, Op::PREAD),
                                            ::testing::Values(CompatMode::ON, CompatMode::OFF)),
                         param_name);

namespace {

class MultiDeviceConcurrent : public ::testing::TestWithParam<CompatMode> {
 protected:
  TempDir dir;
  kvikio::test::ScopedSettings restore;

  /// Runs `body(device)` on one std::thread per device (each with the other device's context
  /// current) and rethrows the first failure.
  template <typename F>
  void on_two_threads(F body)
  {
    std::exception_ptr errors[2];
    std::vector<std::thread> threads;
    for (int d = 0; d < 2; ++d) {
      threads.emplace_back([&, d] {
        try {
          ScopedCurrentDevice current(1 - d);
          body(d);
        } catch (...) {
          errors[d] = std::current_exception();
        }
      });
    }
    for (auto& t : threads) {
      t.join();
    }
    for (auto& e : errors) {
      if (e) { std::rethrow_exception(e); }
    }
  }
};

std::string mode_name(const ::testing::TestParamInfo<CompatMode>& p)
{
  return p.param == CompatMode::ON ? "posix" : "cufile";
}

}  // namespace

// One file read into buffers on both devices at once, from two threads. On the stand-in, the
// rendezvous holds each device's copies until the other device's are in flight too, so a
// device path that serialised the two reads would be seen (and time out) here.
TEST_P(MultiDeviceConcurrent, OneFileIntoTwoDevicesAtOnce)
{
  KVIKIO_REQUIRE_TWO_DEVICES();
  const CompatMode mode = GetParam();
  if (auto why = unusable_reason(mode, dir); !why.empty()) {
    GTEST_SKIP() << "cuFile path not usable here: " << why;
  }
  // More pool threads than the two reads have pieces (7 + 7): the pool queue is first in,
  // first out, so with fewer threads the first read's pieces would take them all and the
  // second would wait its turn, which is fair use of the pool rather than serialisation.
  kvikio::defaults::set_num_threads(16);
  kvikio::defaults::set_bounce_buffer_size(128 * KiB);
  kvikio::defaults::set_gds_threshold(4 * KiB);
  const std::size_t n = 3 * MiB + 4097;
  const auto path     = dir.file("one.bin");
  const auto data     = random_bytes(n, 21);
  write_file(path, data);
  FileHandle f(path, "r", FileHandle::m644, mode);
  ASSERT_EQ(f.compat_mode(), mode);
  DeviceBuffer bufs[2] = {DeviceBuffer(n, 0), DeviceBuffer(n, 1)};
  Rendezvous rv;
  if (rv.available()) { rv.arm(2, 5000); }
  on_two_threads([&](int d) {
    EXPECT_EQ(f.pread(bufs[d].data(), n, 0, 512 * KiB + 3).get(), n) << "device " << d;
  });
  if (rv.available()) {
    EXPECT_EQ(rv.met(), 1) << "reads into device 0 and device 1 never ran at the same time";
  }
  for (int d = 0; d < 2; ++d) {
    EXPECT_TRUE(to_host(bufs[d], n) == data) << "device " << d << " differs from the file";
  }
}

// Two files into two devices at once, each thread with a plain read() on its own thread plus
// a pread() through the pool, so both the caller's thread and pool threads are exercised.
TEST_P(MultiDeviceConcurrent, TwoFilesIntoTwoDevicesAtOnce)
{
  KVIKIO_REQUIRE_TWO_DEVICES();
  const CompatMode mode = GetParam();
  if (auto why = unusable_reason(mode, dir); !why.empty()) {
    GTEST_SKIP() << "cuFile path not usable here: " << why;
  }
  kvikio::defaults::set_num_threads(16);  // more than the pieces of both preads (5 + 6)
  kvikio::defaults::set_bounce_buffer_size(128 * KiB);
  kvikio::defaults::set_gds_threshold(4 * KiB);
  const std::size_t sizes[2] = {2 * MiB + 1, 5 * MiB / 2 + 4095};
  std::vector<char> data[2];
  std::string paths[2];
  for (int d = 0; d < 2; ++d) {
    data[d]  = random_bytes(sizes[d], 30 + static_cast<unsigned>(d));
    paths[d] = dir.file("file" + std::to_string(d) + ".bin");
    write_file(paths[d], data[d]);
  }
  DeviceBuffer pread_bufs[2] = {DeviceBuffer(sizes[0], 0), DeviceBuffer(sizes[1], 1)};
  DeviceBuffer read_bufs[2]  = {DeviceBuffer(sizes[0], 0), DeviceBuffer(sizes[1], 1)};
  Rendezvous rv;
  if (rv.available()) { rv.arm(2, 5000); }
  on_two_threads([&](int d) {
    FileHandle f(paths[d], "r", FileHandle::m644, mode);
    EXPECT_EQ(f.pread(pread_bufs[d].data(), sizes[d], 0, 512 * KiB).get(), sizes[d]);
    EXPECT_EQ(f.read(read_bufs[d].data(), sizes[d], 0, 0), sizes[d]);
  });
  if (rv.available()) {
    EXPECT_EQ(rv.met(), 1) << "reads of the two files never ran at the same time";
  }
  for (int d = 0; d < 2; ++d) {
    EXPECT_TRUE(to_host(pread_bufs[d], sizes[d]) == data[d]) << "pread into device " << d;
    EXPECT_TRUE(to_host(read_bufs[d], sizes[d]) == data[d]) << "read into device " << d;
  }
}

// Writes from both devices into disjoint ranges of one file at once.
TEST_P(MultiDeviceConcurrent, TwoDevicesWriteOneFileAtOnce)
{
  KVIKIO_REQUIRE_TWO_DEVICES();
  const CompatMode mode = GetParam();
  if (auto why = unusable_reason(mode, dir); !why.empty()) {
    GTEST_SKIP() << "cuFile path not usable here: " << why;
  }
  kvikio::defaults::set_num_threads(4);
  kvikio::defaults::set_bounce_buffer_size(128 * KiB);
  kvikio::defaults::set_gds_threshold(4 * KiB);
  const std::size_t n       = 2 * MiB + 999;
  const auto path           = dir.file("both.bin");
  std::vector<char> data[2] = {random_bytes(n, 40), random_bytes(n, 41)};
  DeviceBuffer bufs[2]      = {DeviceBuffer(n, 0), DeviceBuffer(n, 1)};
  for (int d = 0; d < 2; ++d) {
    bufs[d].copy_from_host(data[d].data(), n);
  }
  FileHandle f(path, "w", FileHandle::m644, mode);
  on_two_threads([&](int d) {
    EXPECT_EQ(f.pwrite(bufs[d].data(), n, static_cast<std::size_t>(d) * n, 256 * KiB).get(), n);
  });
  f.close();
  auto on_disk = read_file(path);
  ASSERT_EQ(on_disk.size(), 2 * n);
  EXPECT_TRUE(std::equal(data[0].begin(), data[0].end(), on_disk.begin()));
  EXPECT_TRUE(std::equal(data[1].begin(), data[1].end(), on_disk.begin() + static_cast<long>(n)));
}

INSTANTIATE_TEST_SUITE_P(Modes,
                         MultiDeviceConcurrent,
                         ::testing::Values(CompatMode::ON, CompatMode::OFF),
                         mode_name);

// Upstream libkvikio's C++ names, called the way its documentation and examples call them,
// with the results upstream gives (issue 13). Host only; no CUDA driver needed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <future>
#include <limits>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/batch.hpp>
#include <kvikio/compat_mode_manager.hpp>
#include <kvikio/cufile/config.hpp>
#include <kvikio/cufile/driver.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/mmap.hpp>
#include <kvikio/utils.hpp>

#include "test_utils.hpp"

namespace {

template <typename E, typename F>
std::string message_of(F&& f)
{
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception of the expected type";
  return {};
}

}  // namespace

TEST(CompatError, ExpectThrowsCufileExceptionNamingFileAndLine)
{
  const int line = __LINE__ + 1;
  auto msg = message_of<kvikio::CUfileException>([] { KVIKIO_EXPECT(1 + 1 == 3, "math is off"); });
  EXPECT_EQ(
    msg,
    std::string("KvikIO failure at: ") + __FILE__ + ":" + std::to_string(line) + ": math is off");
  EXPECT_NO_THROW(KVIKIO_EXPECT(true, "never"));
}

TEST(CompatError, ExpectAndFailTakeTheExceptionType)
{
  auto msg = message_of<std::invalid_argument>(
    [] { KVIKIO_EXPECT(false, "bad " + std::to_string(7), std::invalid_argument); });
  EXPECT_NE(msg.find(": bad 7"), std::string::npos) << msg;
  msg = message_of<std::overflow_error>([] { KVIKIO_FAIL("too big", std::overflow_error); });
  EXPECT_NE(msg.find("KvikIO failure at: "), std::string::npos);
  EXPECT_NE(msg.find(": too big"), std::string::npos);
  msg = message_of<kvikio::CUfileException>([] { KVIKIO_FAIL(""); });
  EXPECT_NE(msg.find(": (no message)"), std::string::npos) << msg;
}

TEST(CompatError, CufileAndDriverTry)
{
  CUfileError_t ok{};
  EXPECT_NO_THROW(KVIKIO_CUFILE_TRY(ok));
  CUfileError_t bad{};
  bad.err  = static_cast<decltype(bad.err)>(5022);  // CU_FILE_INVALID_VALUE
  auto msg = message_of<kvikio::CUfileException>([&] { KVIKIO_CUFILE_TRY(bad); });
  EXPECT_NE(msg.find("cuFile error at: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid arguments"), std::string::npos) << msg;
  msg = message_of<std::runtime_error>([&] { KVIKIO_CUFILE_TRY(bad, std::runtime_error); });
  EXPECT_NE(msg.find("5022"), std::string::npos) << msg;
  EXPECT_NO_THROW(KVIKIO_CUDA_DRIVER_TRY(0));
  msg = message_of<kvikio::CUfileException>([] { KVIKIO_CUDA_DRIVER_TRY(1); });
  EXPECT_NE(msg.find("CUDA error at: "), std::string::npos) << msg;
}

TEST(CompatError, CheckBytesDone)
{
  EXPECT_NO_THROW(KVIKIO_CUFILE_CHECK_BYTES_DONE(4096));
  auto msg = message_of<kvikio::CUfileException>([] { KVIKIO_CUFILE_CHECK_BYTES_DONE(-EIO); });
  EXPECT_NE(msg.find(std::strerror(EIO)), std::string::npos) << msg;
  msg = message_of<kvikio::CUfileException>([] { KVIKIO_CUFILE_CHECK_BYTES_DONE(-5022); });
  EXPECT_NE(msg.find("invalid arguments"), std::string::npos) << msg;
}

TEST(CompatError, SyscallCheckThrowsGenericSystemErrorWithErrno)
{
  try {
    KVIKIO_SYSCALL_CHECK(::open("/nonexistent/kvikio/compat", O_RDONLY), "open failed:");
    FAIL() << "no exception";
  } catch (const kvikio::GenericSystemError& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("open failed: Linux system/library function call error"),
              std::string::npos)
      << e.what();
  }
  EXPECT_NO_THROW(KVIKIO_SYSCALL_CHECK(0));
  EXPECT_THROW(KVIKIO_SYSCALL_CHECK(7L, "", 7L), kvikio::GenericSystemError);
}

TEST(CompatUtils, SizesFuturesAndHostMemory)
{
  EXPECT_EQ(kvikio::get_page_size(), static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(kvikio::convert_size2off(123), 123);
  EXPECT_THROW((void)kvikio::convert_size2off(std::numeric_limits<std::size_t>::max()),
               std::overflow_error);
  EXPECT_THROW((void)kvikio::convert_size2ssize(std::numeric_limits<std::size_t>::max()),
               std::overflow_error);
  EXPECT_EQ(kvikio::convert_to_64bit(std::uint64_t{1} << 63), std::uint64_t{1} << 63);
  EXPECT_EQ(kvikio::convert_to_64bit(-5), -5);
  EXPECT_DOUBLE_EQ(kvikio::convert_to_64bit(1.5F), 1.5);
  std::vector<int> a(16);
  EXPECT_TRUE(kvikio::is_host_memory(a.data()));
  EXPECT_EQ(kvikio::convert_void2deviceptr(a.data()),
            static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(a.data())));

  auto ready = kvikio::make_ready_future(std::size_t{42});
  EXPECT_TRUE(kvikio::is_future_done(ready));
  EXPECT_EQ(ready.get(), 42U);
  EXPECT_THROW((void)kvikio::is_future_done(ready), std::invalid_argument);  // consumed
  std::promise<int> pending;
  auto fut = pending.get_future();
  EXPECT_FALSE(kvikio::is_future_done(fut));
  pending.set_value(1);
  EXPECT_TRUE(kvikio::is_future_done(fut));
}

TEST(CompatDefaults, GetenvOr)
{
  ::setenv("KVIKIO_COMPAT_TEST_INT", "17", 1);
  ::setenv("KVIKIO_COMPAT_TEST_BAD", "x17", 1);
  ::setenv("KVIKIO_COMPAT_TEST_BOOL", "Yes", 1);
  ::setenv("KVIKIO_COMPAT_TEST_CODES", "429,503", 1);
  ::setenv("KVIKIO_COMPAT_TEST_MODE", "auto", 1);
  ::unsetenv("KVIKIO_COMPAT_TEST_UNSET");
  EXPECT_EQ(kvikio::getenv_or("KVIKIO_COMPAT_TEST_INT", 3), 17);
  EXPECT_EQ(kvikio::getenv_or("KVIKIO_COMPAT_TEST_UNSET", 3), 3);
  EXPECT_EQ(kvikio::getenv_or("KVIKIO_COMPAT_TEST_INT", std::string{"d"}), "17");
  auto msg =
    message_of<std::invalid_argument>([] { (void)kvikio::getenv_or("KVIKIO_COMPAT_TEST_BAD", 3); });
  EXPECT_NE(msg.find("unknown config value KVIKIO_COMPAT_TEST_BAD=x17"), std::string::npos);
  EXPECT_TRUE(kvikio::getenv_or("KVIKIO_COMPAT_TEST_BOOL", false));
  EXPECT_TRUE(kvikio::getenv_or("KVIKIO_COMPAT_TEST_INT", false));  // any non-zero integer
  EXPECT_THROW((void)kvikio::getenv_or("KVIKIO_COMPAT_TEST_BAD", false), std::invalid_argument);
  EXPECT_EQ(kvikio::getenv_or("KVIKIO_COMPAT_TEST_CODES", std::vector<int>{1}),
            (std::vector<int>{429, 503}));
  EXPECT_EQ(kvikio::getenv_or("KVIKIO_COMPAT_TEST_MODE", kvikio::CompatMode::ON),
            kvikio::CompatMode::AUTO);

  auto [name, value, found] =
    kvikio::getenv_or({"KVIKIO_COMPAT_TEST_UNSET", "KVIKIO_COMPAT_TEST_INT"}, 0);
  EXPECT_EQ(name, "KVIKIO_COMPAT_TEST_INT");
  EXPECT_EQ(value, 17);
  EXPECT_TRUE(found);
  auto [name2, value2, found2] = kvikio::getenv_or({"KVIKIO_COMPAT_TEST_UNSET"}, 5);
  EXPECT_TRUE(name2.empty());
  EXPECT_EQ(value2, 5);
  EXPECT_FALSE(found2);
  msg = message_of<std::invalid_argument>([] {
    (void)kvikio::getenv_or({"KVIKIO_COMPAT_TEST_INT", "KVIKIO_COMPAT_TEST_BAD"}, 0);
  });
  EXPECT_NE(msg.find("has already been set by its alias KVIKIO_COMPAT_TEST_INT"), std::string::npos)
    << msg;
  EXPECT_THROW((void)kvikio::getenv_or<int>({}, 0), std::invalid_argument);
}

TEST(CompatDefaults, InferCompatModeIfAuto)
{
  EXPECT_EQ(kvikio::defaults::infer_compat_mode_if_auto(kvikio::CompatMode::OFF),
            kvikio::CompatMode::OFF);
  EXPECT_EQ(kvikio::defaults::infer_compat_mode_if_auto(kvikio::CompatMode::ON),
            kvikio::CompatMode::ON);
  // No GPUDirect Storage on a host-only machine: AUTO resolves to POSIX.
  EXPECT_EQ(kvikio::defaults::infer_compat_mode_if_auto(kvikio::CompatMode::AUTO),
            kvikio::defaults::is_compat_mode_preferred(kvikio::CompatMode::AUTO)
              ? kvikio::CompatMode::ON
              : kvikio::CompatMode::OFF);
}

TEST(CompatFileHandle, ThreadPoolArgumentAndCompatModeManager)
{
  kvikio::test::TempDir dir;
  const auto path = dir.file("pool.bin");
  std::vector<int> a(1 << 16);
  std::iota(a.begin(), a.end(), 0);
  const std::size_t nbytes = a.size() * sizeof(int);
  kvikio::ThreadPool pool(3);
  {
    kvikio::FileHandle f(path, "w");
    // Upstream's full argument list, with a pool of the caller's own.
    EXPECT_EQ(
      f.pwrite(a.data(), nbytes, 0, 4096, kvikio::defaults::gds_threshold(), true, &pool).get(),
      nbytes);
    const auto& manager = f.get_compat_mode_manager();
    EXPECT_EQ(manager.compat_mode_requested(), kvikio::defaults::compat_mode());
    EXPECT_EQ(manager.is_compat_mode_preferred(), f.is_compat_mode_preferred());
    EXPECT_TRUE(manager.is_compat_mode_preferred_for_async() ||
                !manager.is_compat_mode_preferred());
  }
  std::vector<int> b(a.size());
  kvikio::FileHandle f(path, "r", kvikio::FileHandle::m644, kvikio::CompatMode::ON);
  EXPECT_EQ(f.get_compat_mode_manager().compat_mode_requested(), kvikio::CompatMode::ON);
  EXPECT_TRUE(f.get_compat_mode_manager().is_compat_mode_preferred());
  EXPECT_NO_THROW(f.get_compat_mode_manager().validate_compat_mode_for_async());
  EXPECT_EQ(f.pread(b.data(), nbytes, 0, 4096, 0, true, &pool).get(), nbytes);
  EXPECT_EQ(a, b);
  std::fill(b.begin(), b.end(), 0);
  EXPECT_EQ(f.pread(b.data(), nbytes, 0, 4096, 0, true, nullptr).get(), nbytes);  // default pool
  EXPECT_EQ(a, b);

  kvikio::MmapHandle m(path, "r");
  EXPECT_EQ(m.nbytes(), nbytes);
  EXPECT_EQ(m.nbytes(), m.file_size());
  std::fill(b.begin(), b.end(), 0);
  EXPECT_EQ(m.pread(b.data(), nbytes, 0, 8192, &pool).get(), nbytes);
  EXPECT_EQ(a, b);

  kvikio::CompatModeManager standalone(path, "r", 0644, kvikio::CompatMode::ON, nullptr);
  EXPECT_TRUE(standalone.is_compat_mode_preferred());
  EXPECT_TRUE(standalone.is_compat_mode_preferred_for_async());
}

// Upstream's batch types: BatchOp with cuFile's opcode (designated initializers, as upstream's
// docs write it) and status() returning cuFile's events. Host buffers take the POSIX path.
TEST(CompatBatch, CufileOpcodeAndEvents)
{
  kvikio::test::TempDir dir;
  const auto path = dir.file("batch.bin");
  const auto data = kvikio::test::random_bytes(3 * 4096, 7);
  kvikio::test::write_file(path, data);
  kvikio::FileHandle f(path, "r+", kvikio::FileHandle::m644, kvikio::CompatMode::ON);
  std::vector<char> got(data.size());
  kvikio::BatchHandle batch(4);
  std::vector<kvikio::BatchOp> ops;
  for (off_t i = 0; i < 3; ++i) {
    // The file's pieces land in the buffer in reverse order.
    ops.push_back(kvikio::BatchOp{.file_handle   = f,
                                  .devPtr_base   = got.data(),
                                  .file_offset   = i * 4096,
                                  .devPtr_offset = (2 - i) * 4096,
                                  .size          = 4096,
                                  .opcode        = CUFILE_READ});
  }
  batch.submit(ops);
  std::vector<CUfileIOEvents_t> events;
  while (events.size() < ops.size()) {
    std::vector<CUfileIOEvents_t> some = batch.status(1, 3, nullptr);
    events.insert(events.end(), some.begin(), some.end());
  }
  for (const CUfileIOEvents_t& e : events) {
    EXPECT_EQ(e.status, CUFILE_COMPLETE);
    EXPECT_EQ(e.ret, 4096U);
  }
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(std::equal(got.begin() + static_cast<long>((2 - i) * 4096),
                           got.begin() + static_cast<long>((3 - i) * 4096),
                           data.begin() + static_cast<long>(i * 4096)))
      << i;
  }
  // A write, then a read past the end: reported CUFILE_FAILED with ret 0 through status(),
  // and with the message through status_details().
  batch.submit({kvikio::BatchOp{f, got.data(), 3 * 4096, 0, 4096, CUFILE_WRITE}});
  auto written = batch.status(1, 1);
  ASSERT_EQ(written.size(), 1U);
  EXPECT_EQ(written[0].status, CUFILE_COMPLETE);
  EXPECT_EQ(f.nbytes(), 4 * 4096U);
  batch.submit({kvikio::BatchOp{f, got.data(), 100 * 4096, 0, 4096, CUFILE_READ}});
  auto failed = batch.status(1, 1);
  ASSERT_EQ(failed.size(), 1U);
  EXPECT_EQ(failed[0].status, CUFILE_FAILED);
  EXPECT_EQ(failed[0].ret, 0U);
  batch.submit({kvikio::BatchOp{f, got.data(), 100 * 4096, 0, 4096, CUFILE_READ}});
  auto details = batch.status_details(1, 1);
  ASSERT_EQ(details.size(), 1U);
  EXPECT_EQ(details[0].status, CUFILE_FAILED);
  EXPECT_NE(details[0].error.find(path), std::string::npos) << details[0].error;
  // The older names of this library are the cuFile values.
  static_assert(kvikio::BatchOpcode::READ == CUFILE_READ);
  static_assert(kvikio::BatchStatus::CANCELED == CUFILE_CANCELED);
  static_assert(sizeof(CUfileIOEvents_t) == sizeof(void*) + 2 * sizeof(std::size_t));
}

// Run with CUFILE_ENV_PATH_JSON naming an existing file (a ctest of its own: the path is
// read once per process), and without it, where /etc/cufile.json decides.
TEST(CompatConfig, ConfigPathFollowsCufileEnvPathJson)
{
  const char* env = std::getenv("CUFILE_ENV_PATH_JSON");
  if (env != nullptr) {
    EXPECT_EQ(kvikio::config_path(), ::access(env, R_OK) == 0 ? std::string(env) : "");
  } else {
    EXPECT_EQ(kvikio::config_path(),
              ::access("/etc/cufile.json", R_OK) == 0 ? "/etc/cufile.json" : "");
  }
}

TEST(CompatConfig, MissingConfigFileGivesEmptyPath)
{
  const char* env = std::getenv("CUFILE_ENV_PATH_JSON");
  if (env == nullptr || ::access(env, F_OK) == 0) { GTEST_SKIP() << "needs a missing file"; }
  EXPECT_EQ(kvikio::config_path(), "");
}

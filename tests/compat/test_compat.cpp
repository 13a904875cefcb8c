// Upstream libkvikio's C++ names, called the way its documentation and examples call them,
// with the results upstream gives (issue 13). Host only; no CUDA driver needed.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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
#include <kvikio/file_utils.hpp>
#include <kvikio/mmap.hpp>
#include <kvikio/remote_handle.hpp>
#include <kvikio/shim.hpp>
#include <kvikio/utils.hpp>

#include "api/open_handle.hpp"
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

// --- file_utils.hpp: upstream's descriptor helpers ---

TEST(CompatFileUtils, FileWrapperOwnsOneDescriptor)
{
  kvikio::test::TempDir dir;
  const auto path = dir.file("wrapped.bin");
  kvikio::FileWrapper empty;
  EXPECT_FALSE(empty.opened());
  EXPECT_EQ(empty.fd(), -1);
  kvikio::FileWrapper w(path, "w", false, 0644);
  ASSERT_TRUE(w.opened());
  const int fd = w.fd();
  EXPECT_EQ(::write(fd, "abc", 3), 3);
  EXPECT_EQ(kvikio::open_flags(fd) & O_ACCMODE, O_WRONLY);
  kvikio::FileWrapper moved(std::move(w));
  EXPECT_FALSE(w.opened());  // NOLINT(bugprone-use-after-move): the moved-from state is API
  EXPECT_EQ(moved.fd(), fd);
  empty = std::move(moved);
  EXPECT_EQ(empty.fd(), fd);
  empty.open(path, "r", false, 0644);  // closes the old descriptor first
  // The old number is closed, or was closed first and reused by the new open.
  EXPECT_TRUE(empty.fd() == fd || ::fcntl(fd, F_GETFD) == -1);
  EXPECT_EQ(kvikio::open_flags(empty.fd()) & O_ACCMODE, O_RDONLY);
  const int read_fd = empty.fd();
  empty.close();
  EXPECT_FALSE(empty.opened());
  EXPECT_EQ(::fcntl(read_fd, F_GETFD), -1);
  empty.close();  // closing twice does nothing
  auto msg = message_of<kvikio::GenericSystemError>(
    [&] { kvikio::FileWrapper missing(dir.file("none/x"), "r", false, 0644); });
  EXPECT_NE(msg.find("Unable to open file '" + dir.file("none/x") + "'"), std::string::npos) << msg;
}

TEST(CompatFileUtils, OpenFlagsAndSizes)
{
  EXPECT_EQ(kvikio::open_fd_parse_flags("r", false), O_RDONLY | O_CLOEXEC);
  EXPECT_EQ(kvikio::open_fd_parse_flags("w", false), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC);
  EXPECT_EQ(kvikio::open_fd_parse_flags("r+", true), O_RDWR | O_CLOEXEC | O_DIRECT);
  EXPECT_EQ(kvikio::open_fd_parse_flags("a", false), O_WRONLY | O_CREAT | O_CLOEXEC);
  EXPECT_NE(message_of<std::invalid_argument>([] {
              (void)kvikio::open_fd_parse_flags("x", false);
            }).find("unknown file open flags 'x'"),
            std::string::npos);

  kvikio::test::TempDir dir;
  const auto path = dir.file("sized.bin");
  kvikio::test::write_file(path, kvikio::test::random_bytes(12345));
  EXPECT_EQ(kvikio::get_file_size(path), 12345U);
  const int fd = kvikio::open_fd(path, "r", false, 0644);
  EXPECT_EQ(kvikio::get_file_size(fd), 12345U);
  EXPECT_EQ(kvikio::open_flags(fd) & O_ACCMODE, O_RDONLY);
  ::close(fd);
  EXPECT_EQ(message_of<kvikio::GenericSystemError>([&] { (void)kvikio::open_flags(fd); }),
            "fcntl(F_GETFL) on descriptor " + std::to_string(fd) + " failed: Bad file descriptor");
  const auto missing = dir.file("missing.bin");
  try {
    (void)kvikio::get_file_size(missing);
    ADD_FAILURE() << "no exception";
  } catch (const kvikio::GenericSystemError& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("'" + missing + "'"), std::string::npos);
  }
  EXPECT_THROW((void)kvikio::get_file_size(-1), kvikio::GenericSystemError);
  EXPECT_THROW((void)kvikio::open_fd(missing, "r", false, 0644), kvikio::GenericSystemError);
}

TEST(CompatFileUtils, BlockDeviceInfo)
{
  kvikio::test::TempDir dir;
  const auto path = dir.file("dev.bin");
  kvikio::test::write_file(path, {'x'});
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  if (major(st.st_dev) == 0) {
    // overlayfs, tmpfs, NFS: no block device under the build tree.
    auto msg =
      message_of<kvikio::GenericSystemError>([&] { (void)kvikio::get_block_device_info(path); });
    EXPECT_NE(msg.find("is not on a local block device"), std::string::npos) << msg;
  } else {
    const auto info = kvikio::get_block_device_info(path);
    EXPECT_FALSE(info.name.empty());
    EXPECT_EQ(info.major, major(info.id));
    EXPECT_EQ(info.minor, minor(info.id));
    // A partition resolves to its disk: no partition number is left in the name.
    EXPECT_FALSE(std::filesystem::exists("/sys/class/block/" + info.name + "/partition"));
  }
  try {
    (void)kvikio::get_block_device_info(dir.file("missing"));
    ADD_FAILURE() << "no exception";
  } catch (const kvikio::GenericSystemError& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
  }
}

TEST(CompatFileUtils, CufileHandleWrapperWithoutADriver)
{
  kvikio::CUFileHandleWrapper w;
  EXPECT_FALSE(w.registered());
  EXPECT_EQ(w.handle(), nullptr);
  w.unregister_handle();  // nothing registered: does nothing
  if (kvikio::is_cufile_available()) { GTEST_SKIP() << "a cuFile driver opens here"; }
  auto status = w.register_handle(0);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->err, CU_FILE_DRIVER_NOT_INITIALIZED);
  EXPECT_FALSE(w.registered());
  kvikio::CUFileHandleWrapper moved(std::move(w));
  EXPECT_FALSE(moved.registered());
}

// --- KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE ---

namespace {
struct PerDeviceSetting {
  PerDeviceSetting() { kvikio::defaults::set_thread_pool_per_block_device(true); }
  ~PerDeviceSetting() { kvikio::defaults::set_thread_pool_per_block_device(false); }
};
}  // namespace

TEST(CompatThreadPoolPerBlockDevice, OffByDefaultAndASetting)
{
  EXPECT_FALSE(kvikio::defaults::thread_pool_per_block_device());
  kvikio::defaults::set("thread_pool_per_block_device", true);
  EXPECT_TRUE(kvikio::defaults::thread_pool_per_block_device());
  kvikio::defaults::set_thread_pool_per_block_device(false);
  EXPECT_EQ(std::get<bool>(kvikio::defaults::get("thread_pool_per_block_device")), false);
  bool listed = false;
  for (const auto& s : kvikio::defaults::list()) {
    if (s.name == "thread_pool_per_block_device") {
      listed = s.env_var == "KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE" && s.value == "false";
    }
  }
  EXPECT_TRUE(listed);
  // Off: no file gets a pool of its own.
  kvikio::test::TempDir dir;
  const auto path = dir.file("off.bin");
  kvikio::test::write_file(path, {'x'});
  kvikio::FileHandle f(path, "r");
  EXPECT_EQ(kvikio::detail::open_state(f)->pool, nullptr);
}

// Files on two devices (the build tree and the tmpfs /dev/shm) are served by two pools: with
// one thread each, blocking the first file's pool leaves the second file's reads running.
TEST(CompatThreadPoolPerBlockDevice, FilesOnTwoDevicesUseTwoPools)
{
  kvikio::test::TempDir dir;
  const std::string shm_dir = "/dev/shm";
  struct stat build_st {};
  struct stat shm_st {};
  ASSERT_EQ(::stat(std::filesystem::current_path().c_str(), &build_st), 0);
  if (::stat(shm_dir.c_str(), &shm_st) != 0 || ::access(shm_dir.c_str(), W_OK) != 0) {
    GTEST_SKIP() << "no writable /dev/shm";
  }
  if (build_st.st_dev == shm_st.st_dev) { GTEST_SKIP() << "the build tree is on /dev/shm"; }
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(1);
  PerDeviceSetting per_device;
  const auto data = kvikio::test::random_bytes(3 << 20);
  const auto disk = dir.file("disk.bin");
  const auto shm  = shm_dir + "/kvikio-per-device-" + std::to_string(::getpid()) + ".bin";
  struct Remove {
    std::string path;
    ~Remove() { std::remove(path.c_str()); }
  } remove_shm{shm};
  kvikio::test::write_file(disk, data);
  kvikio::test::write_file(shm, data);

  kvikio::FileHandle a(disk, "r");
  kvikio::FileHandle b(shm, "r");
  kvikio::FileHandle a2(disk, "r");
  auto* pool_a = kvikio::detail::open_state(a)->pool;
  auto* pool_b = kvikio::detail::open_state(b)->pool;
  ASSERT_NE(pool_a, nullptr);
  ASSERT_NE(pool_b, nullptr);
  EXPECT_NE(pool_a, pool_b);
  EXPECT_NE(pool_a, &kvikio::defaults::thread_pool());
  EXPECT_EQ(kvikio::detail::open_state(a2)->pool, pool_a);  // same device, same pool
  EXPECT_EQ(pool_a->get_thread_count(), 1U);

  // Block pool_a's only thread.
  std::promise<void> release;
  auto gate    = release.get_future().share();
  auto blocker = pool_a->submit_task([gate] { gate.wait(); });
  std::vector<char> out_a(data.size());
  std::vector<char> out_b(data.size());
  auto fa = a.pread(out_a.data(), out_a.size(), 0, 1 << 20);
  auto fb = b.pread(out_b.data(), out_b.size(), 0, 1 << 20);
  ASSERT_EQ(fb.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(fb.get(), data.size());
  EXPECT_EQ(out_b, data);
  EXPECT_EQ(fa.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  release.set_value();
  EXPECT_EQ(fa.get(), data.size());
  EXPECT_EQ(out_a, data);
  blocker.get();

  // An explicit pool still wins over the file's own.
  kvikio::ThreadPool mine(2);
  std::fill(out_a.begin(), out_a.end(), 0);
  EXPECT_EQ(a.pread(out_a.data(), out_a.size(), 0, 1 << 20, 0, true, &mine).get(), data.size());
  EXPECT_EQ(out_a, data);

  // num_threads follows to the per-device pools.
  kvikio::defaults::set_num_threads(3);
  EXPECT_EQ(pool_a->get_thread_count(), 3U);
  EXPECT_EQ(pool_b->get_thread_count(), 3U);
}

// Issue 24: code written for upstream matches phrases of its messages. Ours keep naming the
// file, offset, size or URL, and carry the phrase too.
namespace {
template <typename E, typename F>
void expect_phrases(F&& f, std::initializer_list<std::string> parts)
{
  const std::string msg = message_of<E>(std::forward<F>(f));
  for (const auto& part : parts) {
    EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
  }
}
}  // namespace

TEST(CompatPhrases, OpenAndModeErrors)
{
  kvikio::test::TempDir dir;
  const auto missing = dir.file("missing.bin");
  expect_phrases<kvikio::GenericSystemError>(
    [&] { kvikio::FileHandle f(missing, "r"); },
    {"Unable to open file", "No such file or directory", "'" + missing + "'"});
  expect_phrases<kvikio::GenericSystemError>([&] { kvikio::MmapHandle m(missing); },
                                             {"Unable to open file", "'" + missing + "'"});
  expect_phrases<kvikio::GenericSystemError>([&] { (void)kvikio::get_page_cache_info(missing); },
                                             {"Unable to open file", "'" + missing + "'"});
  const auto path = dir.file("data.bin");
  const auto data = kvikio::test::random_bytes(4099, 24);
  kvikio::test::write_file(path, data);
  std::vector<char> buf(data.size());
  {
    kvikio::FileHandle r(path, "r");
    expect_phrases<std::invalid_argument>([&] { r.pwrite(buf.data(), buf.size()).get(); },
                                          {"Operation not permitted", "read-only", path});
  }
  EXPECT_EQ(kvikio::test::read_file(path), data);  // nothing was written
  kvikio::FileHandle w(path, "w");
  expect_phrases<std::invalid_argument>([&] { w.pread(buf.data(), buf.size()).get(); },
                                        {"Operation not permitted", "write-only", path});
}

TEST(CompatPhrases, MmapRangesAndClosedHandle)
{
  kvikio::test::TempDir dir;
  const auto path      = dir.file("m.bin");
  const std::size_t n  = 1 << 20;
  const auto data      = kvikio::test::random_bytes(n, 25);
  const auto n_text    = std::to_string(n);
  const auto twice_txt = std::to_string(2 * n);
  kvikio::test::write_file(path, data);
  for (const std::string flags : {"", "z"}) {
    expect_phrases<std::invalid_argument>([&] { kvikio::MmapHandle m(path, flags); },
                                          {"Unknown file open flag", "'" + flags + "'", path});
  }
  EXPECT_EQ(message_of<std::invalid_argument>([&] {
              kvikio::MmapHandle m(path, "w");
            }).find("Unknown file open flag"),
            std::string::npos);
  expect_phrases<std::out_of_range>(
    [&] { kvikio::MmapHandle m(path, "r", std::nullopt, 2 * n); },
    {"Offset must be less than the file size", twice_txt, n_text, path});
  expect_phrases<std::out_of_range>([&] { kvikio::MmapHandle m(path, "r", std::nullopt, n); },
                                    {"Offset must be less than the file size"});
  expect_phrases<std::out_of_range>([&] { kvikio::MmapHandle m(path, "r", 2 * n); },
                                    {"Mapped region is past the end of file", twice_txt, path});
  expect_phrases<std::invalid_argument>([&] { kvikio::MmapHandle m(path, "r", 0); },
                                        {"Mapped region should not be zero byte", path});
  {
    kvikio::MmapHandle last(path, "r", std::nullopt, n - 1);  // the last byte alone
    char c = 0;
    EXPECT_EQ(last.read(&c, 1, n - 1), 1U);
    EXPECT_EQ(c, data.back());
  }
  kvikio::MmapHandle m(path, "r", 1024, 512);
  std::vector<char> out(n);
  expect_phrases<std::out_of_range>(
    [&] { m.read(out.data(), 1024, n + 1); },
    {"Offset is past the end of file", std::to_string(n + 1), path});
  for (auto [size, offset] :
       {std::pair<std::size_t, std::size_t>{1024, 513}, {1024, 384}, {1024 + 128, 512}}) {
    expect_phrases<std::out_of_range>([&] { m.read(out.data(), size, offset); },
                                      {"Read is out of bound", std::to_string(offset), path});
    expect_phrases<std::out_of_range>([&] { m.pread(out.data(), size, offset).get(); },
                                      {"Read is out of bound", "[512, 1536)"});
  }
  EXPECT_EQ(m.read(out.data(), 100, 700), 100U);
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + 100, data.begin() + 700));
  m.close();
  expect_phrases<std::invalid_argument>([&] { m.read(out.data(), 10, 512); },
                                        {"Cannot read from a closed MmapHandle", path});
}

TEST(CompatPhrases, NegativeSettingSaysNegativeValue)
{
  for (const char* key : {"num_threads", "task_size", "gds_threshold", "bounce_buffer_size"}) {
    const auto before = kvikio::defaults::get(key);
    expect_phrases<std::invalid_argument>([&] { kvikio::defaults::set(key, std::int64_t{-1}); },
                                          {"negative value", key, "'-1'"});
    EXPECT_EQ(kvikio::defaults::get(key), before);
  }
  // A positive value out of range says what it is, not "negative".
  EXPECT_EQ(message_of<std::invalid_argument>([] {
              kvikio::defaults::set("num_threads", std::int64_t{0});
            }).find("negative"),
            std::string::npos);
}

TEST(CompatPhrases, RemoteUrlErrors)
{
  using kvikio::RemoteEndpointType;
  using kvikio::RemoteHandle;
  for (const std::string url : {"example.com/path", "://bucket/object", "3s://bucket/object"}) {
    expect_phrases<std::invalid_argument>([&] { (void)kvikio::infer_remote_endpoint_type(url); },
                                          {"Bad scheme", "'" + url + "'"});
    expect_phrases<std::invalid_argument>([&] { (void)RemoteHandle::open(url); },
                                          {"Bad scheme", "'" + url + "'"});
  }
  for (const std::string url : {"unsupported://example.com/path", "s3://bucket-only"}) {
    const auto msg = message_of<std::invalid_argument>([&] { (void)RemoteHandle::open(url); });
    EXPECT_NE(msg.find("Unsupported endpoint URL"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + url + "'"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("Bad scheme"), std::string::npos) << msg;
  }
  expect_phrases<std::invalid_argument>(
    [] { (void)kvikio::infer_remote_endpoint_type("unsupported://example.com/path"); },
    {"Unsupported endpoint URL"});
  expect_phrases<std::invalid_argument>(
    [] { (void)RemoteHandle::open("s3://bucket-only", RemoteEndpointType::S3); },
    {"Invalid URL", "'s3://bucket-only'", "S3"});
  expect_phrases<std::invalid_argument>(
    [] {
      (void)RemoteHandle::open("http://127.0.0.1:1/b/o",
                               RemoteEndpointType::S3,
                               std::vector<RemoteEndpointType>{RemoteEndpointType::WEBHDFS});
    },
    {"not in the allowlist", "WEBHDFS", "http://127.0.0.1:1/b/o"});
}

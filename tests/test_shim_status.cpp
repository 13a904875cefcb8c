// How the shim reports a CUDA driver it cannot use. Run once per failure mode by ctest, with
// KVIKIO_LIBCUDA_PATH (and friends) set, and KVIKIO_TEST_EXPECT_REASON naming the expected
// text of the libcuda reason.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <kvikio/device_memory.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/shim.hpp>

#include "test_utils.hpp"

TEST(ShimStatus, UnusableDriverIsReportedWithItsReasonAndHostIoStillWorks)
{
  const char* expect = std::getenv("KVIKIO_TEST_EXPECT_REASON");
  ASSERT_NE(expect, nullptr) << "set KVIKIO_TEST_EXPECT_REASON";
  auto status = kvikio::library_status();
  ASSERT_EQ(status.size(), 3U);
  EXPECT_EQ(status[0].library, "libcuda");
  EXPECT_FALSE(status[0].loaded);
  EXPECT_EQ(status[2].library, "libcurl");  // linked, so there whatever the GPU libraries do
  EXPECT_TRUE(status[2].loaded);
  EXPECT_NE(status[0].reason.find(expect), std::string::npos) << status[0].reason;
  EXPECT_FALSE(status[1].loaded);
  EXPECT_FALSE(kvikio::is_cuda_driver_available());
  EXPECT_FALSE(kvikio::is_cufile_available());
  EXPECT_EQ(kvikio::device_count(), 0);

  // Device helpers say why they cannot work; host IO is unaffected.
  KVIKIO_EXPECT_THROW_WITH(kvikio::DeviceBuffer(10), kvikio::CudaDriverError, expect);
  kvikio::test::TempDir dir;
  const auto data = kvikio::test::random_bytes(5000, 3);
  kvikio::test::write_file(dir.file("a.bin"), data);
  kvikio::FileHandle f(dir.file("a.bin"), "r");
  std::vector<char> got(5000);
  EXPECT_FALSE(kvikio::is_device_memory(got.data()));
  EXPECT_EQ(f.pread(got.data(), 5000, 0, 1000).get(), 5000U);
  EXPECT_EQ(got, data);
  KVIKIO_EXPECT_THROW_WITH(
    kvikio::FileHandle(dir.file("a.bin"), "r", kvikio::FileHandle::m644, kvikio::CompatMode::OFF),
    kvikio::CUfileException,
    "a.bin");
}

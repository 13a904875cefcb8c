// main() for the device tests: KVIKIO_TEST_USE_STANDIN=1 points the CUDA shim at the
// stand-in driver built beside the tests, before anything loads a driver, and
// KVIKIO_TEST_USE_CUFILE_STANDIN=1 pairs it with the stand-in libcufile.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

int main(int argc, char** argv)
{
  const char* use = std::getenv("KVIKIO_TEST_USE_STANDIN");
  if (use != nullptr && std::string(use) == "1") {
    ::setenv("KVIKIO_LIBCUDA_PATH", KVIKIO_STANDIN_PATH, 1);
  }
  const char* use_cufile = std::getenv("KVIKIO_TEST_USE_CUFILE_STANDIN");
  if (use_cufile != nullptr && std::string(use_cufile) == "1") {
    ::setenv("KVIKIO_LIBCUFILE_PATH", KVIKIO_CUFILE_STANDIN_PATH, 1);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

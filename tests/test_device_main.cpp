// main() for the device tests: KVIKIO_TEST_USE_STANDIN=1 points the CUDA shim at the
// stand-in driver built beside the tests, before anything loads a driver.
#include <gtest/gtest.h>

#include <cstdlib>

int main(int argc, char** argv)
{
  const char* use = std::getenv("KVIKIO_TEST_USE_STANDIN");
  if (use != nullptr && std::string(use) == "1") {
    ::setenv("KVIKIO_LIBCUDA_PATH", KVIKIO_STANDIN_PATH, 1);
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

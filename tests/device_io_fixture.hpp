#pragma once
// The DeviceIO fixture of the device suites (test_device*.cpp, split by floor: the POSIX
// pipeline and pointers, the cuFile backend, the staging drivers, device batches).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "device_test_utils.hpp"
#include "test_utils.hpp"

namespace kvikio::test {

inline constexpr std::size_t KiB = 1024;
inline constexpr std::size_t MiB = 1024 * KiB;

/// Skips without a usable device; each case gets a temporary directory and its settings back.
class DeviceIO : public ::testing::Test {
 protected:
  void SetUp() override { KVIKIO_REQUIRE_DEVICE(); }
  TempDir dir;
  ScopedSettings restore;

  std::string make_file(std::size_t n, std::uint64_t seed = 1)
  {
    auto path = dir.file("in.bin");
    write_file(path, random_bytes(n, seed));
    return path;
  }
};

}  // namespace kvikio::test

#include "info.hpp"

#include <cstdio>

#include <string>

#include <kvikio/batch_io.hpp>
#include <kvikio/cufile/driver.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/device_memory.hpp>
#include <kvikio/nvtx.hpp>
#include <kvikio/shim.hpp>
#include <kvikio/version.hpp>

#include "options.hpp"

namespace kvikio::tool {
namespace {

const char* source_name(SettingSource s)
{
  switch (s) {
    case SettingSource::DEFAULT:
      return "default";
    case SettingSource::ENVIRONMENT:
      return "environment";
    case SettingSource::SET:
      return "set";
  }
  return "?";
}

}  // namespace

int run_info(int argc, char** argv, int first)
{
  Args args(argc, argv, first);
  if (auto extra = args.next_option()) {
    std::fprintf(stderr, "kvikio info: unknown option --%s\n", extra->c_str());
    return 2;
  }
  std::printf("kvikio %s\n\n", KVIKIO_VERSION_STRING);
  std::printf("libraries:\n");
  for (const auto& lib : library_status()) {
    std::printf(
      "  %-10s %-4s %s\n", lib.library.c_str(), lib.loaded ? "yes" : "no", lib.reason.c_str());
  }
  std::printf("\nCUDA devices: %d\n", device_count());
  // cuFile can be usable without GPUDirect Storage proper: libcufile then runs its own
  // compatibility mode (no nvidia-fs kernel module), which is what users most often ask about.
  const bool gds   = get_driver_properties().is_gds_available();
  const bool posix = defaults::is_compat_mode_preferred();
  std::printf("GPUDirect Storage (nvidia-fs): %s\n", gds ? "available" : "not available");
  std::printf("compat mode %s resolves to: %s\n",
              std::string(to_string(defaults::compat_mode())).c_str(),
              posix ? "POSIX (with pinned bounce buffers for device memory)"
                    : "cuFile (a file whose cuFile registration fails uses POSIX)");
  if (!posix && !gds) {
    // Measured on an H200 without nvidia-fs: about 1.5 GB/s through libcufile against about
    // 44 GB/s through our pipeline, for the same hot 4 GiB read into device memory.
    std::printf(
      "hint: without nvidia-fs, libcufile moves device data through its own compatibility "
      "mode,\n      which can be far slower than our POSIX pipeline; compare "
      "`kvikio bench --memory device`\n      with and without KVIKIO_COMPAT_MODE=ON.\n");
  }
  // Batches of host IO (pread_batch/pwrite_batch): io_uring where the kernel allows it.
  const auto uring_reason = io_uring_unavailable_reason();
  std::printf("batch IO (host memory): %s%s%s\n",
              batch_backend().c_str(),
              uring_reason.empty() ? "" : " (io_uring: ",
              uring_reason.empty() ? "" : (uring_reason + ")").c_str());
  std::printf("NVTX ranges: %s\n",
              is_nvtx_enabled() ? "compiled in (domain libkvikio; seen by a profiler such as nsys)"
                                : "not compiled in (no nvtx3 headers at build time, or "
                                  "KVIKIO_USE_NVTX=OFF): the macros are empty");
  std::printf("\n");
  std::printf("settings:\n");
  std::printf("  %-28s %-35s %-24s %s\n", "name", "environment variable", "value", "source");
  for (const auto& s : defaults::list()) {
    std::printf("  %-28s %-35s %-24s %s\n",
                s.name.c_str(),
                s.env_var.c_str(),
                s.value.c_str(),
                source_name(s.source));
  }
  return 0;
}

}  // namespace kvikio::tool

#pragma once
/// @file shim.hpp
/// Which vendor libraries this process could use, and why not: libcuda.so.1 (the CUDA driver)
/// and libcufile.so.0 (cuFile / GPUDirect Storage) are loaded at run time, so one build runs
/// with and without a GPU. KVIKIO_LIBCUDA_PATH / KVIKIO_LIBCUFILE_PATH name other files to
/// load instead (the tests' stand-in driver, for one).
#include <string>
#include <vector>

#include <kvikio/export.hpp>

namespace kvikio {

/// One library: `library` is "libcuda", "libcufile" or "libcurl" (linked, always loaded);
/// `path` what was passed to dlopen; `loaded` whether it is usable (for libcufile: loaded and
/// its driver opened); `reason` why not ("library missing: ...", "symbol missing: ...",
/// "driver failed to open: ...") or what was loaded.
struct KVIKIO_EXPORT LibraryStatus {
  /// "libcuda", "libcufile" or "libcurl".
  std::string library;
  /// What was passed to dlopen.
  std::string path;
  /// Whether the library is usable (for libcufile: loaded and its driver opened).
  bool loaded;
  /// Why not, or what was loaded.
  std::string reason;
};

/// The libraries' status (loading them on first call; opens the cuFile driver if it can).
/// Thread safe; never throws for a missing library. Shown by `kvikio info`.
KVIKIO_EXPORT std::vector<LibraryStatus> library_status();

/// The CUDA driver loaded, initialised and has a device.
KVIKIO_EXPORT bool is_cuda_driver_available();
/// libcufile.so.0 and its required symbols loaded (the driver may still fail to open).
KVIKIO_EXPORT bool is_cufile_library_available();
/// libcufile loaded and cuFileDriverOpen succeeded: AUTO mode uses cuFile.
KVIKIO_EXPORT bool is_cufile_available();
/// cuFile's batch API / stream API are usable.
KVIKIO_EXPORT bool is_batch_api_available();
/// cuFile's stream API (cuFileReadAsync/cuFileWriteAsync) is usable.
KVIKIO_EXPORT bool is_stream_api_available();
/// cuFileGetVersion() (e.g. 1150 for 1.15), 0 when unknown or not loaded.
KVIKIO_EXPORT int cufile_version();

}  // namespace kvikio

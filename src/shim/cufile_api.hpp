#pragma once
// Run-time binding to libcufile.so.0 (or KVIKIO_LIBCUFILE_PATH). cufile.h supplies the types
// and prototypes only; nothing vendor is linked.
#include <cufile.h>

#include <mutex>
#include <string>

namespace kvikio::detail {

class CufileAPI {
 public:
  decltype(&::cuFileDriverOpen) DriverOpen{};
  decltype(&::cuFileDriverClose) DriverClose{};
  decltype(&::cuFileHandleRegister) HandleRegister{};
  decltype(&::cuFileHandleDeregister) HandleDeregister{};
  decltype(&::cuFileRead) Read{};
  decltype(&::cuFileWrite) Write{};
  decltype(&::cuFileBufRegister) BufRegister{};
  decltype(&::cuFileBufDeregister) BufDeregister{};
  decltype(&::cuFileDriverGetProperties) DriverGetProperties{};
  decltype(&::cuFileDriverSetPollMode) DriverSetPollMode{};
  decltype(&::cuFileDriverSetMaxCacheSize) DriverSetMaxCacheSize{};
  decltype(&::cuFileDriverSetMaxPinnedMemSize) DriverSetMaxPinnedMemSize{};
  // Optional parts: the version query, the batch API and the stream API.
  decltype(&::cuFileGetVersion) GetVersion{};
  decltype(&::cuFileBatchIOSetUp) BatchIOSetUp{};
  decltype(&::cuFileBatchIOSubmit) BatchIOSubmit{};
  decltype(&::cuFileBatchIOGetStatus) BatchIOGetStatus{};
  decltype(&::cuFileBatchIOCancel) BatchIOCancel{};
  decltype(&::cuFileBatchIODestroy) BatchIODestroy{};
  decltype(&::cuFileReadAsync) ReadAsync{};
  decltype(&::cuFileWriteAsync) WriteAsync{};
  decltype(&::cuFileStreamRegister) StreamRegister{};
  decltype(&::cuFileStreamDeregister) StreamDeregister{};

  /// The process-wide instance: loads the library (not the driver) on first call.
  static CufileAPI& instance();

  /// The library and its required symbols loaded.
  [[nodiscard]] bool library_loaded() const noexcept { return loaded_; }
  /// Opens the driver once (thread safe); true when it is open. Never throws.
  bool driver_open() noexcept;
  /// Closes the driver if this process opened it; a later use opens it again.
  void driver_close() noexcept;
  [[nodiscard]] bool driver_is_open() const noexcept;
  /// The driver opens and reports nvidia-fs (GPUDirect Storage proper: an nvfs version other
  /// than 0.0). Without it libcufile only runs its own compatibility mode. Never throws.
  bool nvidia_fs_present() noexcept;
  /// Why cuFile is not usable (library, symbol or driver), or a description when it is.
  [[nodiscard]] std::string reason() const;
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// cuFileGetVersion (e.g. 1150 for 1.15), or 0 when unavailable.
  [[nodiscard]] int version() const noexcept;
  [[nodiscard]] bool batch_api() const noexcept { return BatchIOSetUp != nullptr; }
  [[nodiscard]] bool stream_api() const noexcept { return ReadAsync != nullptr; }

 private:
  CufileAPI();
  bool loaded_{false};
  std::string path_;
  std::string load_reason_;
  mutable std::mutex mutex_;
  bool open_{false};
  bool open_tried_{false};
  bool nvidia_fs_{false};  // read when the driver opens
  std::string open_reason_;
};

/// "CU_FILE_X (n)" text for a cuFile status, with the errno for CU_FILE_... system errors.
std::string cufile_error_text(CUfileError_t status);

/// Text for a negative result of cuFileRead/Write or a stream IO's bytes_done: -1 (errno),
/// -errno, or -CUfileOpError.
std::string cufile_io_error_text(long long ret);

/// Throws CUfileException("<call> failed: ... <context>") unless status is success.
void cufile_check(CUfileError_t status, const char* call, const std::string& context = {});

/// True when libcufile loaded, the CUDA driver is usable and cuFileDriverOpen succeeded.
bool cufile_driver_usable() noexcept;

/// True when GPUDirect Storage really works: cufile_driver_usable() and nvidia-fs present.
/// This is what AUTO decides by (DESIGN.md §1).
bool gds_usable() noexcept;

}  // namespace kvikio::detail

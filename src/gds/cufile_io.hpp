#pragma once
// The cuFile backend: a file's registration with cuFile and cuFileRead/cuFileWrite of one
// piece. It owns everything cuFile knows about a file; OpenFile below it holds descriptors.
#include <cuda.h>

#include <cstddef>
#include <string>

namespace kvikio::detail {

class OpenFile;
enum class Direction;

/// A file's registration with cuFile (RAII around CUfileHandle_t); empty when the file
/// does not use cuFile. Move-only; deregisters on destruction.
class CufileRegistration {
 public:
  CufileRegistration() noexcept = default;
  /// Registers the O_DIRECT descriptor `fd`. On failure the result is empty and `*why` says
  /// what failed (driver unusable, registration error). Never throws.
  static CufileRegistration try_register(int fd, std::string* why) noexcept;
  CufileRegistration(CufileRegistration&& o) noexcept;
  CufileRegistration& operator=(CufileRegistration&& o) noexcept;
  CufileRegistration(const CufileRegistration&)            = delete;
  CufileRegistration& operator=(const CufileRegistration&) = delete;
  ~CufileRegistration() noexcept;

  /// The CUfileHandle_t, or null when empty.
  [[nodiscard]] void* handle() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }

 private:
  void* handle_{nullptr};
};

/// Moves `size` bytes between `file_offset` of `file` (registered as `cufile`) and the
/// device allocation `dev_base` at `dev_offset`, in context `ctx`, with cuFileRead or
/// cuFileWrite (looping over short transfers). Returns `size`; throws EndOfFileError for a
/// read past the end, GenericSystemError / CUfileException otherwise, naming the file and
/// range.
std::size_t cufile_io(Direction direction,
                      const OpenFile& file,
                      const CufileRegistration& cufile,
                      CUcontext ctx,
                      const void* dev_base,
                      std::size_t size,
                      std::size_t file_offset,
                      std::size_t dev_offset,
                      bool sync_default_stream);

}  // namespace kvikio::detail

#pragma once
// The cuFile backend: per-file handle registration and cuFileRead/cuFileWrite of one piece.
#include <cuda.h>

#include <cstddef>
#include <string>

namespace kvikio::detail {

class OpenFile;
enum class Direction;

/// Registers the O_DIRECT descriptor `fd` with cuFile. Returns the handle, or null with
/// `*why` saying what failed (driver unusable, registration error). Never throws.
void* cufile_register_handle(int fd, std::string* why) noexcept;
void cufile_deregister_handle(void* handle) noexcept;

/// Moves `size` bytes between `file_offset` and the device allocation `dev_base` at
/// `dev_offset`, in context `ctx`, with cuFileRead or cuFileWrite (looping over short
/// transfers). Returns `size`; throws EndOfFileError for a read past the end,
/// GenericSystemError / CUfileException otherwise, naming the file and range.
std::size_t cufile_io(Direction direction,
                      const OpenFile& file,
                      CUcontext ctx,
                      const void* dev_base,
                      std::size_t size,
                      std::size_t file_offset,
                      std::size_t dev_offset,
                      bool sync_default_stream);

}  // namespace kvikio::detail

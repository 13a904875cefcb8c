#pragma once
// The POSIX path for device memory: file <-> pinned bounce buffer <-> device, with the disk
// transfer of one chunk overlapped with the copy of the previous one.
#include <cuda.h>

#include <cstddef>

namespace kvikio::detail {

class OpenFile;

/// Reads `size` bytes at file `offset` into device memory `dst` (in context `ctx`), blocking.
/// Runs on the calling thread with its own stream; the bounce buffer is page aligned, so the
/// aligned middle of each chunk may use O_DIRECT when `direct_io`. Returns `size`; throws
/// EndOfFileError / GenericSystemError / CudaDriverError naming the file and range.
std::size_t posix_device_read(const OpenFile& file,
                              CUcontext ctx,
                              void* dst,
                              std::size_t size,
                              std::size_t offset,
                              bool direct_io);

/// Writes `size` bytes from device memory `src` at file `offset`, blocking.
std::size_t posix_device_write(const OpenFile& file,
                               CUcontext ctx,
                               const void* src,
                               std::size_t size,
                               std::size_t offset,
                               bool direct_io);

/// Copies host memory to device memory through the bounce buffer (for sources that are
/// pageable host memory, such as an mmap'ed file), blocking.
void copy_host_to_device(CUcontext ctx, void* dst, const void* src, std::size_t size);

}  // namespace kvikio::detail

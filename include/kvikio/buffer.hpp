#pragma once
/// @file buffer.hpp
/// Registering device memory with cuFile (pins it for GPUDirect DMA; worth it for buffers
/// reused across many IOs). A no-op when compat mode is preferred (POSIX IO).
#include <cstddef>
#include <vector>

#include <kvikio/export.hpp>

namespace kvikio {

/// Registers [devPtr_base, devPtr_base + size). `errors_to_ignore` lists cuFile error codes
/// (CUfileOpError values) not to raise, e.g. CU_FILE_MEMORY_ALREADY_REGISTERED (5023).
/// Throws CUfileException naming the pointer otherwise. Thread safe.
KVIKIO_EXPORT void buffer_register(const void* devPtr_base,
                                   std::size_t size,
                                   int flags                                = 0,
                                   const std::vector<int>& errors_to_ignore = std::vector<int>());
/// Deregisters a buffer registered with buffer_register (its base address).
KVIKIO_EXPORT void buffer_deregister(const void* devPtr_base);

/// Registers the whole device allocation that `devPtr` points into (its base and size).
KVIKIO_EXPORT void memory_register(const void* devPtr,
                                   int flags                                = 0,
                                   const std::vector<int>& errors_to_ignore = std::vector<int>());
/// Deregisters the allocation that `devPtr` points into.
KVIKIO_EXPORT void memory_deregister(const void* devPtr);

}  // namespace kvikio

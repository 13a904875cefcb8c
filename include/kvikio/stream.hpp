#pragma once
/// @file stream.hpp
/// Stream-ordered IO: the future of FileHandle::read_async / write_async, and cuFile stream
/// registration. CUstream is declared opaquely here (the same type as cuda.h's), so this
/// header needs no vendor header.
#include <sys/types.h>

#include <cstddef>
#include <tuple>

#include <kvikio/export.hpp>

struct CUstream_st;
// Same declaration as cuda.h's; repeating an identical typedef is valid C++.
/// The CUDA driver's stream handle (as cuda.h declares it; no CUDA header is needed).
typedef struct CUstream_st* CUstream;  // NOLINT(modernize-use-using)
struct CUctx_st;

namespace kvikio {

/// The result of a stream-ordered read/write. Keep it alive until the operation has run on
/// its stream; check_bytes_done() waits for the stream and returns the byte count. The
/// argument block lives in malloc'd memory, as cuFile's stream API requires. Move-only.
class KVIKIO_EXPORT StreamFuture {
 public:
  StreamFuture() noexcept = default;
  /// Copies the arguments into a malloc'd block and takes `context` (the current one when null) for
  /// the IO on `stream`.
  StreamFuture(void* devPtr_base,
               std::size_t size,
               off_t file_offset,
               off_t devPtr_offset,
               CUstream stream,
               CUctx_st* context = nullptr);
  /// Takes `o`'s argument block; `o` is left empty.
  StreamFuture(StreamFuture&& o) noexcept;
  /// Waits for this future's operation, then takes `o`'s argument block; `o` is left empty.
  StreamFuture& operator=(StreamFuture&& o) noexcept;
  StreamFuture(const StreamFuture&)            = delete;
  StreamFuture& operator=(const StreamFuture&) = delete;
  /// Waits for the stream if the operation may still be queued (never throws).
  ~StreamFuture() noexcept;

  /// (devPtr_base, size_p, file_offset_p, devPtr_offset_p, bytes_done_p, stream): pointers
  /// into the argument block, as read_async/write_async take them.
  [[nodiscard]] std::tuple<void*, std::size_t*, off_t*, off_t*, ssize_t*, CUstream> get_args()
    const noexcept;

  /// Blocks until the stream has run the operation; returns the bytes moved. Throws
  /// CUfileException (naming the error) when the operation failed, std::invalid_argument on
  /// an empty future.
  std::size_t check_bytes_done();

 private:
  struct Args {
    std::size_t size;
    off_t file_offset;
    off_t devPtr_offset;
    ssize_t bytes_done;
  };
  void* devPtr_base_{nullptr};
  CUstream stream_{nullptr};
  CUctx_st* context_{nullptr};
  Args* args_{nullptr};
  bool synced_{false};
};

/// Blocks until the work queued on `stream` so far has finished (cuStreamSynchronize), for
/// consumers that receive a producer's stream (the CUDA Array Interface's "stream"). `stream`
/// may also be CU_STREAM_LEGACY (0x1) or CU_STREAM_PER_THREAD (0x2), which name a stream of the
/// current context: when `device_ptr` is CUDA memory its context is made current for the call.
/// Releases nothing and queues nothing; thread safe. Throws CudaDriverError naming the stream
/// when the driver is missing or the call fails.
KVIKIO_EXPORT void stream_synchronize(CUstream stream, const void* device_ptr = nullptr);

/// cuFileStreamRegister / cuFileStreamDeregister (flags as cuFile defines them). No-ops when
/// cuFile's stream API is not usable. Throws CUfileException on failure.
KVIKIO_EXPORT void stream_register(CUstream stream, unsigned flags);
/// Undoes stream_register(); a no-op without cuFile's stream API.
KVIKIO_EXPORT void stream_deregister(CUstream stream);

}  // namespace kvikio

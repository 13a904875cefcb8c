#pragma once
/// @file batch_io.hpp
/// Many reads or writes, on one file or several, submitted in one call.
#include <cstddef>
#include <future>
#include <string>
#include <vector>

#include <kvikio/export.hpp>

namespace kvikio {

class FileHandle;

/// One request of a batch on one file (FileHandle::pread_batch / pwrite_batch): `size` bytes
/// between `buf` and the file at `file_offset`. A write never stores through `buf`.
struct IORequest {
  /// Host or device buffer to read into or write from.
  void* buf;
  /// Bytes to move.
  std::size_t size;
  /// Byte offset in the file.
  std::size_t file_offset;
};

/// One request of a batch across files (kvikio::pread_batch / pwrite_batch).
struct FileIORequest {
  /// The file (must stay open until the batch's future is done).
  FileHandle* file;
  /// Host or device buffer to read into or write from.
  void* buf;
  /// Bytes to move.
  std::size_t size;
  /// Byte offset in the file.
  std::size_t file_offset;
};

/// Reads every request. Every request is checked before any IO starts (a closed or null
/// file, a file not opened for reading, a range beyond the largest offset, a device range
/// outside its allocation): a bad one throws, naming its index, and nothing runs.
/// Non-blocking: the future's get() returns the total bytes read, or rethrows the error of
/// the lowest-numbered failed request once every request has finished (no task is left
/// running either way). A read reaching the end of its file stops there: its count is short,
/// not an error. Host buffers go through io_uring or the thread pool (batch_backend());
/// device buffers through the usual device path, on the pool. The caller keeps the buffers
/// and the files alive until the future is ready. An empty batch is ready with 0.
KVIKIO_EXPORT std::future<std::size_t> pread_batch(const std::vector<FileIORequest>& requests);
/// Writes every request; like pread_batch, except that every byte is written or the
/// request fails. Writes go to the given offsets (appends are not reserved).
KVIKIO_EXPORT std::future<std::size_t> pwrite_batch(const std::vector<FileIORequest>& requests);

/// The backend that batches of host buffers use now: "io_uring" or "thread_pool", from the
/// setting batch_backend (KVIKIO_BATCH_BACKEND: auto, io_uring or thread_pool; auto takes
/// io_uring where it works). With batch_backend io_uring where it does not work, the batch
/// calls throw std::runtime_error saying why.
KVIKIO_EXPORT std::string batch_backend();
/// Why io_uring cannot be used here ("" when it can).
KVIKIO_EXPORT std::string io_uring_unavailable_reason();

}  // namespace kvikio

#pragma once
/// @file batch.hpp
/// Batched IO: submit many reads/writes at once, then poll or wait for them, or cancel them.
/// Uses cuFile's batch API when every file of a submission uses cuFile and the API exists;
/// otherwise the operations run on the shared thread pool through the POSIX path.
#include <sys/types.h>

#include <cstddef>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include <kvikio/export.hpp>
// At least what upstream's header of this name makes visible: code written for it relies on it.
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>
#include <kvikio/shim.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace kvikio {

/// The names BatchOpcode::READ / ::WRITE, kept for code written against earlier versions of
/// this library; they are cuFile's CUFILE_READ / CUFILE_WRITE (BatchOp::opcode's type is
/// cuFile's CUfileOpcode_t, as upstream).
struct KVIKIO_EXPORT BatchOpcode {
  /// Read from the file into device memory.
  static constexpr CUfileOpcode_t READ = CUFILE_READ;
  /// Write from device memory to the file.
  static constexpr CUfileOpcode_t WRITE = CUFILE_WRITE;
};

/// The names BatchStatus::COMPLETE etc., kept for code written against earlier versions of
/// this library; they are cuFile's CUfileStatus_t values (CUFILE_COMPLETE etc.).
struct KVIKIO_EXPORT BatchStatus {
  /// Not yet started.
  static constexpr CUfileStatus_t WAITING = CUFILE_WAITING;
  /// Submitted, not yet complete.
  static constexpr CUfileStatus_t PENDING = CUFILE_PENDING;
  /// Not a valid operation.
  static constexpr CUfileStatus_t INVALID = CUFILE_INVALID;
  /// Canceled before it completed.
  static constexpr CUfileStatus_t CANCELED = CUFILE_CANCELED;
  /// Completed; `ret` holds the bytes moved.
  static constexpr CUfileStatus_t COMPLETE = CUFILE_COMPLETE;
  /// Did not complete in the time allowed.
  static constexpr CUfileStatus_t TIMEOUT = CUFILE_TIMEOUT;
  /// Failed; `error_code` and `error` say why.
  static constexpr CUfileStatus_t FAILED = CUFILE_FAILED;
};

/// One operation: `size` bytes between `file_handle` at `file_offset` and the device buffer
/// `devPtr_base + devPtr_offset`; `opcode` is CUFILE_READ or CUFILE_WRITE. The buffer must stay
/// valid until the operation is reported (or the batch is canceled or closed). The batch holds
/// the open file itself from submit() on, so closing, moving or destroying the FileHandle
/// afterwards is safe.
struct KVIKIO_EXPORT BatchOp {
  /// The file to read or write (must outlive the batch).
  FileHandle& file_handle;
  /// Base address of the device buffer.
  void* devPtr_base;
  /// Byte offset in the file.
  off_t file_offset;
  /// Byte offset from `devPtr_base`.
  off_t devPtr_offset;
  /// Bytes to move.
  std::size_t size;
  /// BatchOpcode::READ or BatchOpcode::WRITE.
  CUfileOpcode_t opcode;
};

/// A finished operation with details (status_details()): `cookie` is the index of the op in
/// its submit() call; `ret` the bytes moved (CUFILE_COMPLETE) or 0. For a CUFILE_FAILED
/// operation of the POSIX path, `error` holds the message of the exception (naming the file
/// and offset) and `error_code` its errno when it was an OS error (GenericSystemError), else 0;
/// cuFile's batch API reports no details.
struct KVIKIO_EXPORT BatchIOEvent {
  /// The cookie of the BatchOp this event reports (its address in the submitted batch).
  void* cookie;
  /// Where the operation stands (a BatchStatus value).
  CUfileStatus_t status;
  /// Bytes moved, once COMPLETE.
  std::size_t ret;
  /// The errno-style code of a FAILED operation, 0 otherwise.
  int error_code{0};
  /// What went wrong with a FAILED operation, empty otherwise.
  std::string error{};
};

/// One batch. Workflow: construct with the most operations one submit may hold, submit(),
/// then status() until every op is reported (or cancel()), then submit() again or close().
/// Not thread safe; the destructor cancels and waits for unfinished operations.
class KVIKIO_EXPORT BatchHandle {
 public:
  BatchHandle() noexcept;
  /// Throws std::invalid_argument for a non-positive size, CUfileException when cuFile's
  /// batch setup fails.
  explicit BatchHandle(int max_num_events);
  /// Moves the batch; `other` is left closed.
  BatchHandle(BatchHandle&&) noexcept;
  /// Moves the batch, closing this one first; the source is left closed.
  BatchHandle& operator=(BatchHandle&&) noexcept;
  BatchHandle(const BatchHandle&)            = delete;
  BatchHandle& operator=(const BatchHandle&) = delete;
  ~BatchHandle() noexcept;

  /// Whether close() was called (or the batch was moved from).
  [[nodiscard]] bool closed() const noexcept;
  /// Cancels outstanding operations and releases the batch (idempotent).
  void close() noexcept;

  /// Queues the operations; returns at once. Throws CUfileException when there are more than
  /// max_num_events, std::invalid_argument when the batch is closed or an op is malformed.
  void submit(const std::vector<BatchOp>& operations);

  /// Returns finished operations not reported before, as cuFile's events (upstream's
  /// signature): waits until at least `min_nr` are available or `timeout` passes (nullptr:
  /// wait as long as it takes); at most `max_nr`. The `cookie` of an event is the index of its
  /// operation in the submit() call.
  std::vector<CUfileIOEvents_t> status(unsigned min_nr,
                                       unsigned max_nr,
                                       struct timespec* timeout = nullptr);

  /// As status(), with the error message and errno of each failed operation (POSIX path).
  /// An operation is reported once, by either call.
  std::vector<BatchIOEvent> status_details(unsigned min_nr,
                                           unsigned max_nr,
                                           struct timespec* timeout = nullptr);

  /// Cancels operations not yet started (reported CANCELED) and waits for running ones.
  void cancel();

  /// True when this batch uses cuFile's batch API for its current submission.
  [[nodiscard]] bool uses_cufile() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvikio

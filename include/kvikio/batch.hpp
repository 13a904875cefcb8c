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
#include <kvikio/file_handle.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>

namespace kvikio {

/// The names BatchOpcode::READ / ::WRITE, kept for code written against earlier versions of
/// this library; they are cuFile's CUFILE_READ / CUFILE_WRITE (BatchOp::opcode's type is
/// cuFile's CUfileOpcode_t, as upstream).
struct KVIKIO_EXPORT BatchOpcode {
  static constexpr CUfileOpcode_t READ  = CUFILE_READ;
  static constexpr CUfileOpcode_t WRITE = CUFILE_WRITE;
};

/// The names BatchStatus::COMPLETE etc., kept for code written against earlier versions of
/// this library; they are cuFile's CUfileStatus_t values (CUFILE_COMPLETE etc.).
struct KVIKIO_EXPORT BatchStatus {
  static constexpr CUfileStatus_t WAITING  = CUFILE_WAITING;
  static constexpr CUfileStatus_t PENDING  = CUFILE_PENDING;
  static constexpr CUfileStatus_t INVALID  = CUFILE_INVALID;
  static constexpr CUfileStatus_t CANCELED = CUFILE_CANCELED;
  static constexpr CUfileStatus_t COMPLETE = CUFILE_COMPLETE;
  static constexpr CUfileStatus_t TIMEOUT  = CUFILE_TIMEOUT;
  static constexpr CUfileStatus_t FAILED   = CUFILE_FAILED;
};

/// One operation: `size` bytes between `file_handle` at `file_offset` and the device buffer
/// `devPtr_base + devPtr_offset`; `opcode` is CUFILE_READ or CUFILE_WRITE. The buffer must stay
/// valid until the operation is reported (or the batch is canceled or closed). The batch holds
/// the open file itself from submit() on, so closing, moving or destroying the FileHandle
/// afterwards is safe.
struct KVIKIO_EXPORT BatchOp {
  FileHandle& file_handle;
  void* devPtr_base;
  off_t file_offset;
  off_t devPtr_offset;
  std::size_t size;
  CUfileOpcode_t opcode;
};

/// A finished operation with details (status_details()): `cookie` is the index of the op in
/// its submit() call; `ret` the bytes moved (CUFILE_COMPLETE) or 0. For a CUFILE_FAILED
/// operation of the POSIX path, `error` holds the message of the exception (naming the file
/// and offset) and `error_code` its errno when it was an OS error (GenericSystemError), else 0;
/// cuFile's batch API reports no details.
struct KVIKIO_EXPORT BatchIOEvent {
  void* cookie;
  CUfileStatus_t status;
  std::size_t ret;
  int error_code{0};
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
  BatchHandle(BatchHandle&&) noexcept;
  BatchHandle& operator=(BatchHandle&&) noexcept;
  BatchHandle(const BatchHandle&)            = delete;
  BatchHandle& operator=(const BatchHandle&) = delete;
  ~BatchHandle() noexcept;

  [[nodiscard]] bool closed() const noexcept;
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

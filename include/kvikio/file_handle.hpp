#pragma once
/// @file file_handle.hpp
/// A local file opened for IO between storage and host or device memory.
#include <sys/stat.h>
#include <sys/types.h>

#include <cstddef>
#include <future>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <kvikio/export.hpp>
// At least what upstream's header of this name makes visible: code written for it relies on it.
#include <kvikio/batch_io.hpp>
#include <kvikio/buffer.hpp>
#include <kvikio/compat_mode.hpp>
#include <kvikio/compat_mode_manager.hpp>
#include <kvikio/cufile/config.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_utils.hpp>
#include <kvikio/shim.hpp>
#include <kvikio/shim/cufile_h_wrapper.hpp>
#include <kvikio/stream.hpp>
#include <kvikio/utils.hpp>

namespace kvikio {

class FileHandle;

namespace detail {
struct OpenHandle;
/// The library's own access to a FileHandle's shared state (api/request.hpp).
const std::shared_ptr<OpenHandle>& open_state(const FileHandle& f) noexcept;
}  // namespace detail

/// Passed as `file_offset` to a write: 0, or the end of the file when it was opened with "a".
/// Appends reserve their range when they are issued, atomically per handle: concurrent
/// pwrite()s and write()s through one handle land one after the other, each intact, in the
/// order they were issued. Appends through different handles or processes are not ordered
/// against each other (each handle only sees the others' data once it is on disk). When no
/// append of the handle is in flight, the next one goes to the file's current end, as with
/// O_APPEND: after a failed append or a truncation too, never leaving a hole of zeros.
inline constexpr std::size_t unspecified_offset = std::numeric_limits<std::size_t>::max();

/// A local file. Opening is eager (the constructor throws on failure); closing is idempotent
/// and also done by the destructor. A FileHandle may be shared by threads for concurrent
/// reads and writes at different offsets; open/close/move are not thread safe.
///
/// Buffers may be host or device memory; the kind, allocation and CUDA context are detected
/// from the pointer (host, pinned and managed memory take the host path). Device memory goes
/// through cuFile when this file registered with it (compat_mode() OFF), else through pooled
/// pinned bounce buffers; the IO runs in the buffer's context and is ordered after work on
/// the legacy default stream. A device range that does not lie inside its allocation throws
/// std::out_of_range before any byte moves. The caller owns the buffer and keeps it alive
/// until the IO (or its future) completes. Work already queued keeps the file open until it
/// finishes, even if the handle is closed meanwhile.
class KVIKIO_EXPORT FileHandle {
 public:
  /// rw-r--r--: the default mode of a file the constructor creates.
  static constexpr mode_t m644 = S_IRUSR | S_IWUSR | S_IRGRP | S_IROTH;

  FileHandle() noexcept;
  /// Opens `file_path` with `flags`: "r", "r+", "w", "w+", "a", "a+" (a "b" anywhere is
  /// accepted and ignored). "w" creates or truncates; "a" creates, never truncates, and a
  /// write at `unspecified_offset` appends. Throws GenericSystemError (with errno, naming the
  /// file) when the file cannot be opened, std::invalid_argument for unknown flags.
  /// With `compat_mode` OFF and cuFile unusable for this file, throws CUfileException.
  FileHandle(const std::string& file_path,
             const std::string& flags = "r",
             mode_t mode              = m644,
             CompatMode compat_mode   = defaults::compat_mode());
  /// Moves the open file; `other` is left closed.
  FileHandle(FileHandle&&) noexcept;
  /// Closes this file and takes `other`'s; `other` is left closed.
  FileHandle& operator=(FileHandle&&) noexcept;
  FileHandle(const FileHandle&)            = delete;
  FileHandle& operator=(const FileHandle&) = delete;
  ~FileHandle() noexcept;

  /// Whether the file is closed (or was moved from).
  [[nodiscard]] bool closed() const noexcept;
  /// Closes the file. Idempotent; the handle is closed afterwards even when this throws.
  /// Throws GenericSystemError (with errno, naming the file) when close(2) fails, for example
  /// with a write-back error on NFS or a full quota: the data may not have been stored.
  /// Work still queued (futures not yet waited for) keeps the file open until it finishes;
  /// the descriptors are then closed by the last task and a failure cannot be reported, so
  /// wait for every future before close() to see close errors. The destructor closes without
  /// reporting errors.
  void close();
  /// Waits until the file's data and metadata are on stable storage (fsync(2)), including
  /// data written through the O_DIRECT descriptor. Blocking. Throws GenericSystemError naming
  /// the file on failure, std::invalid_argument on a closed handle.
  void fsync();

  /// The path given at open (kept after close, for messages).
  [[nodiscard]] const std::string& path() const noexcept;
  /// The buffered file descriptor, or with `o_direct` the O_DIRECT one (-1 if none).
  /// -1 on a closed handle.
  [[nodiscard]] int fd(bool o_direct = false) const noexcept;
  /// The open(2) flags of fd(o_direct). Throws GenericSystemError on a closed handle.
  [[nodiscard]] int fd_open_flags(bool o_direct = false) const;
  /// Current size of the file in bytes (fstat). Throws on a closed handle.
  [[nodiscard]] std::size_t nbytes() const;

  /// Reads `size` bytes at `file_offset` into `buf + buf_offset`, blocking, on the calling
  /// thread. Returns `size`. Reading past the end of the file throws EndOfFileError (the bytes
  /// before the end are read). `sync_default_stream` is accepted for libkvikio compatibility.
  std::size_t read(void* buf,
                   std::size_t size,
                   std::size_t file_offset,
                   std::size_t buf_offset,
                   bool sync_default_stream = true);
  /// Writes `size` bytes from `buf + buf_offset` at `file_offset`, blocking. Returns `size`;
  /// a short write is retried and a failure throws.
  std::size_t write(const void* buf,
                    std::size_t size,
                    std::size_t file_offset,
                    std::size_t buf_offset,
                    bool sync_default_stream = true);

  /// Reads `size` bytes at `file_offset` into `buf`, split into `task_size` pieces run on the
  /// shared pool. Non-blocking: the future's get() returns `size` or rethrows the first
  /// failure of any piece. Device requests below `gds_threshold` run on the calling thread.
  /// `thread_pool` runs the pieces; null (the default) means defaults::thread_pool(). (Upstream
  /// passes `&defaults::thread_pool()`, a BS::thread_pool; here it is a kvikio::ThreadPool.)
  std::future<std::size_t> pread(void* buf,
                                 std::size_t size,
                                 std::size_t file_offset   = 0,
                                 std::size_t task_size     = defaults::task_size(),
                                 std::size_t gds_threshold = defaults::gds_threshold(),
                                 bool sync_default_stream  = true,
                                 ThreadPool* thread_pool   = nullptr);
  /// Writes `size` bytes from `buf` at `file_offset` (see unspecified_offset), in parallel
  /// like pread.
  std::future<std::size_t> pwrite(const void* buf,
                                  std::size_t size,
                                  std::size_t file_offset   = unspecified_offset,
                                  std::size_t task_size     = defaults::task_size(),
                                  std::size_t gds_threshold = defaults::gds_threshold(),
                                  bool sync_default_stream  = true,
                                  ThreadPool* thread_pool   = nullptr);

  /// Stream-ordered read into device memory: runs after the work queued on `stream` before
  /// it, and work queued after it sees the data. The values behind size_p, file_offset_p and
  /// devPtr_offset_p are read when the operation runs; *bytes_read_p then holds the bytes
  /// read, or a negative value on failure (-1: OS error; else -CUfileOpError). Uses cuFile's
  /// stream API when this file uses cuFile and the API exists; otherwise waits for `stream`
  /// and reads on the calling thread (blocking). `devPtr_base` must be device memory
  /// (std::invalid_argument otherwise); a closed file throws std::invalid_argument.
  void read_async(void* devPtr_base,
                  std::size_t* size_p,
                  off_t* file_offset_p,
                  off_t* devPtr_offset_p,
                  ssize_t* bytes_read_p,
                  CUstream stream);
  /// Like read_async(pointers), with the arguments kept in the returned future, which must
  /// stay alive until the operation ran (e.g. until check_bytes_done()).
  [[nodiscard]] StreamFuture read_async(void* devPtr_base,
                                        std::size_t size,
                                        off_t file_offset   = 0,
                                        off_t devPtr_offset = 0,
                                        CUstream stream     = nullptr);
  /// Stream-ordered write from device memory; see read_async.
  void write_async(void* devPtr_base,
                   std::size_t* size_p,
                   off_t* file_offset_p,
                   off_t* devPtr_offset_p,
                   ssize_t* bytes_written_p,
                   CUstream stream);
  /// Like write_async(pointers), with the arguments kept in the returned future, which must stay
  /// alive until the operation ran (e.g. until check_bytes_done()).
  [[nodiscard]] StreamFuture write_async(void* devPtr_base,
                                         std::size_t size,
                                         off_t file_offset   = 0,
                                         off_t devPtr_offset = 0,
                                         CUstream stream     = nullptr);

  /// The cuFile handle (CUfileHandle_t) of this file, or null when it uses POSIX.
  [[nodiscard]] void* handle() const noexcept;

  /// The compatibility mode this file resolved to: ON (POSIX) or OFF (cuFile).
  [[nodiscard]] CompatMode compat_mode() const noexcept;
  /// True when this file does its IO through POSIX rather than cuFile.
  [[nodiscard]] bool is_compat_mode_preferred() const noexcept;
  /// The mode this file was opened with and how it resolved, for synchronous and for
  /// stream-ordered IO (libkvikio's accessor). Throws std::invalid_argument when closed.
  [[nodiscard]] const CompatModeManager& get_compat_mode_manager() const;
  /// True when an O_DIRECT descriptor could be opened for this file.
  [[nodiscard]] bool is_direct_io_supported() const noexcept;

  /// Reads every request of `requests` from this file; see kvikio::pread_batch.
  std::future<std::size_t> pread_batch(const std::vector<IORequest>& requests);
  /// Writes every request of `requests` to this file; see kvikio::pwrite_batch.
  std::future<std::size_t> pwrite_batch(const std::vector<IORequest>& requests);

 private:
  friend const std::shared_ptr<detail::OpenHandle>& detail::open_state(const FileHandle&) noexcept;
  const detail::OpenHandle& checked_open_file() const;
  std::string path_;
  std::shared_ptr<detail::OpenHandle> file_;
};

}  // namespace kvikio

#pragma once
// The descriptors of an open local file, shared by a FileHandle and the tasks it has queued,
// so that closing the handle never pulls a descriptor from under a running task. Host-only:
// which backend moves device memory (cuFile or the bounce buffers) is decided above this.
#include <sys/stat.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace kvikio::detail {

/// Which way a request moves data; the read and write paths share one body and branch on it.
enum class Direction { read, write };

class OpenFile {
 public:
  /// Opens the buffered descriptor (throws GenericSystemError naming the file) and, where
  /// the file system allows, an O_DIRECT one (absent otherwise; direct_io_error() says why).
  /// The O_DIRECT one is opened on first use (fd_direct() or direct_io_error()), so that an
  /// open whose IO all goes through the page cache costs one open(2) and one fstat(2).
  OpenFile(std::string path, const std::string& flags, mode_t mode);
  /// Closes the descriptors, ignoring errors (use close() to see them).
  ~OpenFile() noexcept;
  OpenFile(const OpenFile&)            = delete;
  OpenFile& operator=(const OpenFile&) = delete;

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] int fd() const noexcept { return fd_; }
  [[nodiscard]] int fd_direct() const noexcept
  {
    ensure_direct();
    return fd_direct_;
  }
  [[nodiscard]] bool readable() const noexcept { return readable_; }
  [[nodiscard]] bool writable() const noexcept { return writable_; }
  [[nodiscard]] bool append() const noexcept { return append_; }
  /// A descriptor of this file for buffered reads on the calling thread: an open file
  /// description of the thread's own, opened again through /proc/self/fd on its first call.
  /// Threads reading through one description all update its reference count on every call,
  /// which caps many threads of small cached reads at a fraction of what separate
  /// descriptions reach (H200, 16 threads of 4 KiB: 4.7M reads/s against 15-18M; issue 14).
  /// fd() where that open fails, for a file opened write-only, and once the process holds
  /// many such descriptors (a share of RLIMIT_NOFILE, at most 1024), or when the process
  /// itself uses half of RLIMIT_NOFILE (reliability audit F11). Threads past the 64th share
  /// descriptors. Closed with the file.
  [[nodiscard]] int read_fd_for_thread() const noexcept;
  /// The descriptor for a small read on the calling thread: fd() while one thread reads the
  /// file this way, and each thread's own (read_fd_for_thread) once a second thread has: so
  /// that a file read once (a zarr chunk) or by one thread costs no second open, and threads
  /// sharing a FileHandle for small reads do not share one description.
  [[nodiscard]] int small_read_fd() const noexcept;
  /// Why fd_direct() is -1 (the O_DIRECT open's error), empty when it is open.
  [[nodiscard]] const std::string& direct_io_error() const noexcept
  {
    ensure_direct();
    return direct_io_error_;
  }
  [[nodiscard]] std::size_t nbytes() const;

  /// For a file opened with "a": reserves `size` bytes at the end of the file and returns
  /// where they start; the append counts as in flight until end_append(). Requests issued
  /// through this object concurrently (pwrite futures not yet run, threads calling write) get
  /// disjoint ranges in the order they reserved. While no append is in flight the next one
  /// starts at the file's size as fstat(2) reports it, where O_APPEND would write: after a
  /// truncation or a failed append too (reliability audit F6); while some are, after the
  /// furthest reservation (or the fstat size, when another writer made the file longer).
  /// Appends through other open files or processes are not ordered against these (that would
  /// need O_APPEND, which parallel pieces cannot use). Throws GenericSystemError if fstat fails.
  [[nodiscard]] std::size_t reserve_append(std::size_t size) const;
  /// Ends an append that reserve_append(size) placed at `start`. `failed`: its bytes may not
  /// all be written, and when no append was reserved after it the end moves back to `start`,
  /// so that the next one leaves no hole of zeros. Thread safe; never throws.
  void end_append(std::size_t start, std::size_t size, bool failed) const noexcept;

  /// Closes both descriptors; throws GenericSystemError naming the file when close(2) fails
  /// (a write-back error on NFS, a quota hit), after closing both. Idempotent.
  void close();
  /// fsync(2): waits until the file's data and metadata are on stable storage. Throws
  /// GenericSystemError naming the file.
  void fsync() const;

  /// Throws std::invalid_argument unless the file was opened for reading (Direction::read)
  /// or writing (Direction::write).
  void require(Direction direction) const;

 private:
  // Double-checked rather than std::call_once: GCC gives call_once's helper for a lambda
  // declared here default visibility, so libkvikio.so exported a kvikio::detail symbol.
  void ensure_direct() const noexcept
  {
    if (direct_opened_.load(std::memory_order_acquire)) { return; }
    std::lock_guard lock(direct_mutex_);
    if (!direct_opened_.load(std::memory_order_relaxed)) {
      open_direct();
      direct_opened_.store(true, std::memory_order_release);
    }
  }
  void open_direct() const noexcept;
  /// A new read-only description of fd_ (counted in the process's budget), -1 if refused:
  /// past the budget, or when its number shows the process near its descriptor limit.
  [[nodiscard]] int open_for_thread() const noexcept;
  void close_thread_fds() noexcept;

  std::string path_;
  int fd_{-1};
  int oflags_{0};
  dev_t dev_{};  // of fd_, to check the O_DIRECT descriptor's file
  ino_t ino_{};
  mutable std::atomic<bool> direct_opened_{false};
  mutable std::mutex direct_mutex_;
  mutable int fd_direct_{-1};
  bool readable_{false};
  bool writable_{false};
  bool append_{false};
  // Where the next append goes and how many are in flight ("a" only), under append_mutex_.
  mutable std::mutex append_mutex_;
  mutable std::size_t append_end_{0};
  mutable std::size_t appends_in_flight_{0};
  mutable std::string direct_io_error_;
  // read_fd_for_thread's descriptors by thread slot, allocated on first use: -1 not opened
  // yet, -2 refused (fd_ is used).
  static constexpr std::size_t thread_slots = 64;
  mutable std::atomic<std::atomic<int>*> thread_fds_{nullptr};
  // small_read_fd's memory of who reads: the first thread (its id, 0 before any), and whether
  // another has since.
  mutable std::atomic<std::uintptr_t> first_reader_{0};
  mutable std::atomic<bool> many_readers_{false};
};

/// Test hooks for the O_DIRECT open (reliability audit #13); never set outside tests.
struct OpenFileTestHooks {
  /// Called between the buffered open and the (first-use) O_DIRECT open, with the path.
  void (*between_opens)(const std::string& path){nullptr};
  /// Where the descriptors of this process are listed ("/proc/self/fd/").
  const char* proc_fd_dir{"/proc/self/fd/"};
  /// How many descriptors read_fd_for_thread may hold in the process; 0: the default.
  long thread_fds_allowed{0};
};
inline OpenFileTestHooks open_file_test_hooks;

/// open(2) flags for a mode string ("r", "r+", "w", "w+", "a", "a+", with "b" anywhere).
/// Throws std::invalid_argument naming the flags otherwise.
int open_flags_from_mode(const std::string& flags);

}  // namespace kvikio::detail

#include "core/open_file.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>

namespace kvikio::detail {
namespace {

constexpr int thread_fd_unopened = -1;
constexpr int thread_fd_refused  = -2;

/// The descriptors read_fd_for_thread holds open in this process.
std::atomic<long> thread_fds_held{0};

/// The soft RLIMIT_NOFILE now (it may have been lowered since the last call), 1 << 20 when
/// unlimited or unknown.
long descriptor_limit() noexcept
{
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
    return 1L << 20;
  }
  return static_cast<long>(std::min<rlim_t>(limit.rlim_cur, 1L << 30));
}

/// How many descriptors read_fd_for_thread may hold: a quarter of `limit`, at most 1024.
long thread_fds_allowed(long limit) noexcept
{
  if (open_file_test_hooks.thread_fds_allowed > 0) {
    return open_file_test_hooks.thread_fds_allowed;
  }
  return std::min(limit / 4, 1024L);
}

/// This thread's slot in the files' descriptor tables; threads are numbered as they first ask,
/// and past the table's size they share slots (sharing is correct, only slower).
std::size_t this_thread_slot(std::size_t slots)
{
  static std::atomic<std::size_t> next{0};
  thread_local const std::size_t slot = next.fetch_add(1, std::memory_order_relaxed);
  return slot % slots;
}

}  // namespace

int open_flags_from_mode(const std::string& flags)
{
  auto invalid = [&flags]() {
    return std::invalid_argument("unknown file open flags '" + flags +
                                 "': expected r, r+, w, w+, a or a+ (optionally with b)");
  };
  char kind = 0;
  bool plus = false;
  for (char c : flags) {
    switch (c) {
      case 'r':
      case 'w':
      case 'a':
        if (kind != 0) { throw invalid(); }
        kind = c;
        break;
      case '+':
        if (plus) { throw invalid(); }
        plus = true;
        break;
      case 'b':
        break;
      default:
        throw invalid();
    }
  }
  int access = plus ? O_RDWR : (kind == 'r' ? O_RDONLY : O_WRONLY);
  switch (kind) {
    case 'r':
      return access | O_CLOEXEC;
    case 'w':
      return access | O_CREAT | O_TRUNC | O_CLOEXEC;
    // No O_APPEND: on Linux it makes pwrite ignore the offset, and parallel pieces need theirs.
    case 'a':
      return access | O_CREAT | O_CLOEXEC;
    default:
      throw invalid();
  }
}

OpenFile::OpenFile(std::string path, const std::string& flags, mode_t mode) : path_(std::move(path))
{
  const int oflags = open_flags_from_mode(flags);
  readable_        = (oflags & O_ACCMODE) != O_WRONLY;
  writable_        = (oflags & O_ACCMODE) != O_RDONLY;
  append_          = flags.find('a') != std::string::npos;
  fd_              = ::open(path_.c_str(), oflags, mode);
  if (fd_ < 0) {
    throw GenericSystemError("Unable to open file '" + path_ + "' with flags '" + flags + "'");
  }
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw GenericSystemError(EISDIR, "Unable to open file '" + path_ + "': it is a directory");
  }
  oflags_ = oflags;
  dev_    = st.st_dev;
  ino_    = st.st_ino;
}

// The O_DIRECT descriptor must be the same file as fd_: a second open of the path could reach
// another file if the path was renamed or its symlink swapped meanwhile, and the middle of
// every request would then go to one file and its head and tail to the other. Opening
// /proc/self/fd/<fd> gives a new open file description of the same inode. Without /proc the
// path is opened again and kept only if it is the same inode. It must not truncate again;
// file systems without O_DIRECT (tmpfs) refuse it with EINVAL, leaving Direct IO off.
void OpenFile::open_direct() const noexcept
{
  if (fd_ < 0) { return; }  // closed before any use of it
  if (open_file_test_hooks.between_opens != nullptr) { open_file_test_hooks.between_opens(path_); }
  const int direct_flags = (oflags_ & ~(O_CREAT | O_TRUNC)) | O_DIRECT;
  const std::string proc = open_file_test_hooks.proc_fd_dir + std::to_string(fd_);
  fd_direct_             = ::open(proc.c_str(), direct_flags);
  if (fd_direct_ >= 0) { return; }
  if (errno != ENOENT) {
    direct_io_error_ = std::string("the O_DIRECT open failed: ") + std::strerror(errno);
    return;
  }
  fd_direct_ = ::open(path_.c_str(), direct_flags);
  if (fd_direct_ < 0) {
    direct_io_error_ = std::string("the O_DIRECT open failed: ") + std::strerror(errno);
    return;
  }
  struct stat direct_st {};
  if (::fstat(fd_direct_, &direct_st) != 0 || direct_st.st_dev != dev_ ||
      direct_st.st_ino != ino_) {
    ::close(fd_direct_);
    fd_direct_ = -1;
    direct_io_error_ =
      "the O_DIRECT open of the path reached another file (renamed or replaced "
      "after the first open)";
  }
}

int OpenFile::read_fd_for_thread() const noexcept
{
  if (!readable_ || fd_ < 0) { return fd_; }
  auto* table = thread_fds_.load(std::memory_order_acquire);
  if (table == nullptr) {
    auto* fresh = new (std::nothrow) std::atomic<int>[thread_slots];
    if (fresh == nullptr) { return fd_; }
    for (std::size_t i = 0; i < thread_slots; ++i) {
      fresh[i].store(thread_fd_unopened, std::memory_order_relaxed);
    }
    if (thread_fds_.compare_exchange_strong(table, fresh, std::memory_order_acq_rel)) {
      table = fresh;
    } else {
      delete[] fresh;  // another thread's table won; `table` is it
    }
  }
  auto& entry = table[this_thread_slot(thread_slots)];
  int fd      = entry.load(std::memory_order_acquire);
  if (fd == thread_fd_unopened) {
    const int opened = open_for_thread();
    fd               = opened >= 0 ? opened : thread_fd_refused;
    int seen         = thread_fd_unopened;
    if (!entry.compare_exchange_strong(seen, fd, std::memory_order_acq_rel)) {
      // A thread sharing the slot opened one first: use that one.
      if (opened >= 0) {
        ::close(opened);
        thread_fds_held.fetch_sub(1, std::memory_order_relaxed);
      }
      fd = seen;
    }
  }
  return fd >= 0 ? fd : fd_;
}

int OpenFile::small_read_fd() const noexcept
{
  // Loaded, not written, once settled: the flags stay in every reader's cache.
  if (many_readers_.load(std::memory_order_relaxed)) { return read_fd_for_thread(); }
  thread_local const char this_thread{};
  const auto me = reinterpret_cast<std::uintptr_t>(&this_thread);
  auto first    = first_reader_.load(std::memory_order_relaxed);
  if (first == me ||
      (first == 0 && first_reader_.compare_exchange_strong(first, me, std::memory_order_relaxed))) {
    return fd_;
  }
  many_readers_.store(true, std::memory_order_relaxed);
  return read_fd_for_thread();
}

int OpenFile::open_for_thread() const noexcept
{
  // The limit is read each time (a getrlimit costs far less than the open), so that a
  // setrlimit lowering it is followed.
  const long limit = descriptor_limit();
  if (thread_fds_held.fetch_add(1, std::memory_order_relaxed) >= thread_fds_allowed(limit)) {
    thread_fds_held.fetch_sub(1, std::memory_order_relaxed);
    return -1;
  }
  // Through /proc: the same inode even if the path was renamed or removed meanwhile; without
  // /proc the shared descriptor serves.
  const std::string proc = open_file_test_hooks.proc_fd_dir + std::to_string(fd_);
  int fd                 = ::open(proc.c_str(), O_RDONLY | O_CLOEXEC);
  // The budget counts only these descriptors; the process's own may be many. open(2) takes
  // the lowest free number, so a number past half the limit means at least that many are in
  // use: the rest are left to the process, whose next open must not fail because of ours.
  if (fd >= limit / 2) {
    ::close(fd);
    fd = -1;
  }
  if (fd < 0) { thread_fds_held.fetch_sub(1, std::memory_order_relaxed); }
  return fd;
}

void OpenFile::close_thread_fds() noexcept
{
  auto* table = thread_fds_.load(std::memory_order_acquire);
  if (table == nullptr) { return; }
  for (std::size_t i = 0; i < thread_slots; ++i) {
    const int fd = table[i].exchange(thread_fd_refused, std::memory_order_acq_rel);
    if (fd >= 0) {
      ::close(fd);  // read-only: nothing to write back, nothing its close could report
      thread_fds_held.fetch_sub(1, std::memory_order_relaxed);
    }
  }
}

OpenFile::~OpenFile() noexcept
{
  try {
    close();
  } catch (...) {  // a destructor cannot report it; close() is the checked way
  }
  delete[] thread_fds_.load(std::memory_order_acquire);
}

void OpenFile::close()
{
  // close(2) releases the descriptor even when it fails (Linux), so it is never retried. A
  // closed file never opens its O_DIRECT descriptor afterwards.
  {
    std::lock_guard lock(direct_mutex_);
    direct_opened_.store(true, std::memory_order_release);
  }
  close_thread_fds();
  int err = 0;
  for (int* fd : {&fd_direct_, &fd_}) {
    if (*fd >= 0 && ::close(*fd) != 0 && err == 0) { err = errno; }
    *fd = -1;
  }
  if (err != 0) { throw GenericSystemError(err, "cannot close '" + path_ + "'"); }
}

void OpenFile::fsync() const
{
  // fsync applies to the file, not to the descriptor: one call covers the data written
  // through the O_DIRECT descriptor too, and flushes the device's cache for both.
  if (fd_ < 0) { throw GenericSystemError(EBADF, "cannot fsync '" + path_ + "': it is closed"); }
  if (::fsync(fd_) != 0) { throw GenericSystemError("cannot fsync '" + path_ + "'"); }
}

std::size_t OpenFile::nbytes() const
{
  struct stat st {};
  if (::fstat(fd_, &st) != 0) { throw GenericSystemError("cannot stat '" + path_ + "'"); }
  return static_cast<std::size_t>(st.st_size);
}

std::size_t OpenFile::reserve_append(std::size_t size) const
{
  std::lock_guard lock(append_mutex_);
  // With none in flight, every append reserved before has ended, and its bytes (or, if it
  // failed, their absence) are in the size fstat reports, as is a truncation since.
  const std::size_t on_disk = nbytes();
  const std::size_t start   = appends_in_flight_ == 0 ? on_disk : std::max(append_end_, on_disk);
  append_end_               = start + size;
  ++appends_in_flight_;
  return start;
}

void OpenFile::end_append(std::size_t start, std::size_t size, bool failed) const noexcept
{
  std::lock_guard lock(append_mutex_);
  --appends_in_flight_;
  if (failed && append_end_ == start + size) { append_end_ = start; }
}

void OpenFile::require(Direction direction) const
{
  if (direction == Direction::read && !readable_) {
    throw std::invalid_argument("cannot read from '" + path_ +
                                "': it was opened write-only (Operation not permitted)");
  }
  if (direction == Direction::write && !writable_) {
    throw std::invalid_argument("cannot write to '" + path_ +
                                "': it was opened read-only (Operation not permitted)");
  }
}

}  // namespace kvikio::detail

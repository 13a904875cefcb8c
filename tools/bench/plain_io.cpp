// The plain parallel pread/pwrite loop: the limit of local-file benchmarks.
#include "plain_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include <kvikio/error.hpp>

namespace kvikio::bench {

void plain_parallel_io(bool write, int fd, char* buf, const PlainIoShape& shape)
{
  if (shape.task_size == 0 || shape.threads == 0) {
    throw std::invalid_argument("plain parallel loop: threads and task_size must be positive");
  }
  const std::size_t pieces_per_copy = (shape.size + shape.task_size - 1) / shape.task_size;
  const std::size_t pieces          = pieces_per_copy * shape.copies;
  std::atomic<std::size_t> next{0};
  std::atomic<int> error{0};
  auto worker = [&] {
    while (error == 0) {
      const std::size_t piece = next.fetch_add(1);
      if (piece >= pieces) { return; }
      const std::size_t begin = (piece % pieces_per_copy) * shape.task_size;
      const std::size_t end   = std::min(shape.size, begin + shape.task_size);
      for (std::size_t pos = begin; pos < end;) {
        const ssize_t n = write ? ::pwrite(fd, buf + pos, end - pos, static_cast<off_t>(pos))
                                : ::pread(fd, buf + pos, end - pos, static_cast<off_t>(pos));
        if (n <= 0) {
          if (n < 0 && errno == EINTR) { continue; }
          // A read that ends early hit the end of the file: no errno to report.
          error = n < 0 ? errno : EIO;
          return;
        }
        pos += static_cast<std::size_t>(n);
      }
    }
  };
  std::vector<std::thread> pool;
  const auto nthreads = std::min<std::size_t>(shape.threads, std::max<std::size_t>(pieces, 1));
  pool.reserve(nthreads);
  for (std::size_t i = 0; i < nthreads; ++i) {
    pool.emplace_back(worker);
  }
  for (auto& t : pool) {
    t.join();
  }
  if (error != 0) {
    throw GenericSystemError(error,
                             std::string("plain parallel ") + (write ? "pwrite" : "pread") +
                               " loop on fd " + std::to_string(fd) + " failed");
  }
}

void plain_parallel_io(
  bool write, const std::string& path, int open_flags, char* buf, const PlainIoShape& shape)
{
  const int fd = ::open(path.c_str(), (write ? O_WRONLY : O_RDONLY) | open_flags);
  if (fd < 0) { throw GenericSystemError("plain parallel loop: cannot open " + path); }
  try {
    plain_parallel_io(write, fd, buf, shape);
  } catch (const std::system_error& e) {
    ::close(fd);
    throw GenericSystemError(e.code().value(),
                             std::string("plain parallel ") + (write ? "pwrite" : "pread") +
                               " loop on " + path + " failed");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

void plain_random_io(bool write,
                     int fd,
                     char* buf,
                     const std::vector<std::size_t>& offsets,
                     std::size_t io_size,
                     unsigned threads)
{
  if (threads == 0) { throw std::invalid_argument("plain random loop: threads must be positive"); }
  std::atomic<std::size_t> next{0};
  std::atomic<int> error{0};
  auto worker = [&] {
    while (error == 0) {
      const std::size_t i = next.fetch_add(1);
      if (i >= offsets.size()) { return; }
      char* p = buf + i * io_size;
      for (std::size_t done = 0; done < io_size;) {
        const auto off  = static_cast<off_t>(offsets[i] + done);
        const ssize_t n = write ? ::pwrite(fd, p + done, io_size - done, off)
                                : ::pread(fd, p + done, io_size - done, off);
        if (n <= 0) {
          if (n < 0 && errno == EINTR) { continue; }
          error = n < 0 ? errno : EIO;
          return;
        }
        done += static_cast<std::size_t>(n);
      }
    }
  };
  if (threads == 1) {
    worker();  // no thread start in the single-call limit
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back(worker);
    }
    for (auto& t : pool) {
      t.join();
    }
  }
  if (error != 0) {
    throw GenericSystemError(error,
                             std::string("plain random ") + (write ? "pwrite" : "pread") +
                               " loop on fd " + std::to_string(fd) + " failed");
  }
}

}  // namespace kvikio::bench

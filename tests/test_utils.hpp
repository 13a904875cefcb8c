#pragma once
// Helpers shared by the test binaries: temporary directories and random contents.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <future>
#include <string>
#include <vector>

#include <kvikio/defaults.hpp>

namespace kvikio::test {

/// A fresh directory under the build tree (not /tmp: tmpfs has no O_DIRECT), removed at exit.
class TempDir {
 public:
  TempDir()
  {
    auto base        = std::filesystem::current_path() / "kvikio-test-XXXXXX";
    std::string tmpl = base.string();
    if (::mkdtemp(tmpl.data()) == nullptr) { throw std::runtime_error("mkdtemp failed"); }
    path_ = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

/// `n` random bytes; the seed makes failures reproducible.
inline std::vector<char> random_bytes(std::size_t n, std::uint64_t seed = 42)
{
  std::vector<char> out(n);
  std::mt19937_64 rng(seed);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    auto v = rng();
    std::memcpy(out.data() + i, &v, 8);
  }
  for (; i < n; ++i) {
    out[i] = static_cast<char>(rng());
  }
  return out;
}

inline void write_file(const std::string& path, const std::vector<char>& data)
{
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
}

inline std::vector<char> read_file(const std::string& path)
{
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// The descriptors this process holds on the file at `path`, matched by inode (io_uring rings
/// and other descriptors the library opens do not count); 0 if `path` does not exist.
inline std::size_t descriptors_of(const std::string& path)
{
  struct stat want {};
  if (::stat(path.c_str(), &want) != 0) { return 0; }
  std::size_t n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    struct stat st {};
    const int fd = std::stoi(entry.path().filename().string());
    if (::fstat(fd, &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino) { ++n; }
  }
  return n;
}

/// Sets settings for one scope and restores them after.
class ScopedSettings {
 public:
  ScopedSettings()
    : threads_(defaults::num_threads()),
      task_size_(defaults::task_size()),
      direct_read_(defaults::auto_direct_io_read()),
      direct_write_(defaults::auto_direct_io_write()),
      overread_(defaults::auto_direct_io_read_overread()),
      bounce_(defaults::bounce_buffer_size())
  {
  }
  ~ScopedSettings()
  {
    defaults::set_num_threads(threads_);
    defaults::set_task_size(task_size_);
    defaults::set_auto_direct_io_read(direct_read_);
    defaults::set_auto_direct_io_write(direct_write_);
    defaults::set_auto_direct_io_read_overread(overread_);
    defaults::set_bounce_buffer_size(bounce_);
  }

 private:
  unsigned int threads_;
  std::size_t task_size_;
  bool direct_read_, direct_write_, overread_;
  std::size_t bounce_;
};

/// Expects `stmt` to throw `E` with a message containing `needle`.
#define KVIKIO_EXPECT_THROW_WITH(stmt, E, needle)                                \
  do {                                                                           \
    try {                                                                        \
      stmt;                                                                      \
      ADD_FAILURE() << "expected " #E " from " #stmt;                            \
    } catch (const E& e) {                                                       \
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)           \
        << "message '" << e.what() << "' does not contain '" << (needle) << "'"; \
    }                                                                            \
  } while (0)

/// Occupies the only thread of the pool until released, so that work queued meanwhile is
/// certainly still waiting when the test closes the handle it came from.
class PoolGate {
 public:
  PoolGate()
  {
    kvikio::defaults::set_num_threads(1);
    done_ = kvikio::defaults::thread_pool().submit_task([this] { open_.get_future().wait(); });
  }
  ~PoolGate() { release(); }
  void release()
  {
    if (!released_) {
      released_ = true;
      open_.set_value();
      done_.get();
    }
  }

 private:
  std::promise<void> open_;
  std::future<void> done_;
  bool released_{false};
};

}  // namespace kvikio::test

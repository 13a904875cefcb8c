// Host-memory IO through the names upstream's basic_no_cuda example uses: defaults, the
// driver properties when compat mode is off, is_host_memory, FileHandle pwrite/pread futures.
// The kvikio headers are exactly upstream's example's (issue 24): is_host_memory must be
// visible through them, as upstream's headers make it visible.
// std::vector, std::future and std::string come through the kvikio headers, as upstream's.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <numeric>

#include <kvikio/batch.hpp>
#include <kvikio/buffer.hpp>
#include <kvikio/cufile/driver.hpp>
#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/file_handle.hpp>

namespace {
void require(bool ok, const char* what)
{
  if (!ok) {
    std::cerr << "FAILED: " << what << '\n';
    std::exit(1);
  }
}
}  // namespace

int main()
{
  constexpr int count = 4096;
  constexpr int bytes = count * static_cast<int>(sizeof(int));
  if (!kvikio::defaults::is_compat_mode_preferred()) {
    kvikio::DriverInitializer init;
    kvikio::DriverProperties props;
    std::cout << "nvfs " << props.get_nvfs_major_version() << "." << props.get_nvfs_minor_version()
              << ", compat allowed " << props.get_nvfs_allow_compat_mode() << ", poll "
              << props.get_nvfs_poll_mode() << " above " << props.get_nvfs_poll_thresh_size()
              << " KiB, max pinned " << props.get_max_pinned_memory_size()
              << " KiB, max batch IO size " << props.get_max_batch_io_size() << '\n';
  }
  std::vector<int> src(count);
  std::iota(src.begin(), src.end(), 7);
  std::vector<int> dst1(count);
  std::vector<int> dst2(count);
  require(kvikio::is_host_memory(src.data()), "is_host_memory");
  const std::string base =
    std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/kvikio-compat-no-cuda-";
  {
    kvikio::FileHandle one(base + "1", "w");
    kvikio::FileHandle two(base + "2", "w");
    std::future<std::size_t> f1 = one.pwrite(src.data(), bytes);
    std::future<std::size_t> f2 = two.pwrite(src.data(), bytes);
    require(f1.get() + f2.get() == 2U * bytes, "pwrite sizes");
    require(one.nbytes() == bytes && two.nbytes() == bytes, "nbytes after write");
  }
  {
    kvikio::FileHandle one(base + "1", "r");
    kvikio::FileHandle two(base + "2", "r");
    std::future<std::size_t> f1 = one.pread(dst1.data(), bytes);
    std::future<std::size_t> f2 = two.pread(dst2.data(), bytes);
    require(f1.get() + f2.get() == 2U * bytes, "pread sizes");
    require(dst1 == src && dst2 == src, "data read back");
    std::cout << "POSIX read with " << kvikio::defaults::thread_pool_nthreads() << " threads: OK\n";
  }
  std::remove((base + "1").c_str());
  std::remove((base + "2").c_str());
  return 0;
}

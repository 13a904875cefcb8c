// Device-memory IO through the names upstream's basic_io example uses, with the CUDA runtime
// allocating and copying: driver properties, is_host_memory on pinned/pageable/device memory,
// pwrite/pread with and without task_size, a resized pool, buffer registration, POSIX host
// IO, the batch API (where cuFile's batch and stream APIs are usable and cuFile is preferred),
// and stream-ordered IO by pointer and by value (StreamFuture).
// The kvikio headers are exactly upstream's example's (issue 24): every other name it uses
// (is_host_memory, is_batch_api_available, StreamFuture, CUstream, ...) must be visible
// through them, as upstream's headers make it visible.
// std::vector and std::string come through the kvikio headers, as upstream's.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <cuda_runtime_api.h>

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

constexpr int kCount          = 1024;
constexpr std::size_t kNbytes = kCount * sizeof(int);

}  // namespace

int main()
{
  require(cudaSetDevice(0) == cudaSuccess, "cudaSetDevice");
  if (!kvikio::defaults::is_compat_mode_preferred()) {
    kvikio::DriverInitializer init;
    kvikio::DriverProperties props;
    std::cout << "nvfs " << props.get_nvfs_major_version() << "." << props.get_nvfs_minor_version()
              << ", compat allowed " << props.get_nvfs_allow_compat_mode() << ", poll "
              << props.get_nvfs_poll_mode() << " above " << props.get_nvfs_poll_thresh_size()
              << " KiB, pinned " << props.get_max_pinned_memory_size() << " KiB, batch "
              << props.get_max_batch_io_size() << '\n';
  }
  int* pinned = nullptr;
  require(
    cudaHostAlloc(reinterpret_cast<void**>(&pinned), kNbytes, cudaHostAllocDefault) == cudaSuccess,
    "cudaHostAlloc");
  for (int i = 0; i < kCount; ++i) {
    pinned[i] = 3 * i + 1;
  }
  std::vector<int> host(kCount);
  void* a_dev = nullptr;
  void* b_dev = nullptr;
  void* c_dev = nullptr;
  require(cudaMalloc(&a_dev, kNbytes) == cudaSuccess, "cudaMalloc a");
  require(cudaMalloc(&b_dev, kNbytes) == cudaSuccess, "cudaMalloc b");
  require(cudaMalloc(&c_dev, kNbytes) == cudaSuccess, "cudaMalloc c");
  require(kvikio::is_host_memory(pinned) && kvikio::is_host_memory(host.data()), "host memory");
  require(!kvikio::is_host_memory(a_dev) && !kvikio::is_host_memory(c_dev), "device memory");

  const std::string path =
    std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/kvikio-compat-basic-io";
  auto device_matches = [&](void* dev) {
    std::fill(host.begin(), host.end(), 0);
    require(cudaMemcpy(host.data(), dev, kNbytes, cudaMemcpyDeviceToHost) == cudaSuccess,
            "cudaMemcpy to host");
    for (int i = 0; i < kCount; ++i) {
      if (host[i] != pinned[i]) { return false; }
    }
    return true;
  };
  require(cudaMemcpy(a_dev, pinned, kNbytes, cudaMemcpyHostToDevice) == cudaSuccess, "cudaMemcpy");
  {
    kvikio::FileHandle f(path, "w");
    require(f.pwrite(a_dev, kNbytes, 0, 1).get() == kNbytes && f.nbytes() == kNbytes, "pwrite");
  }
  {
    kvikio::FileHandle f(path, "r");
    require(f.pread(b_dev, kNbytes, 0, 1).get() == kNbytes, "pread");
    require(device_matches(b_dev), "pread data");
  }
  kvikio::defaults::set_thread_pool_nthreads(16);
  {
    kvikio::FileHandle f(path, "w");
    require(f.pwrite(a_dev, kNbytes).get() == kNbytes, "parallel pwrite");
  }
  {
    kvikio::FileHandle f(path, "r");
    require(f.pread(b_dev, kNbytes, 0).get() == kNbytes, "parallel pread");
    require(device_matches(b_dev), "parallel pread data");
    std::cout << "parallel IO with " << kvikio::defaults::thread_pool_nthreads() << " threads\n";
  }
  {
    kvikio::FileHandle f(path, "r+", kvikio::FileHandle::m644);
    kvikio::buffer_register(c_dev, kNbytes);
    require(f.pread(c_dev, kNbytes).get() == kNbytes, "registered pread");
    kvikio::buffer_deregister(c_dev);
    require(device_matches(c_dev), "registered pread data");
  }
  {
    kvikio::FileHandle f(path, "w");
    require(f.pwrite(pinned, kNbytes).get() == kNbytes, "host pwrite");
  }
  {
    kvikio::FileHandle f(path, "r");
    std::vector<int> back(kCount);
    require(f.pread(back.data(), kNbytes).get() == kNbytes, "host pread");
    for (int i = 0; i < kCount; ++i) {
      require(back[i] == pinned[i], "host pread data");
    }
  }
  if (kvikio::is_batch_api_available() && kvikio::is_stream_api_available() &&
      !kvikio::defaults::is_compat_mode_preferred()) {
    constexpr int ops_in_batch = 4;
    constexpr auto piece       = static_cast<off_t>(kNbytes / ops_in_batch);
    kvikio::DriverProperties props;
    require(ops_in_batch < static_cast<int>(props.get_max_batch_io_size()), "batch size");
    kvikio::FileHandle f(path, "r");
    kvikio::BatchHandle batch(ops_in_batch);
    std::vector<kvikio::BatchOp> ops;
    for (int i = 0; i < ops_in_batch; ++i) {
      ops.push_back(kvikio::BatchOp{.file_handle   = f,
                                    .devPtr_base   = b_dev,
                                    .file_offset   = i * piece,
                                    .devPtr_offset = i * piece,
                                    .size          = static_cast<std::size_t>(piece),
                                    .opcode        = CUFILE_READ});
    }
    batch.submit(ops);
    auto statuses = batch.status(ops_in_batch, ops_in_batch);
    require(statuses.size() == ops_in_batch, "batch statuses");
    for (const auto& s : statuses) {
      require(s.status == CUFILE_COMPLETE && s.ret == static_cast<std::size_t>(piece), "batch op");
    }
    require(device_matches(b_dev), "batch data");
    batch.submit(ops);
    batch.cancel();
    require(batch.status(ops_in_batch, ops_in_batch).empty(), "batch canceled");
  } else {
    std::cout << "batch API skipped (not available, or POSIX preferred)\n";
  }
  {
    std::size_t io_size = kNbytes;
    off_t file_offset   = 0;
    off_t dev_offset    = 0;
    ssize_t* bytes_done = nullptr;
    require(
      cudaHostAlloc(reinterpret_cast<void**>(&bytes_done), sizeof(ssize_t), cudaHostAllocDefault) ==
        cudaSuccess,
      "cudaHostAlloc bytes_done");
    *bytes_done = 0;
    CUstream stream{};  // cuda.h's name, as upstream's example has it
    require(cudaStreamCreate(&stream) == cudaSuccess, "cudaStreamCreate");
    kvikio::FileHandle f(path, "w+");
    require(cudaMemcpyAsync(a_dev, pinned, kNbytes, cudaMemcpyHostToDevice, stream) == cudaSuccess,
            "cudaMemcpyAsync");
    f.write_async(a_dev, &io_size, &file_offset, &dev_offset, bytes_done, stream);
    require(cudaStreamSynchronize(stream) == cudaSuccess, "sync after write_async");
    KVIKIO_CUFILE_CHECK_BYTES_DONE(*bytes_done);
    require(*bytes_done == static_cast<ssize_t>(kNbytes), "write_async bytes");
    *bytes_done = 0;
    f.read_async(c_dev, &io_size, &file_offset, &dev_offset, bytes_done, stream);
    require(cudaStreamSynchronize(stream) == cudaSuccess, "sync after read_async");
    KVIKIO_CUFILE_CHECK_BYTES_DONE(*bytes_done);
    require(*bytes_done == static_cast<ssize_t>(kNbytes), "read_async bytes");
    require(device_matches(c_dev), "read_async data");
    require(cudaFreeHost(bytes_done) == cudaSuccess, "cudaFreeHost");

    // By value: the StreamFuture synchronizes the stream when asked, or when destroyed.
    kvikio::StreamFuture res = f.write_async(a_dev, kNbytes, 0, 0, stream);
    require(res.check_bytes_done() == kNbytes, "StreamFuture write");
    res = f.read_async(b_dev, kNbytes, 0, 0, stream);
    require(res.check_bytes_done() == kNbytes, "StreamFuture read");
    require(device_matches(b_dev), "StreamFuture read data");
    require(cudaStreamDestroy(stream) == cudaSuccess, "cudaStreamDestroy");
  }
  cudaFree(a_dev);
  cudaFree(b_dev);
  cudaFree(c_dev);
  cudaFreeHost(pinned);
  std::remove(path.c_str());
  std::cout << "basic IO: OK\n";
  return 0;
}

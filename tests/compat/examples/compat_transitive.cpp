// Issue 24: code written for upstream libkvikio relies on what each of its headers makes
// visible through its own includes (upstream's file_handle.hpp reaches utils.hpp, buffer.hpp,
// file_utils.hpp, ...). Each object built from this file includes ONE of our headers, chosen
// by COMPAT_ONLY_<HEADER>, and names what upstream's header of the same name makes visible.
// Compile-only: the functions are never called.
#include <string>

#if defined(COMPAT_ONLY_FILE_HANDLE)
#include <kvikio/file_handle.hpp>
// buffer.hpp, compat_mode.hpp, cufile/config.hpp, defaults.hpp, error.hpp, file_utils.hpp,
// shim/cufile.hpp (ours: shim.hpp), shim/cufile_h_wrapper.hpp, stream.hpp, utils.hpp.
[[maybe_unused]] static void compat_names(void* p, CUstream stream)
{
  kvikio::buffer_register(p, 1);
  kvikio::memory_deregister(p);
  (void)kvikio::CompatMode::AUTO;
  (void)kvikio::config_path();
  (void)kvikio::defaults::task_size();
  (void)kvikio::GenericSystemError(0, "");
  kvikio::FileWrapper wrapper;
  (void)kvikio::get_page_cache_info(std::string("f"));
  (void)kvikio::is_cufile_available();
  (void)kvikio::is_batch_api_available();
  (void)kvikio::is_stream_api_available();
  CUfileOpcode_t op = CUFILE_READ;
  (void)op;
  kvikio::StreamFuture future;
  (void)stream;
  (void)kvikio::is_host_memory(p);
  CUcontext ctx = kvikio::get_context_from_pointer(p);
  kvikio::PushAndPopContext push(ctx);
  (void)kvikio::make_ready_future(std::size_t{1}).get();
}
#elif defined(COMPAT_ONLY_DEFAULTS)
#include <kvikio/defaults.hpp>
// compat_mode.hpp, shim/cufile.hpp (ours: shim.hpp), the thread pool; error.hpp's macros.
[[maybe_unused]] static void compat_names()
{
  (void)kvikio::defaults::is_compat_mode_preferred(kvikio::CompatMode::ON);
  (void)kvikio::is_cufile_available();
  (void)kvikio::defaults::thread_pool().get_thread_count();
  KVIKIO_EXPECT(true, "never", std::invalid_argument);
}
#elif defined(COMPAT_ONLY_BATCH)
#include <kvikio/batch.hpp>
// error.hpp, file_handle.hpp (and what it makes visible), shim/cufile.hpp.
[[maybe_unused]] static void compat_names(kvikio::FileHandle& f, void* p)
{
  kvikio::BatchOp op{f, p, 0, 0, 1, CUFILE_READ};
  (void)op;
  (void)kvikio::is_batch_api_available();
  (void)kvikio::is_host_memory(p);
  (void)kvikio::CUfileException("never");
}
#elif defined(COMPAT_ONLY_DRIVER)
#include <kvikio/cufile/driver.hpp>
// shim/cufile.hpp (ours: shim.hpp) and shim/cufile_h_wrapper.hpp.
[[maybe_unused]] static void compat_names()
{
  kvikio::DriverProperties props;
  (void)props.get_nvfs_poll_mode();
  (void)kvikio::is_cufile_available();
  (void)kvikio::cufile_version();
  CUfileError_t status{};
  (void)status;
}
#elif defined(COMPAT_ONLY_BOUNCE_BUFFER)
#include <kvikio/bounce_buffer.hpp>
// defaults.hpp.
[[maybe_unused]] static void compat_names()
{
  (void)kvikio::bounce_buffer_free();
  (void)kvikio::defaults::bounce_buffer_size();
}
#elif defined(COMPAT_ONLY_REMOTE_HANDLE)
#include <kvikio/remote_handle.hpp>
// defaults.hpp, error.hpp, utils.hpp.
[[maybe_unused]] static void compat_names(void* p)
{
  (void)kvikio::defaults::http_max_attempts();
  (void)kvikio::is_host_memory(p);
  (void)kvikio::make_ready_future(std::size_t{1});
  (void)kvikio::GenericSystemError(0, "");
}
#elif defined(COMPAT_ONLY_MMAP)
#include <kvikio/mmap.hpp>
// defaults.hpp, file_handle.hpp (and what it makes visible).
[[maybe_unused]] static void compat_names(void* p)
{
  kvikio::MmapHandle m;
  (void)kvikio::FileHandle::m644;
  (void)kvikio::is_host_memory(p);
  kvikio::FileWrapper wrapper;
}
#else
#error "define one COMPAT_ONLY_<HEADER>"
#endif

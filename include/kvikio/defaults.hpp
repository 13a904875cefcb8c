#pragma once
/// @file defaults.hpp
/// Process-wide settings. Each starts from its environment variable, or its default when the
/// variable is unset, the first time any setting is read. All getters and setters are thread
/// safe. A bad value, from the environment or a setter, throws std::invalid_argument naming
/// the setting and the value. One table in the library describes every setting; it drives
/// the environment, the typed setters below, list() and the name-keyed get/set.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

#include <kvikio/export.hpp>
// At least what upstream's header of this name makes visible: code written for it relies on it.
#include <kvikio/compat_mode.hpp>
#include <kvikio/error.hpp>
#include <kvikio/shim.hpp>
#include <kvikio/threadpool.hpp>

namespace kvikio {

/// Where a setting's current value came from (shown by `kvikio info`).
enum class SettingSource { DEFAULT, ENVIRONMENT, SET };

/// How remote reads (RemoteHandle::pread, RemoteHandle::pread_batch) run their range requests.
enum class RemoteIOBackend : std::uint8_t {
  /// Each range request on a thread of the pool, blocking in curl_easy_perform: as many
  /// requests in flight as the pool has threads.
  EASY_THREADPOOL,
  /// Range requests into host memory go to reactor threads, each driving many transfers at
  /// once with one libcurl multi handle (curl_multi_poll), up to
  /// remote_io_max_concurrent_requests in flight. Reads into device memory stay on the pool.
  MULTI_POLL,
};

/// How MULTI_POLL spreads one call's range requests over the reactors.
enum class RemoteReactorDispatch : std::uint8_t {
  /// Each range request to the next reactor in turn.
  PER_CHUNK,
  /// Every range request of one pread (or pread_batch) call to the same reactor.
  PER_PREAD,
};

/// One setting, for listing: its name (the Python `defaults` key), environment variable,
/// current value as text, and source.
struct KVIKIO_EXPORT SettingInfo {
  /// The setting's name (the key of kvikio.defaults in Python).
  std::string name;
  /// Its environment variable.
  std::string env_var;
  /// Its current value, as text.
  std::string value;
  /// Where the value came from: the default, the environment, or a setter.
  SettingSource source;
};

/// A setting's value in name-keyed access (defaults::get/set): CompatMode for compat_mode,
/// bool for the flags, std::int64_t for the numbers, a list for http_status_codes. A string
/// is accepted where the value is a name (compat_mode: "ON", "off", "auto", ...).
using SettingValue =
  std::variant<bool, std::int64_t, CompatMode, std::vector<std::int64_t>, std::string>;

/// Thrown by defaults::get/set for a name that is no setting; the message names it and lists
/// the known ones. (The Python binding raises KeyError for it.)
class KVIKIO_EXPORT UnknownSettingError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

/// The value of environment variable `env_var_name` read as a T (operator>>), or
/// `default_val` when it is unset. Throws std::invalid_argument naming the variable and value
/// when it does not parse. (libkvikio's helper; the settings below use their own table.)
template <typename T>
T getenv_or(std::string_view env_var_name, T default_val)
{
  const std::string name{env_var_name};
  const char* env_val = std::getenv(name.c_str());
  if (env_val == nullptr) { return default_val; }
  std::stringstream sstream(env_val);
  T converted_val;
  sstream >> converted_val;
  if constexpr (!std::is_same_v<T, std::string>) {
    KVIKIO_EXPECT(!sstream.fail(),
                  "unknown config value " + name + "=" + std::string{env_val},
                  std::invalid_argument);
  }
  return converted_val;
}

/// A flag: an integer (non-zero is true) or true/on/yes/false/off/no, any case.
template <>
KVIKIO_EXPORT bool getenv_or(std::string_view env_var_name, bool default_val);
/// A compatibility mode, as KVIKIO_COMPAT_MODE takes it.
template <>
KVIKIO_EXPORT CompatMode getenv_or(std::string_view env_var_name, CompatMode default_val);
/// A comma-separated list of integers; an empty value gives `default_val`.
template <>
KVIKIO_EXPORT std::vector<int> getenv_or(std::string_view env_var_name,
                                         std::vector<int> default_val);

/// The first of several names (aliases) that is set: (name, value, true), or ("",
/// `default_val`, false) when none is. Throws std::invalid_argument when `env_var_names` is
/// empty or two of them are set to different values.
template <typename T>
std::tuple<std::string_view, T, bool> getenv_or(
  std::initializer_list<std::string_view> env_var_names, T default_val)
{
  KVIKIO_EXPECT(env_var_names.size() > 0,
                "`env_var_names` must contain at least one environment variable name.",
                std::invalid_argument);
  std::string_view found_name;
  std::string found_value;
  for (const auto& env_var_name : env_var_names) {
    const char* env_val = std::getenv(std::string{env_var_name}.c_str());
    if (env_val == nullptr) { continue; }
    KVIKIO_EXPECT(found_name.empty() || found_value == env_val,
                  "Environment variable " + std::string{env_var_name} + " (" + env_val +
                    ") has already been set by its alias " + std::string{found_name} + " (" +
                    found_value + ") with a different value.",
                  std::invalid_argument);
    found_name  = env_var_name;
    found_value = env_val;
  }
  if (found_name.empty()) { return {found_name, default_val, false}; }
  return {found_name, getenv_or<T>(found_name, default_val), true};
}

/// The process-wide settings: each starts from its environment variable or its default and can be
/// changed at run time (thread safe). A bad value, from the environment or a setter, throws
/// std::invalid_argument naming the setting.
class KVIKIO_EXPORT defaults {
 public:
  /// KVIKIO_COMPAT_MODE, default AUTO: ON = POSIX IO only, OFF = cuFile only, AUTO = cuFile
  /// where GPUDirect Storage really works, else POSIX. A change affects files opened afterwards.
  static CompatMode compat_mode();
  /// Sets compat_mode(); files opened afterwards use it.
  static void set_compat_mode(CompatMode mode);
  /// True when files opened now use POSIX IO: the mode is ON, or AUTO and GPUDirect Storage
  /// does not really work here. AUTO takes cuFile only where libcufile loads, its driver
  /// opens and nvidia-fs is present; without nvidia-fs libcufile would only run its own
  /// (slow) compatibility mode, so AUTO takes the POSIX path. Decided once per process.
  static bool is_compat_mode_preferred();
  /// Resolves `mode` as a file opened now would: AUTO becomes ON or OFF.
  static bool is_compat_mode_preferred(CompatMode mode);
  /// `compat_mode` with AUTO resolved as a file opened now would (ON or OFF).
  static CompatMode infer_compat_mode_if_auto(CompatMode compat_mode) noexcept
  {
    if (compat_mode != CompatMode::AUTO) { return compat_mode; }
    return is_compat_mode_preferred(compat_mode) ? CompatMode::ON : CompatMode::OFF;
  }

  /// KVIKIO_NTHREADS, default 1: threads of the shared IO pool. Setting it resizes the pool
  /// (waiting for queued work first). Zero is rejected.
  static unsigned int num_threads();
  /// Sets num_threads(), resizing the pool. Throws std::invalid_argument for 0.
  static void set_num_threads(unsigned int n);
  /// libkvikio's names for num_threads.
  static unsigned int thread_pool_nthreads() { return num_threads(); }
  /// Sets num_threads() (libkvikio's name).
  static void set_thread_pool_nthreads(unsigned int n) { set_num_threads(n); }
  /// The shared pool that pread/pwrite run their tasks on.
  static ThreadPool& thread_pool();
  /// KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE (default off): a FileHandle opened while this is on
  /// runs its pread/pwrite tasks on a pool of its own block device (a partition counts as its
  /// disk, an NVMe namespace as its controller; a file system without a block device, such
  /// as tmpfs, as one device), so that files on different disks do not queue behind each
  /// other. Each pool has num_threads threads, is created on first use and follows later
  /// changes of num_threads. A pool passed to pread/pwrite explicitly still wins.
  static bool thread_pool_per_block_device();
  /// Sets thread_pool_per_block_device(), for files opened afterwards.
  static void set_thread_pool_per_block_device(bool flag);

  /// KVIKIO_TASK_SIZE, default 4 MiB: the largest piece of a parallel request. Zero rejected.
  static std::size_t task_size();
  /// Sets task_size(). Throws std::invalid_argument for 0.
  static void set_task_size(std::size_t nbytes);

  /// KVIKIO_GDS_THRESHOLD, default 16 KiB: device requests smaller than this use POSIX.
  static std::size_t gds_threshold();
  /// Sets gds_threshold().
  static void set_gds_threshold(std::size_t nbytes);

  /// KVIKIO_BOUNCE_BUFFER_SIZE, default 16 MiB: size of each pooled bounce buffer. Zero rejected.
  static std::size_t bounce_buffer_size();
  /// Sets bounce_buffer_size(). Throws std::invalid_argument for 0.
  static void set_bounce_buffer_size(std::size_t nbytes);

  /// KVIKIO_AUTO_DIRECT_IO_READ (default off) / KVIKIO_AUTO_DIRECT_IO_WRITE (default on):
  /// use O_DIRECT for the aligned part of requests where the file system supports it.
  static bool auto_direct_io_read();
  /// Sets auto_direct_io_read().
  static void set_auto_direct_io_read(bool flag);
  /// KVIKIO_AUTO_DIRECT_IO_WRITE (default on): use O_DIRECT for the aligned part of writes where
  /// the file system supports it.
  static bool auto_direct_io_write();
  /// Sets auto_direct_io_write().
  static void set_auto_direct_io_write(bool flag);
  /// KVIKIO_AUTO_DIRECT_IO_READ_OVERREAD (default off): with auto_direct_io_read, a read
  /// also takes its unaligned head and tail through O_DIRECT, reading the whole pages around
  /// the requested range into a bounce buffer (so no part of it goes through the page cache).
  static bool auto_direct_io_read_overread();
  /// Sets auto_direct_io_read_overread().
  static void set_auto_direct_io_read_overread(bool flag);

  /// KVIKIO_HTTP_MAX_ATTEMPTS, default 3: tries per remote request (at least 1).
  static std::size_t http_max_attempts();
  /// Sets http_max_attempts(). Throws std::invalid_argument for 0.
  static void set_http_max_attempts(std::size_t attempts);
  /// KVIKIO_HTTP_STATUS_CODES, default 429,500,502,503,504: statuses that are retried.
  static std::vector<int> http_status_codes();
  /// Sets http_status_codes(). Throws std::invalid_argument for a code outside the accepted range.
  static void set_http_status_codes(std::vector<int> codes);
  /// KVIKIO_HTTP_TIMEOUT, default 60: seconds before a remote request times out (> 0).
  static long http_timeout();
  /// Sets http_timeout(). Throws std::invalid_argument unless positive.
  static void set_http_timeout(long seconds);
  /// KVIKIO_REMOTE_VERBOSE (default off): libcurl prints each remote request's protocol
  /// exchange to stderr (CURLOPT_VERBOSE). Credentials appear in it: for debugging only.
  static bool remote_verbose();
  /// Sets remote_verbose().
  static void set_remote_verbose(bool flag);
  /// KVIKIO_BATCH_BACKEND (default auto): how batches of host IO run (pread_batch,
  /// pwrite_batch): "io_uring", "thread_pool", or "auto" (io_uring where the kernel allows it).
  static std::string batch_backend();
  /// Sets batch_backend(). Throws std::invalid_argument for another word than "auto", "io_uring" or
  /// "thread_pool" (any case).
  static void set_batch_backend(const std::string& backend);

  /// KVIKIO_REMOTE_IO_BACKEND (default EASY_THREADPOOL): how remote reads run (see
  /// RemoteIOBackend).
  static RemoteIOBackend remote_io_backend();
  /// Sets remote_io_backend(), for reads started afterwards.
  static void set_remote_io_backend(RemoteIOBackend backend);
  /// KVIKIO_REMOTE_IO_NUM_REACTORS (default 1, MULTI_POLL only): reactor threads, each with
  /// its own libcurl multi handle.
  static unsigned int remote_io_num_reactors();
  /// Sets remote_io_num_reactors(). Throws std::invalid_argument outside 1..256.
  static void set_remote_io_num_reactors(unsigned int n);
  /// KVIKIO_REMOTE_IO_REACTOR_DISPATCH (default PER_CHUNK, MULTI_POLL only): how a call's
  /// range requests are spread over the reactors (see RemoteReactorDispatch).
  static RemoteReactorDispatch remote_io_reactor_dispatch();
  /// Sets remote_io_reactor_dispatch(), for reads started afterwards.
  static void set_remote_io_reactor_dispatch(RemoteReactorDispatch dispatch);
  /// KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS (default 256; 0: unlimited; MULTI_POLL only):
  /// range requests in flight at once, over all reactors (each gets an equal share).
  static std::size_t remote_io_max_concurrent_requests();
  /// Sets remote_io_max_concurrent_requests() (0: unlimited).
  static void set_remote_io_max_concurrent_requests(std::size_t n);

  /// Every setting with its current value and source, in a fixed order.
  static std::vector<SettingInfo> list();

  /// The names of every setting (the Python `defaults` keys), in the order of list().
  static std::vector<std::string> names();
  /// The current value of setting `name`, in the alternative SettingValue documents.
  /// Throws UnknownSettingError for an unknown name.
  static SettingValue get(std::string_view name);
  /// Sets `name` to `value` after the same checks as its typed setter (a flag also takes
  /// the integers 0 and 1). Throws UnknownSettingError for an unknown name and
  /// std::invalid_argument, naming the setting and the value, for a value of the wrong
  /// type or out of range. Setting num_threads resizes the pool, like set_num_threads.
  static void set(std::string_view name, const SettingValue& value);
};

}  // namespace kvikio

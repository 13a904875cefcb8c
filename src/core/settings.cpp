// kvikio::defaults: the process-wide settings, read from the environment once.
#include <kvikio/defaults.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "core/settings_internal.hpp"
#include "shim/cufile_api.hpp"

namespace kvikio {
namespace {

[[noreturn]] void bad_value(const std::string& setting,
                            const std::string& value,
                            const char* expected)
{
  throw std::invalid_argument("invalid value '" + value + "' for " + setting + ": expected " +
                              expected);
}

std::string trimmed(std::string_view s)
{
  auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && is_space(s.front())) {
    s.remove_prefix(1);
  }
  while (!s.empty() && is_space(s.back())) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

template <typename T>
std::optional<T> parse_integer(std::string_view text)
{
  auto s = trimmed(text);
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) { return std::nullopt; }
  return value;
}

std::size_t parse_positive_size(const std::string& setting, const std::string& text)
{
  auto v = parse_integer<long long>(text);
  if (!v || *v <= 0) { bad_value(setting, text, "a positive integer"); }
  return static_cast<std::size_t>(*v);
}

std::size_t parse_size(const std::string& setting, const std::string& text)
{
  auto v = parse_integer<long long>(text);
  if (!v || *v < 0) { bad_value(setting, text, "a non-negative integer"); }
  return static_cast<std::size_t>(*v);
}

bool parse_bool(const std::string& setting, const std::string& text)
{
  auto s = trimmed(text);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "1" || s == "true" || s == "on" || s == "yes") { return true; }
  if (s == "0" || s == "false" || s == "off" || s == "no") { return false; }
  bad_value(setting, text, "true/false, on/off, yes/no or 1/0");
}

std::vector<int> parse_status_codes(const std::string& setting, const std::string& text)
{
  std::vector<int> codes;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto code = parse_integer<int>(item);
    if (!code || *code < 100 || *code > 599) {
      bad_value(setting, text, "a comma-separated list of HTTP status codes (100-599)");
    }
    codes.push_back(*code);
  }
  if (codes.empty()) { bad_value(setting, text, "a comma-separated list of HTTP status codes"); }
  return codes;
}

std::string join(const std::vector<int>& codes)
{
  std::string out;
  for (auto c : codes) {
    // Appended in two steps: GCC 12 -O3 warns (-Wrestrict, falsely) on "," + to_string().
    if (!out.empty()) { out += ','; }
    out += std::to_string(c);
  }
  return out;
}

/// One setting: its value and where the value came from.
template <typename T>
struct Setting {
  T value;
  SettingSource source{SettingSource::DEFAULT};
};

struct Settings {
  Setting<CompatMode> compat_mode{CompatMode::AUTO};
  Setting<unsigned int> num_threads{1};
  Setting<std::size_t> task_size{4 << 20};
  Setting<std::size_t> gds_threshold{16 << 10};
  Setting<std::size_t> bounce_buffer_size{16 << 20};
  Setting<bool> auto_direct_io_read{false};
  Setting<bool> auto_direct_io_write{true};
  Setting<std::size_t> http_max_attempts{3};
  Setting<std::vector<int>> http_status_codes{{429, 500, 502, 503, 504}};
  Setting<long> http_timeout{60};
  std::unique_ptr<ThreadPool> pool;
  std::mutex mutex;
  std::mutex resize_mutex;

  Settings()
  {
    from_env("KVIKIO_COMPAT_MODE", compat_mode, [](const std::string& v) {
      try {
        return parse_compat_mode_str(v);
      } catch (const std::invalid_argument&) {
        bad_value("KVIKIO_COMPAT_MODE", v, "ON, OFF or AUTO");
      }
    });
    from_env("KVIKIO_NTHREADS", num_threads, [](const std::string& v) {
      auto n = parse_positive_size("KVIKIO_NTHREADS", v);
      if (n > 4096) { bad_value("KVIKIO_NTHREADS", v, "at most 4096 threads"); }
      return static_cast<unsigned int>(n);
    });
    from_env("KVIKIO_TASK_SIZE", task_size, [](const std::string& v) {
      return parse_positive_size("KVIKIO_TASK_SIZE", v);
    });
    from_env("KVIKIO_GDS_THRESHOLD", gds_threshold, [](const std::string& v) {
      return parse_size("KVIKIO_GDS_THRESHOLD", v);
    });
    from_env("KVIKIO_BOUNCE_BUFFER_SIZE", bounce_buffer_size, [](const std::string& v) {
      return parse_positive_size("KVIKIO_BOUNCE_BUFFER_SIZE", v);
    });
    from_env("KVIKIO_AUTO_DIRECT_IO_READ", auto_direct_io_read, [](const std::string& v) {
      return parse_bool("KVIKIO_AUTO_DIRECT_IO_READ", v);
    });
    from_env("KVIKIO_AUTO_DIRECT_IO_WRITE", auto_direct_io_write, [](const std::string& v) {
      return parse_bool("KVIKIO_AUTO_DIRECT_IO_WRITE", v);
    });
    from_env("KVIKIO_HTTP_MAX_ATTEMPTS", http_max_attempts, [](const std::string& v) {
      return parse_positive_size("KVIKIO_HTTP_MAX_ATTEMPTS", v);
    });
    from_env("KVIKIO_HTTP_STATUS_CODES", http_status_codes, [](const std::string& v) {
      return parse_status_codes("KVIKIO_HTTP_STATUS_CODES", v);
    });
    from_env("KVIKIO_HTTP_TIMEOUT", http_timeout, [](const std::string& v) {
      return static_cast<long>(parse_positive_size("KVIKIO_HTTP_TIMEOUT", v));
    });
  }

  template <typename T, typename Parse>
  static void from_env(const char* name, Setting<T>& setting, Parse parse)
  {
    const char* env = std::getenv(name);
    if (env == nullptr) { return; }
    setting.value  = parse(env);
    setting.source = SettingSource::ENVIRONMENT;
  }
};

// A bad environment value makes construction throw; the next access tries again and throws
// the same clear error, rather than leaving the process with half-read settings.
std::unique_ptr<Settings>& settings_instance()
{
  static std::unique_ptr<Settings> instance;
  return instance;
}
std::mutex& settings_instance_mutex()
{
  static std::mutex m;
  return m;
}

Settings& settings()
{
  std::lock_guard lock(settings_instance_mutex());
  auto& instance = settings_instance();
  if (!instance) { instance = std::make_unique<Settings>(); }
  return *instance;
}

template <typename T>
T get(Setting<T> Settings::*member)
{
  auto& s = settings();
  std::lock_guard lock(s.mutex);
  return (s.*member).value;
}

template <typename T>
void put(Setting<T> Settings::*member, T value)
{
  auto& s = settings();
  std::lock_guard lock(s.mutex);
  (s.*member).value  = std::move(value);
  (s.*member).source = SettingSource::SET;
}

void require_positive(const char* setting, std::size_t value)
{
  if (value == 0) { bad_value(setting, "0", "a positive value"); }
}

}  // namespace

void detail::reload_settings_from_environment()
{
  auto fresh = std::make_unique<Settings>();  // throws on a bad value, leaving the old ones
  std::lock_guard lock(settings_instance_mutex());
  auto& instance = settings_instance();
  if (instance) {
    std::lock_guard inner(instance->mutex);
    fresh->pool = std::move(instance->pool);
  }
  if (fresh->pool && fresh->pool->get_thread_count() != fresh->num_threads.value) {
    fresh->pool->reset(fresh->num_threads.value);
  }
  instance = std::move(fresh);
}

CompatMode defaults::compat_mode() { return get(&Settings::compat_mode); }
void defaults::set_compat_mode(CompatMode mode) { put(&Settings::compat_mode, mode); }
bool defaults::is_compat_mode_preferred() { return is_compat_mode_preferred(compat_mode()); }
bool defaults::is_compat_mode_preferred(CompatMode mode)
{
  if (mode == CompatMode::ON) { return true; }
  if (mode == CompatMode::OFF) { return false; }
  return !detail::cufile_driver_usable();
}

unsigned int defaults::num_threads() { return get(&Settings::num_threads); }
void defaults::set_num_threads(unsigned int n)
{
  if (n == 0) { bad_value("num_threads", "0", "at least one thread"); }
  auto& s = settings();
  // Resizing waits for queued tasks, which may read settings: never hold `mutex` meanwhile.
  std::lock_guard resize_lock(s.resize_mutex);
  ThreadPool* pool = nullptr;
  {
    std::lock_guard lock(s.mutex);
    s.num_threads = {n, SettingSource::SET};
    pool          = s.pool.get();
  }
  if (pool != nullptr && pool->get_thread_count() != n) { pool->reset(n); }
}
ThreadPool& defaults::thread_pool()
{
  auto& s = settings();
  std::lock_guard lock(s.mutex);
  if (!s.pool) { s.pool = std::make_unique<ThreadPool>(s.num_threads.value); }
  return *s.pool;
}

std::size_t defaults::task_size() { return get(&Settings::task_size); }
void defaults::set_task_size(std::size_t nbytes)
{
  require_positive("task_size", nbytes);
  put(&Settings::task_size, nbytes);
}

std::size_t defaults::gds_threshold() { return get(&Settings::gds_threshold); }
void defaults::set_gds_threshold(std::size_t nbytes) { put(&Settings::gds_threshold, nbytes); }

std::size_t defaults::bounce_buffer_size() { return get(&Settings::bounce_buffer_size); }
void defaults::set_bounce_buffer_size(std::size_t nbytes)
{
  require_positive("bounce_buffer_size", nbytes);
  put(&Settings::bounce_buffer_size, nbytes);
}

bool defaults::auto_direct_io_read() { return get(&Settings::auto_direct_io_read); }
void defaults::set_auto_direct_io_read(bool flag) { put(&Settings::auto_direct_io_read, flag); }
bool defaults::auto_direct_io_write() { return get(&Settings::auto_direct_io_write); }
void defaults::set_auto_direct_io_write(bool flag) { put(&Settings::auto_direct_io_write, flag); }

std::size_t defaults::http_max_attempts() { return get(&Settings::http_max_attempts); }
void defaults::set_http_max_attempts(std::size_t attempts)
{
  require_positive("http_max_attempts", attempts);
  put(&Settings::http_max_attempts, attempts);
}

std::vector<int> defaults::http_status_codes() { return get(&Settings::http_status_codes); }
void defaults::set_http_status_codes(std::vector<int> codes)
{
  for (auto code : codes) {
    if (code < 100 || code > 599) {
      bad_value("http_status_codes", join(codes), "HTTP status codes between 100 and 599");
    }
  }
  put(&Settings::http_status_codes, std::move(codes));
}

long defaults::http_timeout() { return get(&Settings::http_timeout); }
void defaults::set_http_timeout(long seconds)
{
  if (seconds <= 0) {
    bad_value("http_timeout", std::to_string(seconds), "a positive number of seconds");
  }
  put(&Settings::http_timeout, seconds);
}

std::vector<SettingInfo> defaults::list()
{
  auto& s = settings();
  std::lock_guard lock(s.mutex);
  auto yes_no = [](bool b) { return std::string(b ? "true" : "false"); };
  return {
    {"compat_mode",
     "KVIKIO_COMPAT_MODE",
     std::string(to_string(s.compat_mode.value)),
     s.compat_mode.source},
    {"num_threads", "KVIKIO_NTHREADS", std::to_string(s.num_threads.value), s.num_threads.source},
    {"task_size", "KVIKIO_TASK_SIZE", std::to_string(s.task_size.value), s.task_size.source},
    {"gds_threshold",
     "KVIKIO_GDS_THRESHOLD",
     std::to_string(s.gds_threshold.value),
     s.gds_threshold.source},
    {"bounce_buffer_size",
     "KVIKIO_BOUNCE_BUFFER_SIZE",
     std::to_string(s.bounce_buffer_size.value),
     s.bounce_buffer_size.source},
    {"auto_direct_io_read",
     "KVIKIO_AUTO_DIRECT_IO_READ",
     yes_no(s.auto_direct_io_read.value),
     s.auto_direct_io_read.source},
    {"auto_direct_io_write",
     "KVIKIO_AUTO_DIRECT_IO_WRITE",
     yes_no(s.auto_direct_io_write.value),
     s.auto_direct_io_write.source},
    {"http_max_attempts",
     "KVIKIO_HTTP_MAX_ATTEMPTS",
     std::to_string(s.http_max_attempts.value),
     s.http_max_attempts.source},
    {"http_status_codes",
     "KVIKIO_HTTP_STATUS_CODES",
     join(s.http_status_codes.value),
     s.http_status_codes.source},
    {"http_timeout",
     "KVIKIO_HTTP_TIMEOUT",
     std::to_string(s.http_timeout.value),
     s.http_timeout.source},
  };
}

}  // namespace kvikio

// kvikio::defaults: the process-wide settings, read from the environment once. One table
// (kSpecs) describes every setting; environment reading, the typed setters, list() and the
// name-keyed get/set all go through it, so a rule (a range, a type) is written once.
#include <kvikio/defaults.hpp>

#include <pthread.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "core/block_device_pools.hpp"
#include "core/format.hpp"
#include "core/settings_internal.hpp"
#include "core/text.hpp"
#include "shim/cufile_api.hpp"

namespace kvikio {
namespace {

constexpr std::int64_t kMaxInt = std::numeric_limits<std::int64_t>::max();

enum class Kind : std::uint8_t { MODE, FLAG, INTEGER, CODES, CHOICE };

/// One setting: its names, its kind and range, and its default. `min`/`max` bound an
/// INTEGER, and each code of a CODES list.
struct SettingSpec {
  std::string_view name;
  std::string_view env_var;
  Kind kind;
  SettingValue default_value;
  std::int64_t min{0};
  std::int64_t max{kMaxInt};
  std::string_view unit{};                  // "seconds": said in the error message
  std::vector<std::string_view> choices{};  // the words a CHOICE takes
};

// The order is the order of list() and names(); Id indexes it.
enum class Id : std::uint8_t {
  compat_mode,
  num_threads,
  task_size,
  gds_threshold,
  bounce_buffer_size,
  auto_direct_io_read,
  auto_direct_io_write,
  http_max_attempts,
  http_status_codes,
  http_timeout,
  auto_direct_io_read_overread,
  remote_verbose,
  batch_backend,
  thread_pool_per_block_device,
  remote_io_backend,
  remote_io_num_reactors,
  remote_io_reactor_dispatch,
  remote_io_max_concurrent_requests,
  count
};

const std::array<SettingSpec, static_cast<std::size_t>(Id::count)>& specs()
{
  using V       = std::vector<std::int64_t>;
  static auto s = std::array<SettingSpec, static_cast<std::size_t>(Id::count)>{{
    {"compat_mode", "KVIKIO_COMPAT_MODE", Kind::MODE, CompatMode::AUTO},
    // 4096: a pool larger than that is a typo, not a configuration.
    {"num_threads", "KVIKIO_NTHREADS", Kind::INTEGER, std::int64_t{1}, 1, 4096},
    {"task_size", "KVIKIO_TASK_SIZE", Kind::INTEGER, std::int64_t{4 << 20}, 1},
    {"gds_threshold", "KVIKIO_GDS_THRESHOLD", Kind::INTEGER, std::int64_t{16 << 10}, 0},
    {"bounce_buffer_size", "KVIKIO_BOUNCE_BUFFER_SIZE", Kind::INTEGER, std::int64_t{16 << 20}, 1},
    {"auto_direct_io_read", "KVIKIO_AUTO_DIRECT_IO_READ", Kind::FLAG, false},
    {"auto_direct_io_write", "KVIKIO_AUTO_DIRECT_IO_WRITE", Kind::FLAG, true},
    {"http_max_attempts", "KVIKIO_HTTP_MAX_ATTEMPTS", Kind::INTEGER, std::int64_t{3}, 1},
    {"http_status_codes",
     "KVIKIO_HTTP_STATUS_CODES",
     Kind::CODES,
     V{429, 500, 502, 503, 504},
     100,
     599},
    {"http_timeout",
     "KVIKIO_HTTP_TIMEOUT",
     Kind::INTEGER,
     std::int64_t{60},
     1,
     std::numeric_limits<long>::max(),
     "seconds"},
    {"auto_direct_io_read_overread", "KVIKIO_AUTO_DIRECT_IO_READ_OVERREAD", Kind::FLAG, false},
    {"remote_verbose", "KVIKIO_REMOTE_VERBOSE", Kind::FLAG, false},
    // Batches of host IO (kvikio/batch_io.hpp): auto takes io_uring where it works.
    {"batch_backend",
     "KVIKIO_BATCH_BACKEND",
     Kind::CHOICE,
     std::string("auto"),
     0,
     kMaxInt,
     {},
     {"auto", "io_uring", "thread_pool"}},
    // One pool per block device (core/block_device_pools.hpp), for files opened afterwards.
    {"thread_pool_per_block_device", "KVIKIO_THREAD_POOL_PER_BLOCK_DEVICE", Kind::FLAG, false},
    // Remote reads (RemoteHandle::pread, pread_batch): pool threads each blocking in
    // curl_easy_perform, or reactor threads each driving many transfers with curl_multi_poll.
    {"remote_io_backend",
     "KVIKIO_REMOTE_IO_BACKEND",
     Kind::CHOICE,
     std::string("EASY_THREADPOOL"),
     0,
     kMaxInt,
     {},
     {"EASY_THREADPOOL", "MULTI_POLL"}},
    // 256: more reactor threads than that is a typo, not a configuration.
    {"remote_io_num_reactors",
     "KVIKIO_REMOTE_IO_NUM_REACTORS",
     Kind::INTEGER,
     std::int64_t{1},
     1,
     256},
    {"remote_io_reactor_dispatch",
     "KVIKIO_REMOTE_IO_REACTOR_DISPATCH",
     Kind::CHOICE,
     std::string("PER_CHUNK"),
     0,
     kMaxInt,
     {},
     {"PER_CHUNK", "PER_PREAD"}},
    {"remote_io_max_concurrent_requests",
     "KVIKIO_REMOTE_IO_MAX_CONCURRENT_REQUESTS",
     Kind::INTEGER,
     std::int64_t{256},
     0},
  }};
  return s;
}

const SettingSpec& spec(Id id) { return specs()[static_cast<std::size_t>(id)]; }

Id find(std::string_view name)
{
  for (std::size_t i = 0; i < specs().size(); ++i) {
    if (specs()[i].name == name) { return static_cast<Id>(i); }
  }
  throw UnknownSettingError("unknown setting '" + std::string(name) +
                            "' (known: " + detail::join_names(defaults::names()) + ")");
}

std::string join(const std::vector<std::int64_t>& codes, const char* sep)
{
  std::string out;
  for (auto c : codes) {
    // Appended in two steps: GCC 12 -O3 warns (-Wrestrict, falsely) on sep + to_string().
    if (!out.empty()) { out += sep; }
    out += std::to_string(c);
  }
  return out;
}

/// The value as the environment would spell it (list() shows this).
std::string format(const SettingValue& v)
{
  struct {
    std::string operator()(bool b) const { return b ? "true" : "false"; }
    std::string operator()(std::int64_t n) const { return std::to_string(n); }
    std::string operator()(CompatMode m) const { return std::string(to_string(m)); }
    std::string operator()(const std::vector<std::int64_t>& c) const { return join(c, ","); }
    std::string operator()(const std::string& s) const { return s; }
  } visitor;
  return std::visit(visitor, v);
}

/// The value as an error message quotes it: a list in brackets, text as given.
std::string quoted(const SettingValue& v)
{
  if (const auto* c = std::get_if<std::vector<std::int64_t>>(&v)) {
    // Appended in steps: GCC 12 -O3 warns (-Wrestrict, falsely) on "[" + join() + "]".
    std::string out("[");
    out += join(*c, ", ");
    out += ']';
    return out;
  }
  return format(v);
}

/// What a bad value of `s` is told to be. `from_env`: the text forms of the environment.
std::string expected(const SettingSpec& s, bool from_env)
{
  switch (s.kind) {
    case Kind::MODE:
      return "ON, OFF or AUTO";
    case Kind::FLAG:
      return from_env ? "true/false, on/off, yes/no or an integer (0 is false)"
                      : "true, false or an integer (0 is false)";
    case Kind::CODES:
      return "a non-empty list of HTTP status codes (" + std::to_string(s.min) + "-" +
             std::to_string(s.max) + ")";
    case Kind::CHOICE: {
      std::string out = "one of";
      for (auto c : s.choices) {
        out += ' ';
        out += c;
      }
      return out;
    }
    case Kind::INTEGER:
      break;
  }
  std::string what = s.min == 0   ? "a non-negative integer"
                     : s.min == 1 ? "a positive integer"
                                  : "an integer of at least " + std::to_string(s.min);
  if (!s.unit.empty()) { what += " (" + std::string(s.unit) + ")"; }
  if (s.max != kMaxInt && s.max != std::numeric_limits<long>::max()) {
    what += ", at most " + std::to_string(s.max);
  }
  return what;
}

/// `label`: the setting's name, or its environment variable when the value came from there.
[[noreturn]] void bad_value(std::string_view label,
                            const std::string& value,
                            const SettingSpec& s,
                            bool from_env)
{
  // Upstream's callers match "negative value" (its conversion to an unsigned type says so).
  const bool negative = s.kind == Kind::INTEGER && value.size() > 1 && value[0] == '-' &&
                        std::isdigit(static_cast<unsigned char>(value[1])) != 0;
  throw std::invalid_argument("invalid value '" + value + "' for " + std::string(label) + ": " +
                              (negative ? "a negative value; " : "") + "expected " +
                              expected(s, from_env));
}

std::string trimmed(std::string_view s) { return std::string(detail::trim(s)); }

std::optional<std::int64_t> parse_integer(std::string_view text)
{
  auto s = trimmed(text);
  std::int64_t value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc{} || end != s.data() + s.size()) { return std::nullopt; }
  return value;
}

/// `value` in the alternative the setting stores, or nothing when it is of the wrong type or
/// out of range.
std::optional<SettingValue> normalized(const SettingSpec& s, const SettingValue& value)
{
  const auto* n = std::get_if<std::int64_t>(&value);
  switch (s.kind) {
    case Kind::MODE:
      if (std::holds_alternative<CompatMode>(value)) { return value; }
      if (const auto* text = std::get_if<std::string>(&value)) {
        try {
          return parse_compat_mode_str(trimmed(*text));
        } catch (const std::invalid_argument&) {
          return std::nullopt;
        }
      }
      return std::nullopt;
    case Kind::FLAG:
      if (std::holds_alternative<bool>(value)) { return value; }
      // An integer means what it means in the environment (detail::parse_bool_word).
      if (n != nullptr) { return *n != 0; }
      return std::nullopt;
    case Kind::INTEGER:
      if (n != nullptr && *n >= s.min && *n <= s.max) { return value; }
      return std::nullopt;
    case Kind::CODES: {
      const auto* codes = std::get_if<std::vector<std::int64_t>>(&value);
      if (codes == nullptr || codes->empty()) { return std::nullopt; }
      for (auto c : *codes) {
        if (c < s.min || c > s.max) { return std::nullopt; }
      }
      return value;
    }
    case Kind::CHOICE:
      if (const auto* text = std::get_if<std::string>(&value)) {
        const auto t = detail::trim(*text);
        // Any case is accepted; the value is kept as the table spells it (upstream's
        // remote_io_* words are upper case, batch_backend's lower case).
        for (auto c : s.choices) {
          const bool same = detail::iequals(c, t);
          if (same) {
            return std::optional<SettingValue>(std::in_place, std::in_place_type<std::string>, c);
          }
        }
      }
      return std::nullopt;
  }
  return std::nullopt;
}

/// `value` checked against the table; throws naming the setting and the value.
SettingValue checked(const SettingSpec& s, const SettingValue& value)
{
  auto v = normalized(s, value);
  if (!v) { bad_value(s.name, quoted(value), s, false); }
  return std::move(*v);
}

/// The environment variable's text as a value, or nothing when it does not parse.
std::optional<SettingValue> parse_text(const SettingSpec& s, const std::string& text)
{
  switch (s.kind) {
    case Kind::MODE:
    case Kind::CHOICE:
      return SettingValue{text};
    case Kind::FLAG:
      if (auto flag = detail::parse_bool_word(text)) { return *flag; }
      return std::nullopt;
    case Kind::INTEGER:
      if (auto n = parse_integer(text)) { return *n; }
      return std::nullopt;
    case Kind::CODES: {
      std::vector<std::int64_t> codes;
      std::stringstream ss(text);
      std::string item;
      while (std::getline(ss, item, ',')) {
        auto code = parse_integer(item);
        if (!code) { return std::nullopt; }
        codes.push_back(*code);
      }
      return codes;
    }
  }
  return std::nullopt;
}

/// The environment variable's value, checked like a set(); errors name the variable.
SettingValue parse_env(const SettingSpec& s, const std::string& text)
{
  auto v = parse_text(s, text);
  if (!v) { bad_value(s.env_var, text, s, true); }
  auto n = normalized(s, *v);
  if (!n) { bad_value(s.env_var, text, s, true); }
  return std::move(*n);
}

struct Entry {
  SettingValue value;
  SettingSource source{SettingSource::DEFAULT};
};

struct Settings {
  std::array<Entry, static_cast<std::size_t>(Id::count)> entries;
  std::unique_ptr<ThreadPool> pool;
  std::mutex mutex;
  std::mutex resize_mutex;

  /// Every setting from its environment variable, or its default; throws on a bad value.
  Settings()
  {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto& s   = specs()[i];
      const char* env = std::getenv(std::string(s.env_var).c_str());
      if (s.env_var == "KVIKIO_NTHREADS") { env = with_alias(s, env, "KVIKIO_NUM_THREADS"); }
      entries[i] = env == nullptr ? Entry{s.default_value, SettingSource::DEFAULT}
                                  : Entry{parse_env(s, env), SettingSource::ENVIRONMENT};
    }
  }

  /// Upstream's second name of a variable (KVIKIO_NUM_THREADS for KVIKIO_NTHREADS): used
  /// when the first is unset; both set to different values is an error naming both.
  static const char* with_alias(const SettingSpec& s, const char* env, const char* alias)
  {
    const char* other = std::getenv(alias);
    if (other == nullptr) { return env; }
    if (env == nullptr) { return other; }
    if (std::string_view(env) != std::string_view(other)) {
      throw std::invalid_argument(std::string(s.env_var) + "='" + env + "' and " + alias + "='" +
                                  other + "' disagree: set one of them");
    }
    return env;
  }

  Entry& operator[](Id id) { return entries[static_cast<std::size_t>(id)]; }
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

// fork() while another thread holds a settings lock (pool workers read settings all the
// time) would leave it locked forever in the child: hold both locks across fork() instead.
// The pool is never created or destroyed under these locks, so this cannot deadlock against
// the thread pool's own fork handler.
void settings_before_fork() noexcept
{
  settings_instance_mutex().lock();
  if (settings_instance()) { settings_instance()->mutex.lock(); }
}
void settings_after_fork_in_parent() noexcept
{
  if (settings_instance()) { settings_instance()->mutex.unlock(); }
  settings_instance_mutex().unlock();
}
void settings_after_fork_in_child() noexcept
{
  if (settings_instance()) {
    // A resize in progress in another thread of the parent never finishes here.
    new (&settings_instance()->resize_mutex) std::mutex();
    settings_instance()->mutex.unlock();
  }
  settings_instance_mutex().unlock();
}

/// Lock-free copies of the scalar settings (flags, numbers, compat_mode), for the readers on
/// every IO call: the two locks of settings() cost about 50 ns a read, and serialise threads
/// reading settings at once (each small read reads one or two). Stored under the settings
/// locks whenever a value changes, and for a whole instance when one is made; `published`
/// says they hold the current values. Lists and text are read under the locks.
struct ScalarMirror {
  std::array<std::atomic<std::int64_t>, static_cast<std::size_t>(Id::count)> values{};
  std::atomic<bool> published{false};

  /// `v` as the mirror holds it; false for a kind it does not hold.
  static bool encode(const SettingValue& v, std::int64_t& out)
  {
    if (const auto* b = std::get_if<bool>(&v)) {
      out = *b ? 1 : 0;
    } else if (const auto* i = std::get_if<std::int64_t>(&v)) {
      out = *i;
    } else if (const auto* m = std::get_if<CompatMode>(&v)) {
      out = static_cast<std::int64_t>(*m);
    } else {
      return false;
    }
    return true;
  }
  void store(Id id, const SettingValue& v)
  {
    std::int64_t x = 0;
    if (encode(v, x)) { values[static_cast<std::size_t>(id)].store(x, std::memory_order_relaxed); }
  }
};
ScalarMirror& scalar_mirror()
{
  static ScalarMirror m;
  return m;
}
void publish_all(Settings& s)
{
  auto& m = scalar_mirror();
  for (std::size_t i = 0; i < s.entries.size(); ++i) {
    m.store(static_cast<Id>(i), s.entries[i].value);
  }
  m.published.store(true, std::memory_order_release);
}

Settings& settings()
{
  static std::once_flag atfork_once;
  std::call_once(atfork_once, [] {
    ::pthread_atfork(
      &settings_before_fork, &settings_after_fork_in_parent, &settings_after_fork_in_child);
  });
  std::lock_guard lock(settings_instance_mutex());
  auto& instance = settings_instance();
  if (!instance) {
    instance = std::make_unique<Settings>();
    publish_all(*instance);
  }
  return *instance;
}

SettingValue value_of(Id id)
{
  auto& s = settings();
  std::lock_guard lock(s.mutex);
  return s[id].value;
}

template <typename T>
T typed(Id id)
{
  if constexpr (!std::is_same_v<T, std::string>) {
    const auto& m = scalar_mirror();
    if (m.published.load(std::memory_order_acquire)) {
      const auto x = m.values[static_cast<std::size_t>(id)].load(std::memory_order_relaxed);
      if constexpr (std::is_same_v<T, bool>) {
        return x != 0;
      } else {
        return static_cast<T>(x);
      }
    }
  }
  auto v = value_of(id);
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, CompatMode> ||
                std::is_same_v<T, std::string>) {
    return std::get<T>(v);
  } else {
    return static_cast<T>(std::get<std::int64_t>(v));
  }
}

/// Checks `value` against the table and stores it; num_threads also resizes the pool.
void assign(Id id, const SettingValue& value)
{
  const auto& sp = spec(id);
  auto v         = checked(sp, value);
  auto& s        = settings();
  if (id != Id::num_threads) {
    std::lock_guard lock(s.mutex);
    s[id] = {std::move(v), SettingSource::SET};
    scalar_mirror().store(id, s[id].value);
    return;
  }
  const auto n = static_cast<unsigned int>(std::get<std::int64_t>(v));
  // Resizing waits for queued tasks, which may read settings: never hold `mutex` meanwhile.
  std::lock_guard resize_lock(s.resize_mutex);
  ThreadPool* pool = nullptr;
  {
    std::lock_guard lock(s.mutex);
    s[id] = {std::move(v), SettingSource::SET};
    scalar_mirror().store(id, s[id].value);
    pool = s.pool.get();
  }
  if (pool != nullptr && pool->get_thread_count() != n) { pool->reset(n); }
  detail::resize_block_device_pools(n);
}

/// An unsigned argument of a typed setter: beyond int64 it cannot be stored, and says so.
SettingValue as_value(Id id, std::uint64_t n)
{
  if (n > static_cast<std::uint64_t>(kMaxInt)) {
    bad_value(spec(id).name, std::to_string(n), spec(id), false);
  }
  return static_cast<std::int64_t>(n);
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
  const auto n = static_cast<unsigned int>(std::get<std::int64_t>((*fresh)[Id::num_threads].value));
  if (fresh->pool && fresh->pool->get_thread_count() != n) { fresh->pool->reset(n); }
  publish_all(*fresh);
  instance = std::move(fresh);
}

std::vector<std::string> defaults::names()
{
  std::vector<std::string> out;
  for (const auto& s : specs()) {
    out.emplace_back(s.name);
  }
  return out;
}

SettingValue defaults::get(std::string_view name) { return value_of(find(name)); }
void defaults::set(std::string_view name, const SettingValue& value) { assign(find(name), value); }

std::vector<SettingInfo> defaults::list()
{
  auto& s = settings();
  std::lock_guard lock(s.mutex);
  std::vector<SettingInfo> out;
  for (std::size_t i = 0; i < specs().size(); ++i) {
    const auto& sp = specs()[i];
    out.push_back({std::string(sp.name),
                   std::string(sp.env_var),
                   format(s.entries[i].value),
                   s.entries[i].source});
  }
  return out;
}

CompatMode defaults::compat_mode() { return typed<CompatMode>(Id::compat_mode); }
void defaults::set_compat_mode(CompatMode mode) { assign(Id::compat_mode, mode); }
bool defaults::is_compat_mode_preferred() { return is_compat_mode_preferred(compat_mode()); }
bool defaults::is_compat_mode_preferred(CompatMode mode)
{
  if (mode == CompatMode::ON) { return true; }
  if (mode == CompatMode::OFF) { return false; }
  // DESIGN.md §1: AUTO takes cuFile only where GPUDirect Storage really works.
  return !detail::gds_usable();
}

unsigned int defaults::num_threads() { return typed<unsigned int>(Id::num_threads); }
void defaults::set_num_threads(unsigned int n)
{
  assign(Id::num_threads, as_value(Id::num_threads, n));
}
ThreadPool& defaults::thread_pool()
{
  auto& s = settings();
  unsigned int n{};
  {
    std::lock_guard lock(s.mutex);
    if (s.pool) { return *s.pool; }
    n = static_cast<unsigned int>(std::get<std::int64_t>(s[Id::num_threads].value));
  }
  // Created outside `mutex`: a pool registers itself with the fork handlers under their own
  // lock, which must never be taken while a settings lock is held.
  auto fresh = std::make_unique<ThreadPool>(n);
  std::lock_guard lock(s.mutex);
  if (!s.pool) { s.pool = std::move(fresh); }
  return *s.pool;
}  // a pool that lost the race to another thread is destroyed here, after the lock

std::size_t defaults::task_size() { return typed<std::size_t>(Id::task_size); }
void defaults::set_task_size(std::size_t nbytes)
{
  assign(Id::task_size, as_value(Id::task_size, nbytes));
}

std::size_t defaults::gds_threshold() { return typed<std::size_t>(Id::gds_threshold); }
void defaults::set_gds_threshold(std::size_t nbytes)
{
  assign(Id::gds_threshold, as_value(Id::gds_threshold, nbytes));
}

std::size_t defaults::bounce_buffer_size() { return typed<std::size_t>(Id::bounce_buffer_size); }
void defaults::set_bounce_buffer_size(std::size_t nbytes)
{
  assign(Id::bounce_buffer_size, as_value(Id::bounce_buffer_size, nbytes));
}

bool defaults::auto_direct_io_read() { return typed<bool>(Id::auto_direct_io_read); }
void defaults::set_auto_direct_io_read(bool flag) { assign(Id::auto_direct_io_read, flag); }
bool defaults::auto_direct_io_write() { return typed<bool>(Id::auto_direct_io_write); }
void defaults::set_auto_direct_io_write(bool flag) { assign(Id::auto_direct_io_write, flag); }
bool defaults::auto_direct_io_read_overread()
{
  return typed<bool>(Id::auto_direct_io_read_overread);
}
void defaults::set_auto_direct_io_read_overread(bool flag)
{
  assign(Id::auto_direct_io_read_overread, flag);
}

std::size_t defaults::http_max_attempts() { return typed<std::size_t>(Id::http_max_attempts); }
void defaults::set_http_max_attempts(std::size_t attempts)
{
  assign(Id::http_max_attempts, as_value(Id::http_max_attempts, attempts));
}

std::vector<int> defaults::http_status_codes()
{
  const auto v      = value_of(Id::http_status_codes);
  const auto& codes = std::get<std::vector<std::int64_t>>(v);
  return {codes.begin(), codes.end()};  // checked to be 100-599 when stored
}
void defaults::set_http_status_codes(std::vector<int> codes)
{
  assign(Id::http_status_codes, std::vector<std::int64_t>(codes.begin(), codes.end()));
}

long defaults::http_timeout() { return typed<long>(Id::http_timeout); }
void defaults::set_http_timeout(long seconds)
{
  assign(Id::http_timeout, static_cast<std::int64_t>(seconds));
}

bool defaults::remote_verbose() { return typed<bool>(Id::remote_verbose); }
void defaults::set_remote_verbose(bool flag) { assign(Id::remote_verbose, flag); }

bool defaults::thread_pool_per_block_device()
{
  return typed<bool>(Id::thread_pool_per_block_device);
}
void defaults::set_thread_pool_per_block_device(bool flag)
{
  assign(Id::thread_pool_per_block_device, flag);
}

std::string defaults::batch_backend() { return typed<std::string>(Id::batch_backend); }
void defaults::set_batch_backend(const std::string& backend)
{
  assign(Id::batch_backend, SettingValue{backend});
}

RemoteIOBackend defaults::remote_io_backend()
{
  return typed<std::string>(Id::remote_io_backend) == "MULTI_POLL"
           ? RemoteIOBackend::MULTI_POLL
           : RemoteIOBackend::EASY_THREADPOOL;
}
void defaults::set_remote_io_backend(RemoteIOBackend backend)
{
  assign(Id::remote_io_backend,
         SettingValue{
           std::string(backend == RemoteIOBackend::MULTI_POLL ? "MULTI_POLL" : "EASY_THREADPOOL")});
}
unsigned int defaults::remote_io_num_reactors()
{
  return static_cast<unsigned int>(typed<std::int64_t>(Id::remote_io_num_reactors));
}
void defaults::set_remote_io_num_reactors(unsigned int n)
{
  assign(Id::remote_io_num_reactors, static_cast<std::int64_t>(n));
}
RemoteReactorDispatch defaults::remote_io_reactor_dispatch()
{
  return typed<std::string>(Id::remote_io_reactor_dispatch) == "PER_PREAD"
           ? RemoteReactorDispatch::PER_PREAD
           : RemoteReactorDispatch::PER_CHUNK;
}
void defaults::set_remote_io_reactor_dispatch(RemoteReactorDispatch dispatch)
{
  assign(Id::remote_io_reactor_dispatch,
         SettingValue{
           std::string(dispatch == RemoteReactorDispatch::PER_PREAD ? "PER_PREAD" : "PER_CHUNK")});
}
std::size_t defaults::remote_io_max_concurrent_requests()
{
  return static_cast<std::size_t>(typed<std::int64_t>(Id::remote_io_max_concurrent_requests));
}
void defaults::set_remote_io_max_concurrent_requests(std::size_t n)
{
  assign(Id::remote_io_max_concurrent_requests,
         static_cast<std::int64_t>(std::min<std::size_t>(n, kMaxInt)));
}

}  // namespace kvikio

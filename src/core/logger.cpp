// The log behind KVIKIO_LOG_LEVEL / KVIKIO_LOG_FILE (core/logger.hpp). With spdlog it is a
// private spdlog::logger (never registered in spdlog's registry, so an application's own
// spdlog setup is untouched); without, a mutex-guarded line writer with the same layout.
#include "core/logger.hpp"

#include "core/text.hpp"

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>

#include <kvikio/log.hpp>

#if KVIKIO_HAVE_SPDLOG
#include <spdlog/logger.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#endif

namespace kvikio::detail {
namespace {

constexpr std::string_view kNames[] = {
  "trace", "debug", "info", "warn", "error", "critical", "off"};

#if KVIKIO_HAVE_SPDLOG
spdlog::level::level_enum to_spdlog(LogLevel level)
{
  switch (level) {
    case LogLevel::trace:
      return spdlog::level::trace;
    case LogLevel::debug:
      return spdlog::level::debug;
    case LogLevel::info:
      return spdlog::level::info;
    case LogLevel::warn:
      return spdlog::level::warn;
    case LogLevel::error:
      return spdlog::level::err;
    case LogLevel::critical:
      return spdlog::level::critical;
    case LogLevel::off:
      break;
  }
  return spdlog::level::off;
}
#endif

/// The open log: where lines go. Replaced whole by a reload.
class Sink {
 public:
  explicit Sink(const char* path)
  {
#if KVIKIO_HAVE_SPDLOG
    std::shared_ptr<spdlog::sinks::sink> sink;
    if (path != nullptr) {
      try {
        sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/true);
      } catch (const std::exception& e) {
        std::fprintf(
          stderr, "kvikio: cannot open KVIKIO_LOG_FILE: %s; logging to stderr\n", e.what());
      }
    }
    if (!sink) { sink = std::make_shared<spdlog::sinks::stderr_sink_mt>(); }
    logger_ = std::make_shared<spdlog::logger>("kvikio", std::move(sink));
    logger_->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [kvikio] [%l] %v");
    logger_->set_level(spdlog::level::trace);  // the level is checked before we get here
    logger_->flush_on(spdlog::level::trace);   // a line is on disk when log() returns
#else
    if (path != nullptr) {
      file_ = std::fopen(path, "w");
      if (file_ == nullptr) {
        std::fprintf(stderr, "kvikio: cannot open KVIKIO_LOG_FILE '%s'; logging to stderr\n", path);
      }
    }
#endif
  }
  Sink(const Sink&)            = delete;
  Sink& operator=(const Sink&) = delete;
  ~Sink()
  {
#if !KVIKIO_HAVE_SPDLOG
    if (file_ != nullptr) { std::fclose(file_); }
#endif
  }

  void write(LogLevel level, std::string_view message) noexcept
  {
#if KVIKIO_HAVE_SPDLOG
    try {
      logger_->log(to_spdlog(level), "{}", message);
    } catch (...) {  // a log line is never worth an exception
    }
#else
    using clock  = std::chrono::system_clock;
    const auto t = clock::now();
    const auto s = clock::to_time_t(t);
    const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count() % 1000;
    std::tm tm{};
    ::localtime_r(&s, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", &tm);
    std::FILE* out = file_ != nullptr ? file_ : stderr;
    std::lock_guard lock(mutex_);
    std::fprintf(out,
                 "[%s.%03d] [kvikio] [%s] %.*s\n",
                 stamp,
                 static_cast<int>(ms),
                 level == LogLevel::warn ? "warning" : kNames[static_cast<int>(level)].data(),
                 static_cast<int>(message.size()),
                 message.data());
    std::fflush(out);
#endif
  }

 private:
#if KVIKIO_HAVE_SPDLOG
  std::shared_ptr<spdlog::logger> logger_;
#else
  std::mutex mutex_;
  std::FILE* file_{nullptr};
#endif
};

struct State {
  std::atomic<int> level{static_cast<int>(LogLevel::warn)};
  std::mutex mutex;  // guards sink (replaced by reloads) and the handler
  std::shared_ptr<Sink> sink;
  LogHandler handler{nullptr};
  void* handler_context{nullptr};

  State() { read_environment(); }

  void read_environment()
  {
    LogLevel lv     = LogLevel::warn;
    const char* env = std::getenv("KVIKIO_LOG_LEVEL");
    std::string bad;
    if (env != nullptr && *env != '\0') {
      if (auto parsed = parse_log_level(env)) {
        lv = *parsed;
      } else {
        bad = env;
      }
    }
    const char* path = std::getenv("KVIKIO_LOG_FILE");
    if (path != nullptr && *path == '\0') { path = nullptr; }
    auto fresh = std::make_shared<Sink>(path);
    {
      std::lock_guard lock(mutex);
      sink = fresh;
    }
    level = static_cast<int>(lv);
    // A typo must not silence the log: say so, and keep the default.
    if (!bad.empty()) {
      fresh->write(LogLevel::warn,
                   "KVIKIO_LOG_LEVEL='" + bad +
                     "' is not one of trace, debug, info, warn, error, critical, off; using warn");
    }
  }

  std::shared_ptr<Sink> current()
  {
    std::lock_guard lock(mutex);
    return sink;
  }
};

State& state()
{
  // Never destroyed: pool threads and static destructors may still log at exit.
  static auto* s = new State();
  return *s;
}

}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view text) noexcept
{
  const std::string lower = detail::to_lower(detail::trim(text));
  if (lower == "warning") { return LogLevel::warn; }
  for (int i = 0; i <= static_cast<int>(LogLevel::off); ++i) {
    if (lower == kNames[i]) { return static_cast<LogLevel>(i); }
  }
  return std::nullopt;
}

std::string_view to_string(LogLevel level) noexcept { return kNames[static_cast<int>(level)]; }

LogLevel log_level() noexcept { return static_cast<LogLevel>(state().level.load()); }
void set_log_level(LogLevel level) noexcept { state().level = static_cast<int>(level); }

bool log_enabled(LogLevel level) noexcept
{
  return level != LogLevel::off && static_cast<int>(level) >= state().level.load();
}

void log(LogLevel level, std::string_view message) noexcept
{
  if (!log_enabled(level)) { return; }
  auto& s = state();
  LogHandler handler{nullptr};
  void* context{nullptr};
  {
    std::lock_guard lock(s.mutex);
    handler = s.handler;
    context = s.handler_context;
  }
  if (handler != nullptr) {
    handler(static_cast<int>(level), message.data(), message.size(), context);
    return;
  }
  s.current()->write(level, message);
}

bool log_uses_spdlog() noexcept { return KVIKIO_HAVE_SPDLOG != 0; }

void reload_log_from_environment() { state().read_environment(); }

}  // namespace kvikio::detail

namespace kvikio {

void set_log_handler(LogHandler handler, void* context) noexcept
{
  auto& s = detail::state();
  std::lock_guard lock(s.mutex);
  s.handler         = handler;
  s.handler_context = context;
}

}  // namespace kvikio

#pragma once
// The library's log: KVIKIO_LOG_LEVEL (trace, debug, info, warn, error, critical, off;
// default warn) and KVIKIO_LOG_FILE (default stderr; the file is truncated when the log
// opens). Written through spdlog where the build found it (KVIKIO_USE_SPDLOG), else through
// a small line writer with the same layout.
#include <optional>
#include <string>
#include <string_view>

namespace kvikio::detail {

enum class LogLevel : int { trace = 0, debug, info, warn, error, critical, off };

/// The level named `text` (any case, surrounding blanks ignored; "warning" is warn), or
/// nullopt when it names none.
std::optional<LogLevel> parse_log_level(std::string_view text) noexcept;

/// The level's name as KVIKIO_LOG_LEVEL spells it.
std::string_view to_string(LogLevel level) noexcept;

/// The current level (read from the environment at first use).
LogLevel log_level() noexcept;
void set_log_level(LogLevel level) noexcept;

/// True when a message of `level` would be written: test this before building a message.
bool log_enabled(LogLevel level) noexcept;

/// Writes one line at `level`, if enabled. Never throws.
void log(LogLevel level, std::string_view message) noexcept;

/// True when the log writes through spdlog.
bool log_uses_spdlog() noexcept;

/// For tests: flushes the log, then reads KVIKIO_LOG_LEVEL and KVIKIO_LOG_FILE again and
/// reopens the log (the file is truncated).
void reload_log_from_environment();

}  // namespace kvikio::detail

/// Logs `expr` (a string) at `level` (a LogLevel member name); `expr` is evaluated only when
/// the level is enabled.
#define KVIKIO_LOG(level, expr)                                             \
  do {                                                                      \
    if (::kvikio::detail::log_enabled(::kvikio::detail::LogLevel::level)) { \
      ::kvikio::detail::log(::kvikio::detail::LogLevel::level, (expr));     \
    }                                                                       \
  } while (false)

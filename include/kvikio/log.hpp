#pragma once
/// @file log.hpp
/// Where the library's log lines go (KVIKIO_LOG_LEVEL, KVIKIO_LOG_FILE): by default stderr or
/// the file; an application may take them instead, e.g. the Python package hands them to
/// Python's `logging` (logger "kvikio").
#include <cstddef>

#include <kvikio/export.hpp>

namespace kvikio {

/// Receives one log line: `level` 0 trace, 1 debug, 2 info, 3 warn, 4 error, 5 critical;
/// `message` is `size` bytes, not NUL-terminated, valid during the call only. Called on the
/// thread that logs (pool threads included), possibly from several at once; it must not throw
/// and must not block on the library's own IO.
using LogHandler = void (*)(int level, const char* message, std::size_t size, void* context);

/// Sends every line the log writes to `handler` (with `context`) instead of stderr or
/// KVIKIO_LOG_FILE; nullptr restores them. The level (KVIKIO_LOG_LEVEL) still decides which
/// lines are written. Thread-safe; a line being written while the handler changes goes to
/// either.
KVIKIO_EXPORT void set_log_handler(LogHandler handler, void* context = nullptr) noexcept;

}  // namespace kvikio

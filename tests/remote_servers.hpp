#pragma once
// Starting and stopping the Python test servers (tests/servers/*.py) from C++ tests.
#include <curl/curl.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <kvikio/defaults.hpp>

#include "local_server.hpp"

#ifndef KVIKIO_TEST_SERVERS_DIR
#error "KVIKIO_TEST_SERVERS_DIR must be defined"
#endif
#ifndef KVIKIO_PYTHON
#define KVIKIO_PYTHON "python3"
#endif

namespace kvikio::test {

/// A server process: tests/servers/SCRIPT run with KVIKIO_PYTHON, its stdin and stdout on
/// pipes, its stderr in `log_path`. It prints "PORT <n>" when ready. Closing its stdin asks it
/// to exit; the destructor does that, then waits briefly and kills it if it is still there.
/// (The launcher itself is bench::ServerProcess, shared with the benchmark tool.)
class ServerProcess : public bench::ServerProcess {
 public:
  ServerProcess(const std::string& script,
                std::vector<std::string> args,
                const std::string& log_path = "/dev/null",
                int ready_timeout_ms        = 30000)
    : bench::ServerProcess(argv_for(script, std::move(args)), script, log_path, ready_timeout_ms)
  {
  }

 private:
  static std::vector<std::string> argv_for(const std::string& script, std::vector<std::string> args)
  {
    std::vector<std::string> argv{KVIKIO_PYTHON,
                                  std::string(KVIKIO_TEST_SERVERS_DIR) + "/" + script};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
};

/// Sets (or unsets, with nullopt) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name))
  {
    if (const char* old = std::getenv(name_.c_str())) { old_ = old; }
    if (value) {
      ::setenv(name_.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ~ScopedEnv()
  {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&)            = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

/// Restores the HTTP settings and the pool size at the end of a scope.
class ScopedHttpSettings {
 public:
  ScopedHttpSettings()
    : attempts_(defaults::http_max_attempts()),
      codes_(defaults::http_status_codes()),
      timeout_(defaults::http_timeout()),
      threads_(defaults::num_threads())
  {
  }
  ~ScopedHttpSettings()
  {
    defaults::set_http_max_attempts(attempts_);
    defaults::set_http_status_codes(codes_);
    defaults::set_http_timeout(timeout_);
    defaults::set_num_threads(threads_);
  }
  ScopedHttpSettings(const ScopedHttpSettings&)            = delete;
  ScopedHttpSettings& operator=(const ScopedHttpSettings&) = delete;

 private:
  std::size_t attempts_;
  std::vector<int> codes_;
  long timeout_;
  unsigned threads_;
};

/// A plain GET with libcurl, outside kvikio (for the test servers' control endpoints such as
/// `/_stats`); the body, or what arrived of it.
inline std::string http_get(const std::string& url)
{
  auto append = +[](char* data, std::size_t size, std::size_t n, void* body) {
    static_cast<std::string*>(body)->append(data, size * n);
    return size * n;
  };
  CURL* h = curl_easy_init();
  std::string body;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
  curl_easy_perform(h);
  curl_easy_cleanup(h);
  return body;
}

}  // namespace kvikio::test

#pragma once
// Starting and stopping the Python test servers (tests/servers/*.py) from C++ tests.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/defaults.hpp>

#ifndef KVIKIO_TEST_SERVERS_DIR
#error "KVIKIO_TEST_SERVERS_DIR must be defined"
#endif
#ifndef KVIKIO_PYTHON
#define KVIKIO_PYTHON "python3"
#endif

namespace kvikio::test {

/// A server process: started with its stdin and stdout on pipes, its stderr in `log_path`.
/// It prints "PORT <n>" when ready. Closing its stdin asks it to exit; the destructor does
/// that, then waits briefly and kills it if it is still there.
class ServerProcess {
 public:
  ServerProcess(const std::string& script,
                std::vector<std::string> args,
                const std::string& log_path = "/dev/null",
                int ready_timeout_ms        = 30000)
  {
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) { throw std::runtime_error("pipe failed"); }
    std::vector<std::string> argv_s{KVIKIO_PYTHON,
                                    std::string(KVIKIO_TEST_SERVERS_DIR) + "/" + script};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ < 0) { throw std::runtime_error("fork failed"); }
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (log >= 0) { ::dup2(log, 2); }
      for (int fd = 3; fd < 1024; ++fd) {
        ::close(fd);
      }
      std::vector<char*> argv;
      for (auto& a : argv_s) {
        argv.push_back(a.data());
      }
      argv.push_back(nullptr);
      ::execvp(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_child_   = in[1];
    from_child_ = out[0];
    auto line   = read_line(ready_timeout_ms);
    if (!line || line->rfind("PORT ", 0) != 0) {
      stop();
      throw std::runtime_error("server " + script + " did not start (see " + log_path +
                               "); got: " + line.value_or("<nothing>"));
    }
    port_ = std::stoi(line->substr(5));
  }
  ~ServerProcess() { stop(); }
  ServerProcess(const ServerProcess&)            = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  /// Sends one line on the server's stdin and returns its one-line answer.
  std::string command(const std::string& line, int timeout_ms = 30000)
  {
    std::string l = line + "\n";
    if (::write(to_child_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) {
      throw std::runtime_error("writing to the server failed");
    }
    auto reply = read_line(timeout_ms);
    if (!reply) { throw std::runtime_error("no answer from the server to: " + line); }
    return *reply;
  }

 private:
  std::optional<std::string> read_line(int timeout_ms)
  {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (true) {
      auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
      if (left <= 0) { return std::nullopt; }
      pollfd p{from_child_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) { continue; }
      char buf[4096];
      auto n = ::read(from_child_, buf, sizeof buf);
      if (n <= 0) { return std::nullopt; }
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
  }

  void stop()
  {
    if (to_child_ >= 0) { ::close(to_child_); }
    if (from_child_ >= 0) { ::close(from_child_); }
    to_child_ = from_child_ = -1;
    if (pid_ <= 0) { return; }
    for (int i = 0; i < 50; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  pid_t pid_{-1};
  int to_child_{-1};
  int from_child_{-1};
  int port_{0};
  std::string buffer_;
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

}  // namespace kvikio::test

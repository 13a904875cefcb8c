#pragma once
// Local servers on loopback for remote benchmarks and tests: a child process with pipes
// (ServerProcess: the Python servers of tests/servers, which print "PORT <n>" when ready)
// and the benchmark's file server (LocalServer: nginx, or the embedded range_server.py).
#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kvikio::bench {

/// A child process started with its stdin and stdout on pipes and its stderr appended to a
/// log file. stop() (and the destructor) close its stdin, send SIGTERM when asked to,
/// wait up to a second and then kill it.
class ChildProcess {
 public:
  /// Starts `argv` (argv[0] looked up on PATH). Throws std::runtime_error when the pipes or
  /// the fork fail; a program that cannot be executed exits with status 127.
  ChildProcess(std::vector<std::string> argv, const std::string& log_path);
  ChildProcess(const ChildProcess&)            = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess() { stop(); }

  /// The next line the child printed on stdout, or nullopt after `timeout_ms` or at its end.
  std::optional<std::string> read_line(int timeout_ms);
  /// Writes `line` and a newline to the child's stdin; throws std::runtime_error on failure.
  void write_line(const std::string& line);
  /// Ends the child (see the class comment); with `terminate` SIGTERM goes first, for a
  /// program that does not watch its stdin. Idempotent; never throws.
  void stop(bool terminate = false) noexcept;

 private:
  pid_t pid_{-1};
  int to_child_{-1};
  int from_child_{-1};
  std::string buffer_;
};

/// A server that prints "PORT <n>" on stdout once it listens on 127.0.0.1, takes one-line
/// commands on stdin (one line answered each) and exits when its stdin closes.
class ServerProcess {
 public:
  /// Starts `argv` and waits up to `ready_timeout_ms` for its PORT line. Throws
  /// std::runtime_error "server NAME did not start (see LOG); got: ..." otherwise.
  ServerProcess(std::vector<std::string> argv,
                const std::string& name,
                const std::string& log_path = "/dev/null",
                int ready_timeout_ms        = 30000);

  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  /// Sends one line on the server's stdin and returns its one-line answer.
  std::string command(const std::string& line, int timeout_ms = 30000);

 private:
  ChildProcess process_;
  int port_{0};
};

/// The text of tests/servers/range_server.py, embedded at build time, so an installed tool
/// needs no source tree.
const std::string& range_server_script();

/// A loopback HTTP server for `kvikio bench --remote local`: a scratch directory holding
/// `size` random bytes as data.bin (and the server's config and log), served by nginx
/// (PATH, /usr/sbin/nginx) or by range_server.py run with python3. The server is stopped
/// and the directory removed on destruction.
class LocalServer {
 public:
  /// `kind` is "nginx" (falling back to python when nginx is missing; `on_fallback` is told
  /// why) or "python". Throws std::runtime_error when the server does not start.
  LocalServer(std::size_t size,
              const std::string& kind,
              const std::function<void(const std::string&)>& on_fallback);
  LocalServer(const LocalServer&)            = delete;
  LocalServer& operator=(const LocalServer&) = delete;
  ~LocalServer();

  /// http://127.0.0.1:PORT/data.bin
  [[nodiscard]] const std::string& url() const noexcept { return url_; }
  /// "nginx (/usr/sbin/nginx)" or "python (range_server.py)": for the report.
  [[nodiscard]] const std::string& kind() const noexcept { return kind_; }

 private:
  void remove_dir() noexcept;

  std::string dir_;
  std::string url_;
  std::string kind_;
  std::optional<ChildProcess> nginx_;
  std::optional<ServerProcess> python_;
};

}  // namespace kvikio::bench

// Child processes and loopback servers for the remote benchmark and the remote tests.
#include "local_server.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <kvikio/error.hpp>

namespace kvikio::bench {

// ---------------------------------------------------------------------------- ChildProcess

ChildProcess::ChildProcess(std::vector<std::string> argv, const std::string& log_path)
{
  int in[2], out[2];
  if (::pipe(in) != 0) { throw std::runtime_error("pipe failed for " + argv.at(0)); }
  if (::pipe(out) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    throw std::runtime_error("pipe failed for " + argv.at(0));
  }
  pid_ = ::fork();
  if (pid_ < 0) {
    for (int fd : {in[0], in[1], out[0], out[1]}) {
      ::close(fd);
    }
    throw std::runtime_error("fork failed for " + argv.at(0));
  }
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log >= 0) { ::dup2(log, 2); }
    // The child must not hold the parent's other descriptors (another server's pipes would
    // keep that server's stdin open after the parent closed it).
    for (int fd = 3; fd < 1024; ++fd) {
      ::close(fd);
    }
    std::vector<char*> args;
    for (auto& a : argv) {
      args.push_back(a.data());
    }
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  to_child_   = in[1];
  from_child_ = out[0];
}

std::optional<std::string> ChildProcess::read_line(int timeout_ms)
{
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (from_child_ < 0) { return std::nullopt; }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
    if (left <= 0) { return std::nullopt; }
    pollfd p{from_child_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) { continue; }
    char buf[4096];
    const auto n = ::read(from_child_, buf, sizeof buf);
    if (n <= 0) { return std::nullopt; }
    buffer_.append(buf, static_cast<std::size_t>(n));
  }
}

void ChildProcess::write_line(const std::string& line)
{
  const std::string l = line + "\n";
  if (to_child_ < 0 || ::write(to_child_, l.data(), l.size()) != static_cast<ssize_t>(l.size())) {
    throw std::runtime_error("writing to the server failed");
  }
}

void ChildProcess::stop(bool terminate) noexcept
{
  if (to_child_ >= 0) { ::close(to_child_); }
  if (from_child_ >= 0) { ::close(from_child_); }
  to_child_ = from_child_ = -1;
  if (pid_ <= 0) { return; }
  if (terminate) { ::kill(pid_, SIGTERM); }
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

// --------------------------------------------------------------------------- ServerProcess

ServerProcess::ServerProcess(std::vector<std::string> argv,
                             const std::string& name,
                             const std::string& log_path,
                             int ready_timeout_ms)
  : process_(std::move(argv), log_path)
{
  auto line = process_.read_line(ready_timeout_ms);
  if (!line || line->rfind("PORT ", 0) != 0) {
    process_.stop();
    throw std::runtime_error("server " + name + " did not start (see " + log_path +
                             "); got: " + line.value_or("<nothing>"));
  }
  port_ = std::stoi(line->substr(5));
}

std::string ServerProcess::command(const std::string& line, int timeout_ms)
{
  process_.write_line(line);
  auto reply = process_.read_line(timeout_ms);
  if (!reply) { throw std::runtime_error("no answer from the server to: " + line); }
  return *reply;
}

// ----------------------------------------------------------------------------- LocalServer

namespace {

/// A loopback port that was free a moment ago (nginx binds it right after).
int free_port()
{
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) { throw GenericSystemError("socket() for a free port"); }
  sockaddr_in a{};
  a.sin_family      = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len     = sizeof a;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(s);
    throw GenericSystemError("cannot find a free loopback port");
  }
  const int port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

bool port_open(int port)
{
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) { return false; }
  sockaddr_in a{};
  a.sin_family      = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port        = htons(static_cast<std::uint16_t>(port));
  const bool ok     = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

/// An executable `name` on PATH, else the first of `fallbacks` that exists.
std::string find_program(const std::string& name, const std::vector<std::string>& fallbacks)
{
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string dir; std::getline(ss, dir, ':');) {
      if (dir.empty()) { continue; }
      auto p = dir + "/" + name;
      if (::access(p.c_str(), X_OK) == 0) { return p; }
    }
  }
  for (const auto& p : fallbacks) {
    if (::access(p.c_str(), X_OK) == 0) { return p; }
  }
  return {};
}

void write_file(const std::string& path, const std::string& text)
{
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) { throw std::runtime_error("cannot write " + path); }
}

void write_random_file(const std::string& path, std::size_t size)
{
  std::ofstream f(path, std::ios::binary);
  std::mt19937_64 rng(2026);
  std::vector<std::uint64_t> chunk(std::size_t{1} << 17);
  for (std::size_t done = 0; done < size;) {
    for (auto& w : chunk) {
      w = rng();
    }
    const std::size_t n = std::min(size - done, chunk.size() * 8);
    f.write(reinterpret_cast<const char*>(chunk.data()), static_cast<std::streamsize>(n));
    done += n;
  }
  f.close();
  if (!f) { throw std::runtime_error("cannot write the benchmark file " + path); }
  ::chmod(path.c_str(), 0644);
}

std::string read_text(const std::string& path)
{
  std::string text;
  std::ifstream in(path);
  std::getline(in, text, '\0');
  return text;
}

}  // namespace

LocalServer::LocalServer(std::size_t size,
                         const std::string& kind,
                         const std::function<void(const std::string&)>& on_fallback)
{
  char tmpl[] = "/tmp/kvikio-bench-remote-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) { throw GenericSystemError("mkdtemp " + std::string(tmpl)); }
  dir_ = tmpl;
  try {
    ::chmod(dir_.c_str(), 0755);  // nginx workers run as an unprivileged user
    write_random_file(dir_ + "/data.bin", size);
    const std::string log = dir_ + "/server.log";
    const std::string nginx =
      kind == "nginx" ? find_program("nginx", {"/usr/sbin/nginx", "/usr/local/nginx/sbin/nginx"})
                      : "";
    int port = 0;
    if (!nginx.empty()) {
      port = free_port();
      std::ostringstream conf;
      // One worker per core (the benchmark's client threads share them); temporary files
      // in the server's own folder, so that nginx needs no writable /var/lib/nginx.
      conf << "worker_processes auto;\ndaemon off;\npid " << dir_ << "/nginx.pid;\n"
           << "error_log " << dir_ << "/error.log;\nevents { worker_connections 4096; }\n"
           << "http {\n  access_log off;\n  sendfile on;\n";
      for (const char* temp : {"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}) {
        conf << "  " << temp << "_temp_path " << dir_ << "/" << temp << ";\n";
      }
      conf << "  keepalive_requests 1000000;\n  server {\n    listen 127.0.0.1:" << port << ";\n"
           << "    root " << dir_ << ";\n  }\n}\n";
      write_file(dir_ + "/nginx.conf", conf.str());
      kind_ = "nginx (" + nginx + ")";
      nginx_.emplace(
        std::vector<std::string>{
          nginx, "-p", dir_, "-c", dir_ + "/nginx.conf", "-e", dir_ + "/error.log"},
        log);
      for (int i = 0; i < 400 && !port_open(port); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
      }
      if (!port_open(port)) {
        throw std::runtime_error("the local " + kind_ + " server did not start on port " +
                                 std::to_string(port) + ": " + read_text(log) +
                                 read_text(dir_ + "/error.log"));
      }
    } else {
      if (kind == "nginx" && on_fallback) {
        on_fallback("nginx not found (PATH, /usr/sbin/nginx): using Python");
      }
      const std::string script = dir_ + "/range_server.py";
      write_file(script, range_server_script());
      kind_ = "python (range_server.py)";
      try {
        python_.emplace(std::vector<std::string>{"python3", script, "--root", dir_, "--port", "0"},
                        "range_server.py",
                        log,
                        10000);
      } catch (const std::runtime_error& e) {
        throw std::runtime_error(std::string(e.what()) + ": " + read_text(log));
      }
      port = python_->port();
    }
    url_ = "http://127.0.0.1:" + std::to_string(port) + "/data.bin";
  } catch (...) {
    if (nginx_) { nginx_->stop(/*terminate=*/true); }
    remove_dir();
    throw;
  }
}

LocalServer::~LocalServer()
{
  if (nginx_) { nginx_->stop(/*terminate=*/true); }
  python_.reset();
  remove_dir();
}

void LocalServer::remove_dir() noexcept
{
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

}  // namespace kvikio::bench

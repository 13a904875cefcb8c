// `kvikio bench --remote`. Rounds alternate the limit (plain parallel libcurl range requests,
// detail::curl_parallel_range_get) and RemoteHandle::pread, into host memory, over the same
// bytes of the same URL, so both see the same server, network and page cache. The median of
// each counts; the report is the ratio.
#include "bench_remote.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/error.hpp>
#include <kvikio/remote_handle.hpp>

#include "options.hpp"
#include "timing.hpp"
#include "remote/baseline.hpp"

namespace kvikio::tool {
namespace {

void progress(const std::string& line)
{
  std::cerr << "[kvikio bench --remote] " << line << std::endl;
}

/// A loopback port that was free a moment ago (the server binds it right after).
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
  int port = ntohs(a.sin_port);
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
  bool ok           = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
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

/// tests/servers, for the python fallback only: $KVIKIO_TEST_SERVERS_DIR, the source tree
/// this tool was built from, or beside the executable's build tree.
std::string find_servers_dir()
{
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("KVIKIO_TEST_SERVERS_DIR")) { candidates.emplace_back(env); }
#ifdef KVIKIO_TEST_SERVERS_DIR
  candidates.emplace_back(KVIKIO_TEST_SERVERS_DIR);
#endif
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) { candidates.push_back((exe.parent_path() / "../../tests/servers").string()); }
  std::string tried;
  for (const auto& c : candidates) {
    if (std::filesystem::exists(std::filesystem::path(c) / "range_server.py", ec)) { return c; }
    tried += (tried.empty() ? "" : ", ") + c;
  }
  throw std::runtime_error(
    "no nginx found (PATH, /usr/sbin/nginx) and tests/servers/range_server.py is not in any of: " +
    (tried.empty() ? std::string("(none)") : tried) + "; set KVIKIO_TEST_SERVERS_DIR");
}

/// A server started on loopback for `--remote local`: its process, its scratch directory
/// (the served file, config, logs), both removed on destruction.
class LocalServer {
 public:
  LocalServer(std::size_t size, std::string kind)
  {
    char tmpl[] = "/tmp/kvikio-bench-remote-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) { throw GenericSystemError("mkdtemp " + std::string(tmpl)); }
    dir_ = tmpl;
    ::chmod(dir_.c_str(), 0755);  // nginx workers run as an unprivileged user
    write_random_file(dir_ + "/data.bin", size);
    const int port = free_port();
    std::string nginx =
      kind == "nginx" ? find_program("nginx", {"/usr/sbin/nginx", "/usr/local/nginx/sbin/nginx"})
                      : "";
    if (!nginx.empty()) {
      std::ofstream conf(dir_ + "/nginx.conf");
      conf << "worker_processes 2;\ndaemon off;\npid " << dir_ << "/nginx.pid;\n"
           << "error_log " << dir_ << "/error.log;\nevents { worker_connections 1024; }\n"
           << "http {\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n"
           << "  keepalive_requests 1000000;\n  server {\n    listen 127.0.0.1:" << port << ";\n"
           << "    root " << dir_ << ";\n  }\n}\n";
      conf.close();
      kind_ = "nginx (" + nginx + ")";
      pid_  = spawn({nginx, "-p", dir_, "-c", dir_ + "/nginx.conf", "-e", dir_ + "/error.log"});
    } else {
      if (kind == "nginx") { progress("nginx not found (PATH, /usr/sbin/nginx): using Python"); }
      auto script = find_servers_dir() + "/range_server.py";
      kind_       = "python (" + script + ")";
      pid_        = spawn(
        {"python3", script, "--root", dir_, "--port", std::to_string(port), "--no-stdin-watch"});
    }
    for (int i = 0; i < 400 && !port_open(port); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    if (!port_open(port)) {
      std::string log;
      std::ifstream in(dir_ + "/server.log");
      std::getline(in, log, '\0');
      stop();
      throw std::runtime_error("the local " + kind_ + " server did not start on port " +
                               std::to_string(port) + ": " + log);
    }
    url_ = "http://127.0.0.1:" + std::to_string(port) + "/data.bin";
  }
  LocalServer(const LocalServer&)            = delete;
  LocalServer& operator=(const LocalServer&) = delete;
  ~LocalServer() { stop(); }

  [[nodiscard]] const std::string& url() const noexcept { return url_; }
  [[nodiscard]] const std::string& kind() const noexcept { return kind_; }

 private:
  static void write_random_file(const std::string& path, std::size_t size)
  {
    std::ofstream f(path, std::ios::binary);
    std::mt19937_64 rng(2026);
    std::vector<std::uint64_t> chunk(std::size_t{1} << 17);
    for (std::size_t done = 0; done < size;) {
      for (auto& w : chunk) {
        w = rng();
      }
      std::size_t n = std::min(size - done, chunk.size() * 8);
      f.write(reinterpret_cast<const char*>(chunk.data()), static_cast<std::streamsize>(n));
      done += n;
    }
    if (!f) { throw std::runtime_error("cannot write the benchmark file " + path); }
    f.close();
    ::chmod(path.c_str(), 0644);
  }

  pid_t spawn(std::vector<std::string> args)
  {
    const std::string log = dir_ + "/server.log";
    pid_t pid             = ::fork();
    if (pid < 0) { throw GenericSystemError("fork for " + args[0]); }
    if (pid == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      std::vector<char*> argv;
      for (auto& a : args) {
        argv.push_back(a.data());
      }
      argv.push_back(nullptr);
      ::execvp(argv[0], argv.data());
      ::_exit(127);
    }
    return pid;
  }

  void stop() noexcept
  {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }

  std::string dir_;
  std::string url_;
  std::string kind_;
  pid_t pid_{-1};
};

/// JSON string literal of `s` (URLs and paths: quotes, backslashes and control bytes escaped).
std::string json_str(const std::string& s)
{
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(
        buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// The limit needs a URL that plain unsigned range GETs can read: HTTP, public S3 and
/// presigned S3 qualify; signed S3 and WebHDFS (a redirect per range) have no limit here.
bool limit_applies(RemoteEndpointType t)
{
  return t == RemoteEndpointType::HTTP || t == RemoteEndpointType::S3_PUBLIC ||
         t == RemoteEndpointType::S3_PRESIGNED_URL;
}

}  // namespace

int run_bench_remote(const RemoteBenchOptions& o)
{
  if (o.target.empty()) { throw std::invalid_argument("--remote needs a URL or 'local'"); }
  if (o.server != "nginx" && o.server != "python") {
    throw std::invalid_argument("--remote-server: '" + o.server + "' is not nginx or python");
  }
  std::optional<LocalServer> local;
  std::string url = o.target;
  if (o.target == "local") {
    progress("writing " + format_bytes(static_cast<double>(o.size)) +
             " of random bytes and "
             "starting a local server");
    local.emplace(o.size, o.server);
    url = local->url();
    progress("serving " + url + " from " + local->kind());
  }

  defaults::set_num_threads(o.threads);
  defaults::set_task_size(o.task_size);
  auto handle = RemoteHandle::open(url);
  const std::size_t size =
    o.size_given || local ? std::min(o.size, handle.nbytes()) : handle.nbytes();
  if (size == 0) { throw std::invalid_argument("--remote: " + redact_url(url) + " is empty"); }
  const bool has_limit    = limit_applies(handle.remote_endpoint_type());
  const std::string raw   = handle.endpoint().url();  // may hold a presigned signature: not shown
  const std::string shown = redact_url(url);
  progress(shown + " (" + to_string(handle.remote_endpoint_type()) + "), reading " +
           format_bytes(static_cast<double>(size)) + " with " + std::to_string(o.threads) +
           " threads, task size " + format_bytes(static_cast<double>(o.task_size)));

  std::vector<char> ours(size), theirs(size);
  // Touch every page so that neither side pays first-touch faults in its timing.
  std::memset(ours.data(), 1, size);
  std::memset(theirs.data(), 2, size);
  // Warm up (server page cache, connections) and check both read the same bytes.
  progress("warming up");
  handle.pread(ours.data(), size, 0, o.task_size).get();
  if (has_limit) {
    detail::curl_parallel_range_get(raw, theirs.data(), size, 0, o.task_size, o.threads);
    if (std::memcmp(ours.data(), theirs.data(), size) != 0) {
      throw Error("kvikio and plain parallel curl read different bytes from " + shown);
    }
  }
  std::vector<double> ours_s, limit_s;
  for (unsigned int rep = 1; rep <= o.repetitions; ++rep) {
    progress("read " + std::to_string(rep) + "/" + std::to_string(o.repetitions));
    if (has_limit) {
      limit_s.push_back(seconds_of([&] {
        detail::curl_parallel_range_get(raw, theirs.data(), size, 0, o.task_size, o.threads);
      }));
    }
    ours_s.push_back(seconds_of([&] { handle.pread(ours.data(), size, 0, o.task_size).get(); }));
  }
  const double gb          = static_cast<double>(size) / 1e9;
  const double ours_gbps   = gb / median(ours_s);
  const double limit_gbps  = has_limit ? gb / median(limit_s) : 0.0;
  const std::string server = local ? local->kind() : "";

  if (o.json) {
    std::printf(
      "{\"url\": %s, \"endpoint\": %s, \"server\": %s, \"size\": %zu, \"threads\": %u, "
      "\"task_size\": %zu, \"memory\": \"host\", \"repetitions\": %u, \"results\": "
      "[{\"op\": \"read\", \"kvikio_gbps\": %.3f, ",
      json_str(shown).c_str(),
      json_str(to_string(handle.remote_endpoint_type())).c_str(),
      local ? json_str(server).c_str() : "null",
      size,
      o.threads,
      o.task_size,
      o.repetitions,
      ours_gbps);
    if (has_limit) {
      std::printf("\"limit_gbps\": %.3f, \"ratio\": %.3f}]}\n", limit_gbps, ours_gbps / limit_gbps);
    } else {
      std::printf("\"limit_gbps\": null, \"ratio\": null}]}\n");
    }
  } else {
    std::printf("%-8s %-8s %14s %20s %8s\n", "op", "memory", "kvikio GB/s", "limit GB/s", "ratio");
    if (has_limit) {
      std::printf("%-8s %-8s %14.2f %13.2f (%s) %7.2fx\n",
                  "read",
                  "host",
                  ours_gbps,
                  limit_gbps,
                  "curl",
                  ours_gbps / limit_gbps);
    } else {
      std::printf("%-8s %-8s %14.2f %20s %8s\n", "read", "host", ours_gbps, "n/a", "n/a");
    }
    std::printf(
      "(%s of %s%s, %u threads, task size %s, median of %u; limit = plain parallel libcurl "
      "range GETs over the same URL and memory%s)\n",
      format_bytes(static_cast<double>(size)).c_str(),
      shown.c_str(),
      local ? (" served by " + server).c_str() : "",
      o.threads,
      format_bytes(static_cast<double>(o.task_size)).c_str(),
      o.repetitions,
      has_limit ? "" : "; none for signed S3 or WebHDFS");
  }
  return 0;
}

}  // namespace kvikio::tool

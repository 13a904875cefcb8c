// Remote read throughput: RemoteHandle::pread into host memory against plain parallel libcurl
// range requests (detail::curl_parallel_range_get) on the same bytes, in the same run.
//
//   bench_remote --url URL [--size N] [--threads N] [--task-size N] [--repeat N]
//   bench_remote --local [--server nginx|python] [--size N] ...   (starts a server itself)
//
// --local writes a file of random bytes (default 1 GiB) to a temporary directory and serves it
// from nginx on loopback (or tests/servers/range_server.py with --server python). Rounds
// alternate baseline and kvikio; the report gives each one's best and median and the ratio.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <kvikio/defaults.hpp>
#include <kvikio/remote_handle.hpp>

#include "remote/baseline.hpp"

namespace {

struct Options {
  std::string url;
  bool local{false};
  std::string server{"nginx"};
  std::size_t size{std::size_t{1} << 30};
  unsigned threads{4};
  std::size_t task_size{std::size_t{8} << 20};
  int repeat{5};
  std::string servers_dir;
};

int free_port()
{
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family      = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

bool port_open(int port)
{
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family      = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port        = htons(static_cast<uint16_t>(port));
  bool ok           = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

pid_t spawn(std::vector<std::string> args, const std::string& log)
{
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
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

std::string find_nginx()
{
  for (const char* p : {"/usr/sbin/nginx",
                        "/usr/bin/nginx",
                        "/usr/local/sbin/nginx",
                        "/usr/local/nginx/sbin/nginx"}) {
    if (::access(p, X_OK) == 0) { return p; }
  }
  return {};
}

double gbps(std::size_t bytes, double seconds)
{
  return static_cast<double>(bytes) / seconds / 1e9;
}

double median(std::vector<double> v)
{
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
  Options o;
  o.servers_dir = std::filesystem::path(argv[0]).parent_path().string();
#ifdef KVIKIO_TEST_SERVERS_DIR
  o.servers_dir = KVIKIO_TEST_SERVERS_DIR;
#endif
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next     = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--url") {
      o.url = next();
    } else if (a == "--local") {
      o.local = true;
    } else if (a == "--server") {
      o.server = next();
    } else if (a == "--size") {
      o.size = std::stoull(next());
    } else if (a == "--threads") {
      o.threads = static_cast<unsigned>(std::stoul(next()));
    } else if (a == "--task-size") {
      o.task_size = std::stoull(next());
    } else if (a == "--repeat") {
      o.repeat = std::stoi(next());
    } else {
      std::cerr << "usage: bench_remote (--url URL | --local [--server nginx|python]) [--size N]"
                   " [--threads N] [--task-size N] [--repeat N]\n";
      return 2;
    }
  }
  if (o.url.empty() && !o.local) {
    std::cerr << "bench_remote: give --url URL or --local\n";
    return 2;
  }

  std::string tmpdir;
  pid_t server_pid = -1;
  if (o.local) {
    char tmpl[] = "/tmp/kvikio-bench-XXXXXX";
    tmpdir      = ::mkdtemp(tmpl);
    ::chmod(tmpdir.c_str(), 0755);  // nginx workers run as an unprivileged user
    {
      std::ofstream f(tmpdir + "/data.bin", std::ios::binary);
      std::mt19937_64 rng(1);
      std::vector<std::uint64_t> chunk(1 << 17);
      for (std::size_t done = 0; done < o.size;) {
        for (auto& w : chunk) {
          w = rng();
        }
        std::size_t n = std::min(o.size - done, chunk.size() * 8);
        f.write(reinterpret_cast<const char*>(chunk.data()), static_cast<std::streamsize>(n));
        done += n;
      }
    }
    ::chmod((tmpdir + "/data.bin").c_str(), 0644);
    int port   = free_port();
    auto nginx = find_nginx();
    if (o.server == "nginx" && !nginx.empty()) {
      std::ofstream conf(tmpdir + "/nginx.conf");
      conf << "worker_processes 2;\ndaemon off;\npid " << tmpdir << "/nginx.pid;\n"
           << "error_log " << tmpdir << "/error.log;\nevents { worker_connections 1024; }\n"
           << "http {\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n"
           << "  keepalive_requests 1000000;\n  server {\n    listen 127.0.0.1:" << port << ";\n"
           << "    root " << tmpdir << ";\n  }\n}\n";
      conf.close();
      server_pid =
        spawn({nginx, "-p", tmpdir, "-c", tmpdir + "/nginx.conf", "-e", tmpdir + "/error.log"},
              tmpdir + "/server.log");
    } else {
      o.server   = "python";
      server_pid = spawn({"python3",
                          o.servers_dir + "/range_server.py",
                          "--root",
                          tmpdir,
                          "--port",
                          std::to_string(port),
                          "--no-stdin-watch"},
                         tmpdir + "/server.log");
    }
    for (int i = 0; i < 200 && !port_open(port); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    if (!port_open(port)) {
      std::cerr << "bench_remote: the " << o.server << " server did not start (see " << tmpdir
                << "/server.log)\n";
      if (server_pid > 0) { ::kill(server_pid, SIGTERM); }
      return 1;
    }
    o.url = "http://127.0.0.1:" + std::to_string(port) + "/data.bin";
  }

  int rc = 0;
  try {
    kvikio::defaults::set_num_threads(o.threads);
    auto handle      = kvikio::RemoteHandle::open(o.url);
    std::size_t size = std::min(o.size, handle.nbytes());
    std::vector<char> a(size), b(size);
    // Touch the pages once so neither side pays the first-touch faults in its timing.
    std::memset(a.data(), 1, size);
    std::memset(b.data(), 2, size);
    using clock = std::chrono::steady_clock;
    // Warm up: server page cache, connections.
    kvikio::detail::curl_parallel_range_get(o.url, a.data(), size, 0, o.task_size, o.threads);
    handle.pread(b.data(), size, 0, o.task_size).get();
    if (std::memcmp(a.data(), b.data(), size) != 0) {
      std::cerr << "bench_remote: kvikio and the baseline read different bytes\n";
      return 1;
    }
    std::vector<double> base_s, kvikio_s;
    for (int r = 0; r < o.repeat; ++r) {
      auto t0 = clock::now();
      kvikio::detail::curl_parallel_range_get(o.url, a.data(), size, 0, o.task_size, o.threads);
      auto t1 = clock::now();
      handle.pread(b.data(), size, 0, o.task_size).get();
      auto t2 = clock::now();
      base_s.push_back(std::chrono::duration<double>(t1 - t0).count());
      kvikio_s.push_back(std::chrono::duration<double>(t2 - t1).count());
    }
    double base_best = gbps(size, *std::min_element(base_s.begin(), base_s.end()));
    double kv_best   = gbps(size, *std::min_element(kvikio_s.begin(), kvikio_s.end()));
    double base_med  = gbps(size, median(base_s));
    double kv_med    = gbps(size, median(kvikio_s));
    std::printf(
      "url            %s%s\n", o.url.c_str(), o.local ? (" (local " + o.server + ")").c_str() : "");
    std::printf("bytes          %zu, threads %u, task_size %zu, rounds %d\n",
                size,
                o.threads,
                o.task_size,
                o.repeat);
    std::printf("parallel curl  best %.3f GB/s, median %.3f GB/s\n", base_best, base_med);
    std::printf("kvikio pread   best %.3f GB/s, median %.3f GB/s\n", kv_best, kv_med);
    std::printf("ratio          best %.3f, median %.3f (kvikio / parallel curl)\n",
                kv_best / base_best,
                kv_med / base_med);
  } catch (const std::exception& e) {
    std::cerr << "bench_remote: " << e.what() << "\n";
    rc = 1;
  }
  if (server_pid > 0) {
    ::kill(server_pid, SIGTERM);
    ::waitpid(server_pid, nullptr, 0);
  }
  if (!tmpdir.empty()) { std::filesystem::remove_all(tmpdir); }
  return rc;
}

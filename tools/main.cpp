// The `kvikio` command-line tool.
#include <cstdio>
#include <exception>
#include <string>
#include <system_error>

#include <kvikio/version.hpp>

#include "bench.hpp"
#include "info.hpp"

namespace {

const char* usage =
  "usage: kvikio <command> [options]\n"
  "  info      version, libraries found, GDS availability, settings and their sources\n"
  "  bench     write then read a file, next to the machine's own limit (kvikio bench --help)\n"
  "  version   print the version\n";

}  // namespace

int main(int argc, char** argv)
{
  const std::string command = argc > 1 ? argv[1] : "";
  try {
    if (command == "info") { return kvikio::tool::run_info(argc, argv, 2); }
    if (command == "bench") { return kvikio::tool::run_bench(argc, argv, 2); }
    if (command == "version" || command == "--version") {
      std::printf("%s\n", KVIKIO_VERSION_STRING);
      return 0;
    }
    if (command == "help" || command == "--help" || command == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    std::fprintf(stderr, "kvikio: unknown command '%s'\n%s", command.c_str(), usage);
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "kvikio %s: %s\n", command.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvikio %s: error: %s\n", command.c_str(), e.what());
    return 1;
  }
}

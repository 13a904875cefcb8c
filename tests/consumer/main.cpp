// Writes and reads back a file through the installed library.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include <kvikio/kvikio.hpp>

int main()
{
  const auto path = std::filesystem::temp_directory_path() / "kvikio-consumer.bin";
  std::vector<unsigned char> out(1 << 20), in(out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<unsigned char>(i * 2654435761U >> 13);
  }
  {
    kvikio::FileHandle f(path.string(), "w");
    f.pwrite(out.data(), out.size()).get();
  }
  kvikio::FileHandle f(path.string(), "r");
  const auto n = f.pread(in.data(), in.size()).get();
  std::filesystem::remove(path);
  if (n != out.size() || std::memcmp(in.data(), out.data(), out.size()) != 0) {
    std::puts("consumer: data mismatch");
    return 1;
  }
  std::printf("consumer: kvikio %s read back %zu bytes\n", KVIKIO_VERSION_STRING, n);
  return 0;
}

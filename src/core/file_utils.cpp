// file_utils.hpp's descriptor helpers (FileWrapper, open flags, sizes) and the block device
// under a file, read from sysfs. The page-cache helpers are in page_cache.cpp.
#include <kvikio/file_utils.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <utility>

#include <kvikio/error.hpp>

#include "core/open_file.hpp"

namespace kvikio {

FileWrapper::FileWrapper(const std::string& file_path,
                         const std::string& flags,
                         bool o_direct,
                         mode_t mode)
  : fd_(open_fd(file_path, flags, o_direct, mode))
{
}

FileWrapper::~FileWrapper() noexcept { close(); }

FileWrapper::FileWrapper(FileWrapper&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}

FileWrapper& FileWrapper::operator=(FileWrapper&& o) noexcept
{
  if (this != &o) {
    close();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

void FileWrapper::open(const std::string& file_path,
                       const std::string& flags,
                       bool o_direct,
                       mode_t mode)
{
  close();
  fd_ = open_fd(file_path, flags, o_direct, mode);
}

bool FileWrapper::opened() const noexcept { return fd_ >= 0; }

void FileWrapper::close() noexcept
{
  if (fd_ >= 0) { ::close(std::exchange(fd_, -1)); }
}

int FileWrapper::fd() const noexcept { return fd_; }

int open_fd_parse_flags(const std::string& flags, bool o_direct)
{
  int oflags = detail::open_flags_from_mode(flags);
  if (o_direct) { oflags |= O_DIRECT; }
  return oflags;
}

int open_fd(const std::string& file_path, const std::string& flags, bool o_direct, mode_t mode)
{
  const int fd = ::open(file_path.c_str(), open_fd_parse_flags(flags, o_direct), mode);
  if (fd < 0) {
    throw GenericSystemError("Unable to open file '" + file_path + "' with flags '" + flags + "'" +
                             (o_direct ? " and O_DIRECT" : ""));
  }
  return fd;
}

int open_flags(int fd)
{
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) {
    throw GenericSystemError("fcntl(F_GETFL) on descriptor " + std::to_string(fd) + " failed");
  }
  return flags;
}

std::size_t get_file_size(const std::string& file_path)
{
  struct stat st {};
  if (::stat(file_path.c_str(), &st) != 0) {
    throw GenericSystemError("cannot stat '" + file_path + "'");
  }
  return static_cast<std::size_t>(st.st_size);
}

std::size_t get_file_size(int file_descriptor)
{
  struct stat st {};
  if (::fstat(file_descriptor, &st) != 0) {
    throw GenericSystemError("cannot fstat descriptor " + std::to_string(file_descriptor));
  }
  return static_cast<std::size_t>(st.st_size);
}

namespace {

/// The "MAJ:MIN" that a sysfs `dev` file holds, or nothing.
/// "nvme<digits>" (a controller) or, with `with_namespace`, "nvme<digits>n<digits>" (one of
/// its namespaces). Not std::regex: its templates would be exported from libkvikio.so.
bool is_nvme_name(std::string_view name, bool with_namespace)
{
  if (!name.starts_with("nvme")) { return false; }
  name.remove_prefix(4);
  auto digits = [&name] {
    std::size_t n = 0;
    while (n < name.size() && name[n] >= '0' && name[n] <= '9') {
      ++n;
    }
    name.remove_prefix(n);
    return n > 0;
  };
  if (!digits()) { return false; }
  if (with_namespace) {
    if (name.empty() || name.front() != 'n') { return false; }
    name.remove_prefix(1);
    if (!digits()) { return false; }
  }
  return name.empty();
}

std::optional<dev_t> read_dev_file(const std::filesystem::path& dir)
{
  std::ifstream in(dir / "dev");
  unsigned major = 0;
  unsigned minor = 0;
  char colon     = 0;
  if (!(in >> major >> colon >> minor) || colon != ':') { return std::nullopt; }
  return makedev(major, minor);
}

BlockDeviceInfo info_of(dev_t id, std::string name)
{
  return {id, static_cast<unsigned>(major(id)), static_cast<unsigned>(minor(id)), std::move(name)};
}

}  // namespace

BlockDeviceInfo get_block_device_info(const std::string& file_path)
{
  namespace fs = std::filesystem;
  struct stat st {};
  if (::stat(file_path.c_str(), &st) != 0) {
    throw GenericSystemError("cannot stat '" + file_path + "'");
  }
  // A file system on a block device has that device's number as st_dev; tmpfs, overlayfs,
  // NFS and FUSE get an anonymous number (major 0) that /sys/dev/block does not list.
  const std::string key = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  std::error_code ec;
  const fs::path dev_dir = fs::canonical(fs::path("/sys/dev/block") / key, ec);
  if (ec || major(st.st_dev) == 0) {
    throw GenericSystemError(ENODEV,
                             "'" + file_path + "' (device " + key +
                               ") is not on a local block device (a virtual or network file "
                               "system?)");
  }
  fs::path dir = dev_dir;
  dev_t id     = st.st_dev;
  // A partition's sysfs directory sits inside its disk's, and has a `partition` file.
  if (fs::exists(dir / "partition", ec)) {
    dir = dir.parent_path();
    if (auto parent = read_dev_file(dir)) { id = *parent; }
  }
  // An NVMe namespace (nvme0n1) sits inside its controller's directory (nvme0), whose `dev`
  // is the controller's character device. Multipath namespaces sit in an nvme-subsystem
  // directory instead and stay as they are.
  if (is_nvme_name(dir.filename().string(), true) &&
      is_nvme_name(dir.parent_path().filename().string(), false)) {
    dir = dir.parent_path();
    if (auto controller = read_dev_file(dir)) { id = *controller; }
  }
  return info_of(id, dir.filename().string());
}

}  // namespace kvikio

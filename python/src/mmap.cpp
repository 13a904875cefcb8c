// kvikio._lib.MmapHandle: a read-only memory map of a file.
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <kvikio/mmap.hpp>

#include "args.hpp"
#include "bindings.hpp"
#include "buffer.hpp"
#include "future.hpp"
#include "os_error.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace kvikio::python {
namespace {

class Mmap {
 public:
  Mmap(const std::string& path,
       const std::string& flags,
       nb::handle initial_map_size,
       nb::handle initial_map_offset,
       mode_t mode,
       std::optional<int> map_flags)
    : path_(path)
  {
    auto size   = to_opt_size(initial_map_size, "initial_map_size");
    auto offset = to_size(initial_map_offset, "initial_map_offset");
    auto handle = std::make_shared<MmapHandle>();
    {
      nb::gil_scoped_release release;
      *handle = MmapHandle(path, flags, size, offset, mode, map_flags);
    }
    handle_ = std::move(handle);
  }
  /// Drops this object's hold on the mapping: it is unmapped once no read (blocking, or a
  /// pread's IOFuture) uses it any more.
  void close() noexcept { handle_.reset(); }
  [[nodiscard]] bool closed() const noexcept { return !handle_ || handle_->closed(); }
  [[nodiscard]] std::size_t file_size() const { return checked()->file_size(); }
  [[nodiscard]] std::size_t initial_map_size() const { return checked()->initial_map_size(); }
  [[nodiscard]] std::size_t initial_map_offset() const { return checked()->initial_map_offset(); }

  std::size_t read(nb::handle buf, nb::handle size, nb::handle offset)
  {
    auto view     = BufferView::from_object(buf, true);
    auto handle   = checked(kReadClosed);
    auto [n, off] = checked_range(*handle, view, size, offset);
    nb::gil_scoped_release release;
    return handle->read(view.ptr(), n, off);
  }

  IOFuture pread(nb::handle buf, nb::handle size, nb::handle offset, nb::handle task_size)
  {
    auto view            = BufferView::from_object(buf, true);
    auto handle          = checked(kReadClosed);
    auto [n, off]        = checked_range(*handle, view, size, offset);
    const std::size_t ts = task_size_or_default(task_size);
    auto future          = handle->pread(view.ptr(), n, off, ts);
    // The tasks read from the mapping: the future keeps it mapped until they are done.
    return {std::move(future), std::move(view), std::move(handle)};
  }

 private:
  /// (bytes, offset) of a read: `size`, or from `offset` to the end of the mapped range; a
  /// size larger than the buffer is a ValueError, a range outside the mapping an IndexError
  /// (raised by the C++ call).
  static std::pair<std::optional<std::size_t>, std::size_t> checked_range(const MmapHandle& handle,
                                                                          const BufferView& view,
                                                                          nb::handle size,
                                                                          nb::handle offset)
  {
    auto n                    = to_opt_size(size, "size");
    const auto off            = to_size(offset, "offset");
    const std::size_t begin   = handle.initial_map_offset();
    const std::size_t map_end = begin + handle.initial_map_size();
    std::size_t bytes         = n.value_or(off >= begin && off <= map_end ? map_end - off : 0);
    if (bytes > view.nbytes()) {
      throw nb::value_error(("mmap read of " + std::to_string(bytes) + " bytes does not fit the " +
                             std::to_string(view.nbytes()) + "-byte " + view.type_name() +
                             " buffer")
                              .c_str());
    }
    return {n, off};
  }
  // Upstream's callers match "Cannot read from a closed MmapHandle" on a read.
  static constexpr const char* kReadClosed = "Cannot read from a closed MmapHandle: ";
  [[nodiscard]] std::shared_ptr<MmapHandle> checked(const char* prefix = "") const
  {
    if (closed()) {
      throw_closed(prefix + std::string("I/O operation on closed mapping of '") + path_ + "'");
    }
    return handle_;
  }
  std::string path_;
  std::shared_ptr<MmapHandle> handle_;
};

}  // namespace

void bind_mmap(nb::module_& m)
{
  nb::class_<Mmap>(m, "MmapHandle", "A read-only memory map of a file (libkvikio's MmapHandle).")
    .def(nb::init<const std::string&,
                  const std::string&,
                  nb::handle,
                  nb::handle,
                  mode_t,
                  std::optional<int>>(),
         "path"_a,
         "flags"_a              = "r",
         "initial_map_size"_a   = nb::none(),
         "initial_map_offset"_a = 0,
         "mode"_a               = 0644,
         "map_flags"_a          = nb::none())
    .def("close", &Mmap::close)
    .def_prop_ro("closed", &Mmap::closed)
    .def("file_size", &Mmap::file_size)
    .def("initial_map_size", &Mmap::initial_map_size)
    .def("initial_map_offset", &Mmap::initial_map_offset)
    .def("read", &Mmap::read, "buf"_a, "size"_a = nb::none(), "offset"_a = 0)
    .def("pread",
         &Mmap::pread,
         "buf"_a,
         "size"_a      = nb::none(),
         "offset"_a    = 0,
         "task_size"_a = nb::none());
}

}  // namespace kvikio::python

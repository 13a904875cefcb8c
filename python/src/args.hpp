#pragma once
// Turning Python arguments into sizes and offsets, checked before any IO, and the argument
// lists shared by the IO methods of FileHandle, MmapHandle and RemoteFile.
#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>

#include <nanobind/nanobind.h>

#include "buffer.hpp"

namespace kvikio::python {

/// repr(v), for messages.
std::string repr_of(nanobind::handle v);

/// A non-negative integer argument. Negative values raise OverflowError naming the argument
/// and the value (they cannot be an offset or size); non-integers raise TypeError.
std::size_t to_size(nanobind::handle value, const char* what);

/// None, or to_size(value).
std::optional<std::size_t> to_opt_size(nanobind::handle value, const char* what);

/// `v` as an off_t; OverflowError naming `what` when it does not fit.
off_t to_off_t(std::size_t v, const char* what);

/// `task_size`, or the default task size when it is None.
std::size_t task_size_or_default(nanobind::handle task_size);

/// The byte count of a request: `size`, or the whole buffer after `buf_offset`; ValueError
/// when it does not fit the buffer (`offset_name` names `buf_offset` in the message).
std::size_t request_size(const BufferView& view,
                         nanobind::handle size,
                         std::size_t buf_offset  = 0,
                         const char* offset_name = nullptr);

/// The default file offset of an IO method: 0 (reads), or None (writes: 0, or the end of a
/// file opened with "a"), which is also the only case where None is accepted.
enum class DefaultOffset : bool { ZERO, NONE };

/// Defines `name` on `cls` with the arguments of a parallel read or write:
/// (buf, size=None, file_offset=0|None, task_size=None).
template <typename Class, typename Method>
void def_parallel_io(Class& cls, const char* name, Method method, DefaultOffset offset)
{
  using namespace nanobind::literals;
  if (offset == DefaultOffset::NONE) {
    cls.def(name,
            method,
            "buf"_a,
            "size"_a        = nanobind::none(),
            "file_offset"_a = nanobind::none(),
            "task_size"_a   = nanobind::none());
  } else {
    cls.def(name,
            method,
            "buf"_a,
            "size"_a        = nanobind::none(),
            "file_offset"_a = 0,
            "task_size"_a   = nanobind::none());
  }
}

/// Defines `name` on `cls` with the arguments of a raw (single, device) read or write:
/// (buf, size=None, file_offset=0|None, dev_offset=0).
template <typename Class, typename Method>
void def_raw_io(Class& cls, const char* name, Method method, DefaultOffset offset)
{
  using namespace nanobind::literals;
  if (offset == DefaultOffset::NONE) {
    cls.def(name,
            method,
            "buf"_a,
            "size"_a        = nanobind::none(),
            "file_offset"_a = nanobind::none(),
            "dev_offset"_a  = 0);
  } else {
    cls.def(
      name, method, "buf"_a, "size"_a = nanobind::none(), "file_offset"_a = 0, "dev_offset"_a = 0);
  }
}

}  // namespace kvikio::python

#pragma once
// One registration function per area of kvikio._lib; module.cpp calls them in order.
#include <nanobind/nanobind.h>

namespace kvikio::python {

void bind_settings(nanobind::module_& m);      // CompatMode, defaults_*, is_compat_mode_preferred
void bind_future(nanobind::module_& m);        // IOFuture, StreamIOFuture
void bind_future_await(nanobind::module_& m);  // the waiter threads behind `await IOFuture`
void bind_buffer(nanobind::module_& m);  // is_device_buffer, memory_(de)register, bounce buffers
void bind_file(nanobind::module_& m);    // FileHandle, page-cache helpers
void bind_mmap(nanobind::module_& m);    // MmapHandle
void bind_driver(nanobind::module_& m);  // cuFile driver properties, stream registration
void bind_log(nanobind::module_& m);     // the library log into Python's logging
void bind_fresh_bytes(nanobind::module_& m);  // bytes to read into (kvikio.fsspec)
void bind_remote(nanobind::module_& m);       // RemoteFile, RemoteEndpointType, remote errors

}  // namespace kvikio::python

#include "buffer.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// Without the std::string caster here nb::cast<std::string> (type names in messages) is the
// generic caster, which fails at run time with std::bad_cast.
#include <nanobind/stl/string.h>

#include <kvikio/bounce_buffer.hpp>
#include <kvikio/buffer.hpp>
#include <kvikio/stream.hpp>

#include "bindings.hpp"

namespace nb = nanobind;

namespace kvikio::python {
namespace {

// The DLPack ABI (https://dmlc.github.io/dlpack/latest/c_api.html), declared here from the
// specification so that no extra header is needed. Only what a consumer reads.
struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};
struct DLPackVersion {
  std::uint32_t major;
  std::uint32_t minor;
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned*);
  std::uint64_t flags;
  DLTensor dl_tensor;
};
constexpr std::int32_t kDLCPU           = 1;
constexpr std::int32_t kDLCUDA          = 2;
constexpr std::int32_t kDLCUDAHost      = 3;
constexpr std::int32_t kDLCUDAManaged   = 13;
constexpr std::uint64_t kDLFlagReadOnly = 1ULL << 0;

std::string type_name_of(nb::handle obj)
{
  nb::handle type = reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()));
  std::string module;
  if (nb::hasattr(type, "__module__")) {
    module = nb::cast<std::string>(nb::str(type.attr("__module__")));
  }
  std::string name = nb::cast<std::string>(nb::str(type.attr("__qualname__")));
  return module.empty() || module == "builtins" ? name : module + "." + name;
}

/// Types that expose host memory through the buffer protocol and nothing else: they skip
/// the attribute lookup for __cuda_array_interface__ (it costs a failed lookup per call).
bool plain_host_buffer(PyObject* o)
{
  if (PyBytes_CheckExact(o) || PyByteArray_CheckExact(o) || PyMemoryView_Check(o)) { return true; }
  return std::strcmp(Py_TYPE(o)->tp_name, "numpy.ndarray") == 0;
}

[[noreturn]] void value_error(const std::string& msg) { throw nb::value_error(msg.c_str()); }

/// True when `strides` (bytes) describe a C-contiguous layout of `shape` with `itemsize`.
bool c_contiguous(const std::vector<std::int64_t>& shape,
                  const std::vector<std::int64_t>& strides,
                  std::int64_t itemsize)
{
  std::int64_t expected = itemsize;
  for (std::size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 0) { return true; }  // empty: nothing to lay out
    if (shape[i] != 1 && strides[i] != expected) { return false; }
    expected *= shape[i];
  }
  return true;
}

/// The first item code of a PEP 3118 format string that kvikio refuses, or 0: 'O' (PyObject
/// pointers) always: reading would turn file bytes into object pointers (a crash), writing
/// would store heap addresses. For reads also the pointer codes '&' and 'P', which file bytes
/// would turn into addresses. Field names (between colons) are skipped. A null format means
/// unsigned bytes.
char refused_format_code(const char* format, bool writable)
{
  if (format == nullptr) { return 0; }
  bool in_name = false;
  for (const char* c = format; *c != '\0'; ++c) {
    if (*c == ':') {
      in_name = !in_name;
    } else if (!in_name && (*c == 'O' || (writable && (*c == '&' || *c == 'P')))) {
      return *c;
    }
  }
  return 0;
}

[[noreturn]] void refuse_format(const std::string& type_name,
                                const std::string& format,
                                char code,
                                bool writable)
{
  const std::string what = code == 'O' ? "Python object pointers" : "pointers";
  throw nb::type_error(((writable ? "kvikio cannot read into a " : "kvikio cannot write a ") +
                        type_name + " of format '" + format + "': its items are " + what +
                        ", not plain data")
                         .c_str());
}

/// The CUDA Array Interface's optional "stream" (v3): the producer's stream that the consumer
/// must synchronise before touching the memory. None or absent: nothing to wait for. 0 is
/// disallowed by the specification (it is ambiguous); 1 and 2 are the legacy and per-thread
/// default streams, anything else a CUstream handle.
std::optional<std::uintptr_t> cai_stream(const nb::dict& cai, const std::string& type_name)
{
  if (!cai.contains("stream")) { return std::nullopt; }
  nb::object stream = cai["stream"];
  if (stream.is_none()) { return std::nullopt; }
  if (PyLong_Check(stream.ptr()) == 0 || PyBool_Check(stream.ptr()) != 0) {
    throw nb::type_error(("the " + type_name +
                          " __cuda_array_interface__ stream must be an integer or None, got " +
                          nb::cast<std::string>(nb::repr(stream)))
                           .c_str());
  }
  const unsigned long long v = PyLong_AsUnsignedLongLong(stream.ptr());
  if (PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    value_error("the " + type_name + " __cuda_array_interface__ stream " +
                nb::cast<std::string>(nb::repr(stream)) + " is not a CUDA stream handle");
  }
  if (v == 0) {
    value_error("the " + type_name +
                " __cuda_array_interface__ stream is 0, which the CUDA Array Interface "
                "disallows (None: no synchronisation, 1: legacy default stream, 2: per-thread "
                "default stream)");
  }
  return static_cast<std::uintptr_t>(v);
}

}  // namespace

BufferView::BufferView(BufferView&& o) noexcept { *this = std::move(o); }

BufferView& BufferView::operator=(BufferView&& o) noexcept
{
  if (this != &o) {
    release();
    ptr_        = o.ptr_;
    nbytes_     = o.nbytes_;
    is_device_  = o.is_device_;
    readonly_   = o.readonly_;
    source_     = std::move(o.source_);
    owner_      = std::move(o.owner_);
    view_       = o.view_;
    has_view_   = o.has_view_;
    o.has_view_ = false;
    o.ptr_      = nullptr;
    o.nbytes_   = 0;
  }
  return *this;
}

BufferView::~BufferView() { release(); }

void BufferView::release() noexcept
{
  if (has_view_) {
    PyBuffer_Release(&view_);
    has_view_ = false;
  }
  owner_.reset();
  source_.reset();
}

std::string BufferView::type_name() const
{
  return source_.is_valid() ? type_name_of(source_) : std::string("buffer");
}

BufferView BufferView::from_object(nb::handle obj, bool writable)
{
  BufferView out;
  out.source_ = nb::borrow(obj);
  // 1. __cuda_array_interface__ (CuPy, Numba, CUDA tensors of PyTorch): device memory. Asked
  // before the buffer protocol, which CuPy also implements (to refuse it, for device memory).
  if (!plain_host_buffer(obj.ptr()) && nb::hasattr(obj, "__cuda_array_interface__")) {
    nb::dict cai          = nb::cast<nb::dict>(obj.attr("__cuda_array_interface__"));
    nb::tuple data        = nb::cast<nb::tuple>(cai["data"]);
    auto ptr              = nb::cast<std::uintptr_t>(data[0]);
    bool ro               = nb::cast<bool>(data[1]);
    auto typestr          = nb::cast<std::string>(cai["typestr"]);
    std::int64_t itemsize = typestr.size() > 2 ? std::stoll(typestr.substr(2)) : 0;
    if (itemsize <= 0) {
      value_error("the " + out.type_name() + " __cuda_array_interface__ has an unknown typestr '" +
                  typestr + "'");
    }
    if (typestr[1] == 'O') { refuse_format(out.type_name(), typestr, 'O', writable); }
    std::vector<std::int64_t> shape;
    for (auto d : nb::cast<nb::tuple>(cai["shape"])) {
      shape.push_back(nb::cast<std::int64_t>(d));
    }
    std::int64_t count = 1;
    for (auto d : shape) {
      count *= d;
    }
    if (cai.contains("mask") && !cai["mask"].is_none()) {
      value_error("masked " + out.type_name() + " arrays are not supported");
    }
    if (cai.contains("strides") && !cai["strides"].is_none()) {
      std::vector<std::int64_t> strides;
      for (auto s : nb::cast<nb::tuple>(cai["strides"])) {
        strides.push_back(nb::cast<std::int64_t>(s));
      }
      if (strides.size() != shape.size() || !c_contiguous(shape, strides, itemsize)) {
        value_error("the " + out.type_name() +
                    " array is not C-contiguous: kvikio needs contiguous memory (make a "
                    "contiguous copy first)");
      }
    }
    out.ptr_       = reinterpret_cast<void*>(ptr);
    out.nbytes_    = static_cast<std::size_t>(count * itemsize);
    out.readonly_  = ro;
    out.is_device_ = true;
    if (writable && out.readonly_) {
      value_error("cannot read into a read-only " + out.type_name() + " array");
    }
    // CAI v3: a producer that still has work queued on `stream` hands it over; wait for it,
    // since the IO runs on kvikio's own streams (ordered only after the legacy default one).
    // Stream 1, the legacy default stream, needs no wait: kvikio's streams are blocking
    // ones, which CUDA orders after it, and cuFile calls synchronise it first. Skipping it
    // spares every CuPy array on the default stream a synchronisation per call.
    if (auto stream = cai_stream(cai, out.type_name()); stream && *stream != 1) {
      nb::gil_scoped_release release;
      kvikio::stream_synchronize(reinterpret_cast<CUstream>(*stream), out.ptr_);
    }
    return out;
  }

  // 2. The buffer protocol: host memory (NumPy, bytes, bytearray, memoryview, array.array).
  if (PyObject_CheckBuffer(obj.ptr())) {
    if (PyObject_GetBuffer(obj.ptr(), &out.view_, PyBUF_RECORDS_RO) != 0) {
      throw nb::python_error();
    }
    out.has_view_ = true;
    if (char code = refused_format_code(out.view_.format, writable); code != 0) {
      refuse_format(out.type_name(), out.view_.format, code, writable);
    }
    if (PyBuffer_IsContiguous(&out.view_, 'C') == 0) {
      value_error("the " + out.type_name() +
                  " buffer is not C-contiguous: kvikio needs contiguous memory (make a "
                  "contiguous copy first)");
    }
    out.ptr_       = out.view_.buf;
    out.nbytes_    = static_cast<std::size_t>(out.view_.len);
    out.readonly_  = out.view_.readonly != 0;
    out.is_device_ = false;
    if (writable && out.readonly_) {
      value_error("cannot read into a read-only " + out.type_name() + " buffer");
    }
    return out;
  }

  // 3. DLPack (PyTorch CPU tensors, JAX, ...). Ask for a versioned tensor (it carries a
  // read-only flag); producers that predate DLPack 1.0 reject max_version.
  if (nb::hasattr(obj, "__dlpack__")) {
    // For CUDA memory pass stream=1: the producer then orders its pending work before the
    // legacy default stream, which kvikio's IO waits for (its streams are blocking ones, and
    // cuFile IO follows a cuStreamSynchronize of it). Without stream= a producer may not
    // synchronise at all (PyTorch does not).
    bool cuda_stream = false;
    if (nb::hasattr(obj, "__dlpack_device__")) {
      nb::tuple device       = nb::cast<nb::tuple>(obj.attr("__dlpack_device__")());
      const auto device_type = nb::cast<std::int32_t>(device[0]);
      cuda_stream            = device_type == kDLCUDA || device_type == kDLCUDAManaged;
    }
    auto call_dlpack = [&](bool with_max_version) {
      nb::dict kwargs;
      if (with_max_version) { kwargs["max_version"] = nb::make_tuple(1, 0); }
      if (cuda_stream) { kwargs["stream"] = 1; }
      return obj.attr("__dlpack__")(**kwargs);
    };
    nb::object capsule;
    bool versioned = true;
    try {
      capsule = call_dlpack(true);
    } catch (nb::python_error& e) {
      if (!e.matches(PyExc_TypeError)) { throw; }
      capsule   = call_dlpack(false);
      versioned = false;
    }
    DLTensor* t = nullptr;
    if (versioned && PyCapsule_IsValid(capsule.ptr(), "dltensor_versioned")) {
      auto* m = static_cast<DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule.ptr(), "dltensor_versioned"));
      t             = &m->dl_tensor;
      out.readonly_ = (m->flags & kDLFlagReadOnly) != 0;
    } else if (PyCapsule_IsValid(capsule.ptr(), "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
      t       = &m->dl_tensor;
    } else {
      value_error("__dlpack__ of " + out.type_name() + " did not return a DLPack capsule");
    }
    // The capsule stays unconsumed and is kept alive with the view: its destructor runs the
    // producer's deleter once we are done with the memory.
    out.owner_              = capsule;
    const std::int32_t kind = t->device.device_type;
    if (kind != kDLCPU && kind != kDLCUDA && kind != kDLCUDAHost && kind != kDLCUDAManaged) {
      value_error("the " + out.type_name() + " tensor lives on DLPack device type " +
                  std::to_string(kind) + ", which kvikio cannot address (CPU or CUDA only)");
    }
    const std::int64_t itemsize =
      (static_cast<std::int64_t>(t->dtype.bits) * t->dtype.lanes + 7) / 8;
    std::vector<std::int64_t> shape(t->shape, t->shape + t->ndim);
    std::int64_t count = 1;
    for (auto d : shape) {
      count *= d;
    }
    if (t->strides != nullptr) {
      std::vector<std::int64_t> strides;
      for (std::int32_t i = 0; i < t->ndim; ++i) {
        strides.push_back(t->strides[i] * itemsize);  // DLPack strides count elements
      }
      if (!c_contiguous(shape, strides, itemsize)) {
        value_error("the " + out.type_name() +
                    " tensor is not C-contiguous: kvikio needs contiguous memory (call "
                    ".contiguous() first)");
      }
    }
    out.ptr_       = static_cast<char*>(t->data) + t->byte_offset;
    out.nbytes_    = static_cast<std::size_t>(count * itemsize);
    out.is_device_ = kind == kDLCUDA || kind == kDLCUDAManaged;
    if (writable && out.readonly_) {
      value_error("cannot read into a read-only " + out.type_name() + " tensor");
    }
    return out;
  }

  throw nb::type_error(("kvikio needs an object exposing memory (the buffer protocol, "
                        "__cuda_array_interface__ or __dlpack__), got " +
                        type_name_of(obj))
                         .c_str());
}

void bind_buffer(nb::module_& m)
{
  using namespace nb::literals;
  m.def(
    "is_device_buffer",
    [](nb::handle buf) { return BufferView::from_object(buf, false).is_device(); },
    "buf"_a);
  m.def(
    "memory_register",
    [](nb::handle buf) {
      auto view = BufferView::from_object(buf, false);
      kvikio::memory_register(view.ptr());
    },
    "buf"_a);
  m.def(
    "memory_deregister",
    [](nb::handle buf) {
      auto view = BufferView::from_object(buf, false);
      kvikio::memory_deregister(view.ptr());
    },
    "buf"_a);
  m.def(
    "bounce_buffer_free", &kvikio::bounce_buffer_free, nb::call_guard<nb::gil_scoped_release>());
}

}  // namespace kvikio::python

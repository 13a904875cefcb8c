#pragma once
// Turning any Python object that holds memory into (pointer, nbytes, device?, read-only?):
// the buffer protocol (NumPy, bytearray, memoryview, ...), __cuda_array_interface__ (CuPy,
// Numba, CUDA PyTorch tensors) and DLPack (PyTorch and anything else with __dlpack__).
#include <Python.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <nanobind/nanobind.h>

namespace kvikio::python {

/// Memory borrowed from a Python object. Keeps the exporter alive (and, for the buffer
/// protocol, the export held) until destroyed; destroy it with the GIL held.
class BufferView {
 public:
  BufferView() = default;
  BufferView(BufferView&& o) noexcept;
  BufferView& operator=(BufferView&& o) noexcept;
  BufferView(const BufferView&)            = delete;
  BufferView& operator=(const BufferView&) = delete;
  ~BufferView();

  /// Borrows the memory of `obj`. With `writable`, a read-only buffer is refused
  /// (ValueError). Non-contiguous memory is refused (ValueError); an object that exposes no
  /// memory raises TypeError naming its type.
  static BufferView from_object(nanobind::handle obj, bool writable);

  [[nodiscard]] void* ptr() const noexcept { return ptr_; }
  [[nodiscard]] std::size_t nbytes() const noexcept { return nbytes_; }
  [[nodiscard]] bool is_device() const noexcept { return is_device_; }
  [[nodiscard]] bool readonly() const noexcept { return readonly_; }
  /// "numpy.ndarray", "cupy.ndarray", ...: for messages (computed on demand: it costs
  /// attribute lookups that a successful call does not need).
  [[nodiscard]] std::string type_name() const;

 private:
  void release() noexcept;

  void* ptr_{nullptr};
  std::size_t nbytes_{0};
  bool is_device_{false};
  bool readonly_{false};
  nanobind::object source_;  // the object given
  nanobind::object owner_;   // the DLPack capsule, when there is one
  Py_buffer view_{};
  bool has_view_{false};
};

}  // namespace kvikio::python

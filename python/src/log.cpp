// The library's log lines into Python's `logging` (logger "kvikio"). Lines are logged on any
// thread, pool threads included, some of which a thread holding the GIL may be waiting for:
// taking the GIL there could deadlock. So the handler only queues the line and asks the
// interpreter (Py_AddPendingCall, which needs no GIL) to pass the queue to `logging` on the
// main thread at its next chance.
#include <Python.h>

#include <atomic>
#include <cstdio>
#include <deque>
#include <mutex>
#include <string>
#include <utility>

#include <nanobind/nanobind.h>

#include <kvikio/log.hpp>

#include "bindings.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace kvikio::python {
namespace {

// logging's levels of our trace..critical (trace has none: DEBUG less 5).
constexpr int kPythonLevels[]    = {5, 10, 20, 30, 40, 50};
constexpr std::size_t kMaxQueued = 10000;  // a flood while the main thread is busy is cut

struct Queue {
  std::mutex mutex;
  std::deque<std::pair<int, std::string>> lines;
  bool scheduled{false};
  std::size_t dropped{0};
  std::atomic<bool> active{false};
};

Queue& queue()
{
  static auto* q = new Queue();  // never destroyed: pool threads may log at exit
  return *q;
}

int drain(void*)
{
  std::deque<std::pair<int, std::string>> lines;
  std::size_t dropped = 0;
  {
    auto& q = queue();
    std::lock_guard lock(q.mutex);
    lines.swap(q.lines);
    dropped     = std::exchange(q.dropped, 0);
    q.scheduled = false;
  }
  try {
    nb::object logger = nb::module_::import_("logging").attr("getLogger")("kvikio");
    for (auto& [level, text] : lines) {
      logger.attr("log")(kPythonLevels[level], nb::str(text.data(), text.size()));
    }
    if (dropped != 0) {
      logger.attr("warning")(nb::str(
        (std::to_string(dropped) + " kvikio log lines were dropped (the queue was full)").c_str()));
    }
  } catch (nb::python_error& e) {
    e.restore();
    PyErr_WriteUnraisable(nullptr);
  }
  return 0;
}

void handler(int level, const char* message, std::size_t size, void*)
{
  auto& q       = queue();
  bool schedule = false;
  {
    std::lock_guard lock(q.mutex);
    if (q.lines.size() >= kMaxQueued) {
      ++q.dropped;
    } else {
      q.lines.emplace_back(level < 0 || level > 5 ? 3 : level, std::string(message, size));
    }
    schedule    = !q.scheduled;
    q.scheduled = true;
  }
  if (schedule && (!q.active.load() || Py_AddPendingCall(drain, nullptr) != 0)) {
    // The interpreter is going away (or its queue of pending calls is full): keep the line.
    std::fprintf(stderr, "[kvikio] %.*s\n", static_cast<int>(size), message);
    std::lock_guard lock(q.mutex);
    q.scheduled = false;
  }
}

}  // namespace

void bind_log(nb::module_& m)
{
  m.def(
    "_log_to_python",
    [](bool on) {
      queue().active = on;
      set_log_handler(on ? &handler : nullptr);
      if (!on) { drain(nullptr); }
    },
    "on"_a = true,
    "Send the library's log lines to logging.getLogger('kvikio') (False: back to stderr or "
    "KVIKIO_LOG_FILE).");
}

}  // namespace kvikio::python

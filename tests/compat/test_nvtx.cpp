// kvikio/nvtx.hpp: the macros in both states (built twice: as is, and with KVIKIO_DISABLE_NVTX
// forcing them off), and the ranges libkvikio emits, seen through a static NVTX injection
// (the hook profilers use) defined in this test (issue 13).
// This file defines the static injection, so NVTX's weak default of it stays out of here.
// NVTX's code (included below) reads it, so it is declared first, in NVTX's own type spelled
// out (NvtxInitializeInjectionNvtxFunc_t; NVTX_API is empty on Linux).
#define NVTX_STATIC_INJECTION_IMPL 1
#include <cstdint>
extern "C" int (*InitializeInjectionNvtx2_fnptr)(const void* (*)(std::uint32_t));
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <mutex>
#include <string>
#include <vector>

#include <kvikio/file_handle.hpp>
#include <kvikio/nvtx.hpp>

#include "test_utils.hpp"

#if __has_include(<nvtx3/nvToolsExt.h>)
#define KVIKIO_TEST_INJECTION 1
#include <nvtx3/nvToolsExt.h>
#else
#define KVIKIO_TEST_INJECTION 0
#endif

namespace {

int evaluated = 0;
int counted() { return ++evaluated; }

#if KVIKIO_TEST_INJECTION
struct Event {
  std::string kind;  // "push", "mark" or "thread"
  std::string domain;
  std::string message;
  bool has_payload{false};
  std::uint64_t payload{0};
};

std::mutex events_mutex;
std::vector<Event> events;
int pops = 0;

struct Domain {
  std::string name;
};

std::string message_of(const nvtxEventAttributes_t* a)
{
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) {
    return *reinterpret_cast<const std::string*>(a->message.registered);
  }
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) { return a->message.ascii; }
  return "?";
}

Event event_of(const char* kind, nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a)
{
  Event e{kind, domain ? reinterpret_cast<Domain*>(domain)->name : "", message_of(a)};
  if (a->payloadType == NVTX_PAYLOAD_TYPE_UNSIGNED_INT64 ||
      a->payloadType == NVTX_PAYLOAD_TYPE_INT64) {
    e.has_payload = true;
    e.payload     = a->payload.ullValue;
  }
  return e;
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name)
{
  return reinterpret_cast<nvtxDomainHandle_t>(new Domain{name});  // kept: handles live forever
}
nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t, const char* s)
{
  return reinterpret_cast<nvtxStringHandle_t>(new std::string(s));
}
int NVTX_API push(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a)
{
  std::lock_guard lock(events_mutex);
  events.push_back(event_of("push", d, a));
  return 0;
}
int NVTX_API pop(nvtxDomainHandle_t)
{
  std::lock_guard lock(events_mutex);
  ++pops;
  return 0;
}
void NVTX_API mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a)
{
  std::lock_guard lock(events_mutex);
  events.push_back(event_of("mark", d, a));
}
void NVTX_API name_thread(std::uint32_t, const char* name)
{
  std::lock_guard lock(events_mutex);
  events.push_back({"thread", "", name});
}

template <typename F>
void set_slot(NvtxFunctionTable table, unsigned int size, unsigned int id, F f)
{
  if (id < size && table[id] != nullptr) { *table[id] = reinterpret_cast<NvtxFunctionPointer>(f); }
}

int NVTX_API initialize(NvtxGetExportTableFunc_t get_table)
{
  const auto* callbacks =
    static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable core2{};
  unsigned int core2_size = 0;
  NvtxFunctionTable core{};
  unsigned int core_size = 0;
  if (callbacks == nullptr ||
      callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) == 0 ||
      callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0) {
    return 0;
  }
  set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, &domain_create);
  set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string);
  set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, &push);
  set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, &pop);
  set_slot(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, &mark);
  set_slot(core, core_size, NVTX_CBID_CORE_NameOsThreadA, &name_thread);
  return 1;
}

std::vector<Event> take_events()
{
  std::lock_guard lock(events_mutex);
  return std::exchange(events, {});
}
#endif

}  // namespace

#if KVIKIO_TEST_INJECTION
// The static injection: NVTX's weak pointer of this name binds to this definition, and NVTX
// calls it on first use instead of looking for NVTX_INJECTION64_PATH.
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &initialize;
#endif

TEST(Nvtx, StateOfThisTranslationUnitAndOfTheLibrary)
{
  EXPECT_EQ(KVIKIO_NVTX_ENABLED, KVIKIO_TEST_EXPECT_NVTX);
  EXPECT_EQ(kvikio::is_nvtx_enabled(), KVIKIO_TEST_LIBRARY_NVTX == 1);
}

// Every form of every macro compiles and runs; a disabled macro does not evaluate its
// arguments, an enabled one evaluates each once.
TEST(Nvtx, MacrosInEveryForm)
{
#if KVIKIO_TEST_INJECTION
  take_events();
#endif
  evaluated = 0;
  {
    KVIKIO_NVTX_FUNC_RANGE();
    KVIKIO_NVTX_FUNC_RANGE(counted());
    KVIKIO_NVTX_FUNC_RANGE(std::size_t{42}, kvikio::NvtxManager::get_color_by_index(3));
    KVIKIO_NVTX_SCOPED_RANGE("test scoped");
    KVIKIO_NVTX_SCOPED_RANGE("test scoped payload", counted());
    KVIKIO_NVTX_SCOPED_RANGE("test scoped color", 2.5, kvikio::NvtxManager::default_color());
    KVIKIO_NVTX_MARKER("test marker", counted());
  }
  kvikio::NvtxManager::rename_current_thread("kvikio-test-main");
  EXPECT_EQ(&kvikio::NvtxManager::get_color_by_index(1),
            &kvikio::NvtxManager::get_color_by_index(9));  // a palette of 8, wrapping
  EXPECT_EQ(&kvikio::NvtxManager::default_color(), &kvikio::NvtxManager::get_color_by_index(0));
  EXPECT_EQ(&kvikio::NvtxManager::instance(), &kvikio::NvtxManager::instance());
  EXPECT_EQ(evaluated, KVIKIO_NVTX_ENABLED ? 3 : 0);
#if KVIKIO_TEST_INJECTION
  const auto seen = take_events();
  std::vector<std::string> ours;
  for (const auto& e : seen) {
    if (e.domain == "libkvikio" || e.kind == "thread") { ours.push_back(e.kind + ":" + e.message); }
  }
  if (KVIKIO_NVTX_ENABLED) {
    ASSERT_EQ(ours.size(), 8U);
    for (int i = 0; i < 3; ++i) {
      EXPECT_NE(ours[i].find("MacrosInEveryForm"), std::string::npos) << ours[i];
    }
    EXPECT_EQ(ours[3], "push:test scoped");
    EXPECT_EQ(ours[4], "push:test scoped payload");
    EXPECT_EQ(ours[5], "push:test scoped color");
    EXPECT_EQ(ours[6], "mark:test marker");
    EXPECT_EQ(ours[7], "thread:kvikio-test-main");
    EXPECT_EQ(seen[2].payload, 42U);
  } else {
    EXPECT_TRUE(ours.empty()) << ours.size() << " events from disabled macros";
  }
#endif
}

// libkvikio's own ranges: the public call, named after it and carrying its size, and one
// range per pool task carrying the task's size.
TEST(Nvtx, FileHandleCallAndEveryPoolTaskHaveARange)
{
#if !KVIKIO_TEST_INJECTION
  GTEST_SKIP() << "no NVTX3 headers at build time: nothing to observe";
#else
  if (!kvikio::is_nvtx_enabled()) { GTEST_SKIP() << "libkvikio was built without NVTX"; }
  kvikio::test::TempDir dir;
  const auto path = dir.file("nvtx.bin");
  const auto data = kvikio::test::random_bytes(3 << 20);
  kvikio::test::write_file(path, data);
  kvikio::test::ScopedSettings restore;
  kvikio::defaults::set_num_threads(2);
  std::vector<char> out(data.size());
  kvikio::FileHandle f(path, "r");
  take_events();
  {
    std::lock_guard lock(events_mutex);
    pops = 0;
  }
  EXPECT_EQ(f.pread(out.data(), out.size(), 0, 1 << 20).get(), data.size());
  EXPECT_EQ(out, data);
  kvikio::defaults::thread_pool().wait();
  const auto seen = take_events();
  int calls       = 0;
  int tasks       = 0;
  for (const auto& e : seen) {
    if (e.domain != "libkvikio" || e.kind != "push") { continue; }
    if (e.message.find("kvikio::FileHandle::pread") != std::string::npos) {
      ++calls;
      EXPECT_TRUE(e.has_payload);
      EXPECT_EQ(e.payload, data.size());
    } else if (e.message == "task") {
      ++tasks;
      EXPECT_EQ(e.payload, 1U << 20);
    }
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(tasks, 3);
  std::lock_guard lock(events_mutex);
  EXPECT_EQ(pops, static_cast<int>(std::count_if(seen.begin(), seen.end(), [](const Event& e) {
              return e.kind == "push";
            })));
#endif
}

// bad_plugin: plugins that the host must refuse (or contain), one per define, each built into
// build/tests/plugins/ by tests/plugins/CMakeLists.txt for tests/runtime/plugin/plugin_host_test.cpp:
//   FW_BAD_ABI          abi_version 99
//   FW_BAD_NO_ENTRY     exports fw_plugin_entry_v0 instead of fw_plugin_entry
//   FW_BAD_KIND         kind 7
//   FW_BAD_PROBE        probe() refuses: "needs a CPU with AVX-1024"
//   FW_BAD_CREATE_FAILS create() returns NULL with a reason (what a well-behaved plugin does)
//   FW_BAD_CREATE_THROWS create() lets an exception escape (forbidden by the SDK; the host guards)
// Otherwise a valid draft_model that proposes the last token k times.
#include <flywheel/plugin_sdk.h>

#include <stdexcept>

namespace {

int begin(void*, uint64_t, const int32_t*, size_t, const fw_sampling_v1*) { return 0; }
int propose(void*, uint64_t, const int32_t* h, size_t n, int32_t k, int32_t* out, float*, int32_t) {
  if (n == 0) return 0;
  for (int32_t i = 0; i < k; ++i) out[i] = h[n - 1];
  return k;
}
int accept(void*, uint64_t, const int32_t*, size_t) { return 0; }
void end(void*, uint64_t) {}

int probe(char* why, size_t len) {
#ifdef FW_BAD_PROBE
  fw_plugin_message(why, len, "needs a CPU with AVX-1024");
  return 1;
#else
  return 0;
#endif
}

[[maybe_unused]] int object;  // create() hands out its address

void* create(const char*, char* err, size_t err_len) {
#if defined(FW_BAD_CREATE_FAILS)
  fw_plugin_message(err, err_len, "draft model file /nonexistent/draft.gguf not found");
  return nullptr;
#elif defined(FW_BAD_CREATE_THROWS)
  throw std::runtime_error("draft weights are corrupt");
#else
  return &object;
#endif
}

void destroy(void*) {}

#ifdef FW_BAD_ABI
constexpr uint32_t abi = 99;
#else
constexpr uint32_t abi = FW_PLUGIN_ABI_VERSION;
#endif
#ifdef FW_BAD_KIND
constexpr uint32_t kind = 7;
#else
constexpr uint32_t kind = FW_PLUGIN_DRAFT_MODEL;
#endif

const fw_draft_model_v1 draft_table = {0, begin, propose, accept, end};
const fw_plugin_v1 plugin = {abi, kind, "bad", "0.0.1", probe, create, destroy, &draft_table};

}  // namespace

#ifdef FW_BAD_NO_ENTRY
extern "C" FW_PLUGIN_EXPORT const fw_plugin_v1* fw_plugin_entry_v0(void) { return &plugin; }
#else
extern "C" FW_PLUGIN_EXPORT const fw_plugin_v1* fw_plugin_entry(void) { return &plugin; }
#endif

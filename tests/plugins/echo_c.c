/* echo_c: a draft_model plugin written in plain C (proof that plugin_sdk.h is pure C): proposes
 * the last token of the history k times, with one-hot probabilities (FW_DRAFT_PROBS). */
#include <flywheel/plugin_sdk.h>
#include <stdlib.h>

typedef struct echo { int32_t calls; } echo;

static int begin(void* self, uint64_t seq, const int32_t* prompt, size_t n, const fw_sampling_v1* s) {
  (void)seq; (void)prompt; (void)n; (void)s;
  return self ? FW_PLUGIN_OK : FW_PLUGIN_E_INVALID;
}

static int propose(void* self, uint64_t seq, const int32_t* h, size_t n, int32_t k, int32_t* out,
                   float* probs, int32_t n_vocab) {
  int32_t i, v;
  (void)seq;
  if (!self || n == 0) return 0;
  ((echo*)self)->calls++;
  for (i = 0; i < k; ++i) {
    out[i] = h[n - 1];
    if (probs) {
      for (v = 0; v < n_vocab; ++v) probs[(size_t)i * n_vocab + v] = (v == out[i]) ? 1.0f : 0.0f;
    }
  }
  return k;
}

static int accept(void* self, uint64_t seq, const int32_t* h, size_t n) {
  (void)self; (void)seq; (void)h; (void)n;
  return FW_PLUGIN_OK;
}

static void end(void* self, uint64_t seq) { (void)self; (void)seq; }

static void* create(const char* params_json, char* err, size_t err_len) {
  echo* e = (echo*)calloc(1, sizeof(echo));
  (void)params_json;
  if (!e) fw_plugin_message(err, err_len, "out of memory");
  return e;
}

static void destroy(void* self) { free(self); }

static const fw_draft_model_v1 draft_table = {FW_DRAFT_PROBS, begin, propose, accept, end};
static const fw_plugin_v1 plugin = {FW_PLUGIN_ABI_VERSION, FW_PLUGIN_DRAFT_MODEL, "echo_c", FW_PLUGIN_VERSION,
                                    NULL, create, destroy, &draft_table};

FW_PLUGIN_EXPORT const fw_plugin_v1* fw_plugin_entry(void) { return &plugin; }

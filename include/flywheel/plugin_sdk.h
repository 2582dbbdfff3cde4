/* flywheel plugin SDK: the only header a plugin includes. Pure C (compiles as C and C++).
 *
 * A plugin is a shared library that exports one function,
 *
 *     FW_PLUGIN_EXPORT const fw_plugin_v1* fw_plugin_entry(void);
 *
 * returning a static table. The host (runtime/plugin_host.hpp) copies the file to a unique name,
 * dlopens the copy, calls fw_plugin_entry, and refuses the plugin, with an error naming the file
 * and the reason, when the symbol is missing, abi_version != FW_PLUGIN_ABI_VERSION, the kind is
 * unknown, a required function is NULL, or probe() says the plugin cannot run on this machine.
 *
 * Rules of the boundary:
 *  - Only C types cross it: no STL, no C++ classes, no ownership transfer of memory allocated on
 *    the other side. Buffers are owned by the caller.
 *  - Errors are return codes (FW_PLUGIN_E_*) plus, where a message buffer is passed, a
 *    NUL-terminated message. No exception may escape a plugin function: a C++ plugin catches
 *    everything at each entry point (unwinding through extern "C" frames is undefined behaviour;
 *    the host still wraps every call in try/catch as a last line of defence, which contains a
 *    throwing plugin with GCC/Clang on Linux but is not a contract).
 *  - Build plugins with -fvisibility=hidden -fno-gnu-unique (plugins/fw_plugin.cmake does) so
 *    that dlclose really unloads them and hot reload works; export only fw_plugin_entry.
 *  - The table and every string in it are static: valid while the library is loaded.
 *
 * Lifetime: the host calls create() for each object it hands out and destroy() exactly once for
 * each non-NULL object create() returned; the library stays loaded until the last object is
 * destroyed, even after an unload or reload (old objects finish on the old code).
 *
 * Thread-safety: fw_plugin_entry, probe and create may be called from any thread (one at a time
 * per library). quant_kernel functions may be called concurrently on one object (they must be
 * re-entrant). draft_model functions are called by one thread at a time per object; different
 * objects may be used concurrently.
 */
#ifndef FLYWHEEL_PLUGIN_SDK_H
#define FLYWHEEL_PLUGIN_SDK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FW_PLUGIN_ABI_VERSION 1u
#define FW_PLUGIN_ENTRY_SYMBOL "fw_plugin_entry"

#if defined(_WIN32)
#define FW_PLUGIN_EXPORT __declspec(dllexport)
#else
#define FW_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* -- kinds -- */
#define FW_PLUGIN_QUANT_KERNEL 1u    /* kind_table: const fw_quant_kernel_v1* */
#define FW_PLUGIN_DRAFT_MODEL 2u     /* kind_table: const fw_draft_model_v1* */
#define FW_PLUGIN_QUANT_KERNEL_V2 3u /* kind_table: const fw_quant_kernel_v2* (a quant_kernel too) */
#define FW_PLUGIN_TELEMETRY_SOURCE 4u /* kind_table: const fw_telemetry_source_v1* */

/* -- return codes: 0 is success, errors are negative -- */
#define FW_PLUGIN_OK 0
#define FW_PLUGIN_E_INVALID (-1)     /* a bad argument (NULL pointer, k not a block multiple) */
#define FW_PLUGIN_E_UNSUPPORTED (-2) /* a weight type or shape this plugin does not handle */
#define FW_PLUGIN_E_NOMEM (-3)       /* allocation failed */
#define FW_PLUGIN_E_STATE (-4)       /* call out of order (e.g. unknown sequence) */
#define FW_PLUGIN_E_INTERNAL (-5)    /* anything else (a caught exception, a bug) */

/* -- quant_kernel: matrix kernels for one or more GGUF weight formats -- */
typedef struct fw_quant_kernel_v1 {
  /* The ggml type ids this kernel handles (GGUF numbering: 8 = q8_0, ...). */
  const uint32_t* types;
  size_t n_types;
  /* y[m][n] = x[m][k] . w^T: w is n rows of k elements of `type`, row_bytes apart; x is m rows
   * of k floats (contiguous); y is m rows of n floats (contiguous). Returns FW_PLUGIN_OK or an
   * error code. Required. */
  int (*gemv)(void* self, uint32_t type, const void* w, size_t row_bytes, int64_t k, int64_t n,
              const float* x, int64_t m, float* y);
  /* k floats -> one row of `type` at dst (k a multiple of the block size). May be NULL. */
  int (*quantize_row)(void* self, uint32_t type, const float* x, void* dst, int64_t k);
  /* One row of k elements of `type` -> k floats. May be NULL. */
  int (*dequantize_row)(void* self, uint32_t type, const void* src, float* y, int64_t k);
} fw_quant_kernel_v1;

/* -- quant_kernel v2: the activation format and the row split are the host's --
 * A v1 kernel gets float activations and computes a whole product on the calling thread. A v2
 * kernel names the activation format its products consume; the host quantizes each activation
 * row once (quantize_act, with a calibrated static scale when the weights carry one) and calls
 * gemm on disjoint ranges of weight rows from its own kernel threads, so a plugin runs at the
 * speed of the built-in kernels. Activation formats: */
#define FW_ACT_F32 0u     /* k floats */
#define FW_ACT_Q8_32 1u   /* blocks of 32: float scale, int32 sum, 32 int8 (40 bytes per 32) */
#define FW_ACT_I8_ROW 2u  /* flywheel W8A8 rows: 32-byte header, k int8, one float scale per group */
#define FW_ACT_I16_ROW 3u /* flywheel W4A16 rows: 32-byte header (float scale), k int16, k/32 int32 sums */

typedef struct fw_quant_kernel_v2 {
  const uint32_t* types;
  size_t n_types;
  /* The activation format `type`'s products consume and the bytes of one activation row of k
   * values. Required. */
  int (*act_format)(void* self, uint32_t type, int64_t k, uint32_t* format, size_t* row_bytes);
  /* k floats -> one activation row at out. static_scale > 0: a calibrated per-tensor scale
   * (formats that have one); 0: the row's own. Required. */
  int (*quantize_act)(void* self, uint32_t type, const float* x, int64_t k, float static_scale, void* out);
  /* y[j * ldy + i] = (weight row i) . (activation row j) for i in [0, n), j in [0, m): w is n rows
   * of `type`, row_bytes apart; act is m activation rows, act_stride bytes apart. The host calls
   * it concurrently on disjoint row ranges. Required. */
  int (*gemm)(void* self, uint32_t type, const void* w, size_t row_bytes, int64_t k, int64_t n, const void* act,
              size_t act_stride, int64_t m, float* y, int64_t ldy);
  /* As in v1; may be NULL. */
  int (*quantize_row)(void* self, uint32_t type, const float* x, void* dst, int64_t k);
  int (*dequantize_row)(void* self, uint32_t type, const void* src, float* y, int64_t k);
} fw_quant_kernel_v2;

/* -- draft_model: proposes tokens for speculative decoding (mirrors runtime/drafter.hpp) -- */

/* The target's sampling settings for a sequence (a model draft samples with the same
 * temperature so its probabilities match what it proposes). temperature <= 0: greedy. */
typedef struct fw_sampling_v1 {
  float temperature;
  int32_t top_k; /* 0: disabled */
  float top_p;   /* 1: disabled */
  float min_p;   /* 0: disabled */
  uint64_t seed; /* 0: random */
} fw_sampling_v1;

/* fw_draft_model_v1.flags */
#define FW_DRAFT_PROBS 1u /* propose() fills out_probs with real draft probabilities */

typedef struct fw_draft_model_v1 {
  uint32_t flags; /* FW_DRAFT_* */
  /* Starts sequence `seq` with its prompt. sampling may be NULL (greedy). Returns 0 or error. */
  int (*begin)(void* self, uint64_t seq, const int32_t* prompt, size_t n,
               const fw_sampling_v1* sampling);
  /* Proposes up to k tokens following history[0..n) (every token so far, prompt included) into
   * out_tokens[0..k). out_probs may be NULL; when not NULL it has k * n_vocab floats and the
   * plugin writes the draft's distribution for each proposed position (one-hot on the proposed
   * token when the draft is deterministic). Returns the number proposed (0..k) or an error. */
  int (*propose)(void* self, uint64_t seq, const int32_t* history, size_t n, int32_t k,
                 int32_t* out_tokens, float* out_probs, int32_t n_vocab);
  /* The target accepted a prefix: history[0..n) is the sequence after acceptance (it may end
   * with a token the draft did not propose); the draft rolls its state back to it. */
  int (*accept)(void* self, uint64_t seq, const int32_t* history, size_t n);
  /* Ends a sequence and frees its state. */
  void (*end)(void* self, uint64_t seq);
} fw_draft_model_v1;

/* -- telemetry_source: device and link health readings for the supervisor --
 * Metrics the degradation policy reads (runtime/supervise/telemetry_sample.hpp):
 * "temperature_c", "link_gbps" (the link's available bandwidth, GB/s), "link_errors" (a
 * cumulative error/replay counter: rising = trouble), "lost" (1: the device is gone). Any other
 * metric is shown (`:health`) but not acted on. Devices are named as the supervisor knows them:
 * "prefill", "decode", "offload", or free text ("cuda:0"). Called from one thread. */
typedef struct fw_telemetry_sample_v1 {
  char device[32]; /* NUL-terminated */
  char metric[32]; /* NUL-terminated */
  double value;
} fw_telemetry_sample_v1;

typedef struct fw_telemetry_source_v1 {
  /* What it reads, e.g. "NVML 12.560: 2 GPUs", into buf (NUL-terminated). May be NULL. */
  int (*describe)(void* self, char* buf, size_t len);
  /* Takes one reading of everything into out[0..cap); returns how many it wrote (0..cap) or an
   * error code (the supervisor logs it and polls again later). Required. */
  int (*sample)(void* self, fw_telemetry_sample_v1* out, size_t cap);
} fw_telemetry_source_v1;

/* -- the entry table -- */
typedef struct fw_plugin_v1 {
  uint32_t abi_version; /* FW_PLUGIN_ABI_VERSION */
  uint32_t kind;        /* FW_PLUGIN_QUANT_KERNEL, _QUANT_KERNEL_V2, _DRAFT_MODEL or _TELEMETRY_SOURCE */
  const char* name;     /* e.g. "q8_0_kernel" */
  const char* version;  /* free text, e.g. "1.2.0" */
  /* 0: can run on this machine; otherwise writes why not (NUL-terminated) into why. May be NULL
   * (always runs). */
  int (*probe)(char* why, size_t why_len);
  /* params_json: a JSON object (never NULL; "{}" when none). Returns the new object, or NULL
   * after writing the reason into err. Required. */
  void* (*create)(const char* params_json, char* err, size_t err_len);
  /* Destroys an object create() returned. Required. */
  void (*destroy)(void* self);
  /* The kind's function table (see above). Required. */
  const void* kind_table;
} fw_plugin_v1;

typedef const fw_plugin_v1* (*fw_plugin_entry_fn)(void);

FW_PLUGIN_EXPORT const fw_plugin_v1* fw_plugin_entry(void);

/* Writes msg into buf (truncated, always NUL-terminated when len > 0). */
static inline void fw_plugin_message(char* buf, size_t len, const char* msg) {
  size_t n;
  if (buf == NULL || len == 0) return;
  n = msg ? strlen(msg) : 0;
  if (n >= len) n = len - 1;
  if (n) memcpy(buf, msg, n);
  buf[n] = '\0';
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FLYWHEEL_PLUGIN_SDK_H */

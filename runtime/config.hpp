// config: flywheel's typed, validated configuration, parsed once from TOML (conf/default.toml and
// conf/examples/*.toml show every key with comments).
//
// Each section is a plain struct with built-in defaults; a component receives only its own section
// (the scheduler gets scheduler_section, the sampler a sampling_params made by sampling.to_params()).
// Parsing rejects, with file:line:column and the allowed keys, values or range: TOML syntax errors
// (errc::malformed_file), unknown sections and keys, wrong types, out-of-range numbers, values not in
// an enumeration and inconsistent combinations (errc::invalid_argument). All errors of a file are
// reported at once, one per line, in file order.
//
// Paths: relative paths (model.path, plugins.dir, plugins.load.path, speculative.draft_model) are
// kept as written and resolve against the process's current directory, not the config file's
// folder; the shipped configs assume the repository root as the current directory.
//
// Overrides: set("sampling.temperature", "0.2") applies one value with the same checks as the file
// (used by CLI flags and the console's :set); keys() lists what set() accepts.
//
// Thread-safety: plain value types; a config is read-only after start-up unless its owner calls
// set(). None of this header pulls in toml++ (only config*.cpp do).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/expected.hpp"
#include "runtime/kv_handle.hpp"
#include "runtime/sampling_params.hpp"

namespace fw {

// -- sections --

/// [model]: the target model.
struct model_section {
  std::string path = "models/SmolLM2-135M-Instruct.Q4_1.gguf";  ///< GGUF file
  uint32_t ctx_size = 4096;  ///< tokens per sequence; 0: the model's training context, capped at 4096
  bool operator==(const model_section&) const = default;
};

/// [compute]: the CPU kernel thread pool.
struct compute_section {
  int threads = 0;  ///< 0: all cores
  /// quant_kernel plugins (names from [[plugins.load]]) that replace the built-in kernels for
  /// the weight types they handle; empty: built-in kernels only.
  std::vector<std::string> kernel_plugins;
  bool operator==(const compute_section&) const = default;
};

/// [kv_cache]: the KV block pool of each device. Exactly one of pool_tokens and pool_mib is
/// non-zero (setting one to a non-zero value zeroes the other).
struct kv_cache_section {
  uint32_t block_tokens = 16;   ///< tokens per block
  uint32_t pool_tokens = 16384; ///< pool size in tokens (all sequences together); 0: use pool_mib
  uint32_t pool_mib = 0;        ///< pool size in MiB; 0: use pool_tokens
  std::string type = "f16";     ///< element type of cached K and V: f16 | f32
  [[nodiscard]] kv_dtype dtype() const { return type == "f32" ? kv_dtype::f32 : kv_dtype::f16; }
  bool operator==(const kv_cache_section&) const = default;
};

/// [sampling]: defaults for requests that do not say otherwise. Defaults equal sampling_params'.
struct sampling_section {
  float temperature = sampling_params{}.temperature;  ///< 0: greedy
  int32_t top_k = sampling_params{}.top_k;            ///< 0: off
  float top_p = sampling_params{}.top_p;              ///< 1: off
  float min_p = sampling_params{}.min_p;              ///< 0: off
  float repeat_penalty = sampling_params{}.repeat_penalty;  ///< 1: off
  int32_t repeat_last_n = sampling_params{}.repeat_last_n;  ///< 0: none, -1: whole history
  float presence_penalty = sampling_params{}.presence_penalty;
  float frequency_penalty = sampling_params{}.frequency_penalty;
  uint64_t seed = sampling_params{}.seed;             ///< 0: random
  int32_t max_tokens = sampling_params{}.max_tokens;  ///< -1: until end of sequence / context
  std::vector<std::string> stop;                      ///< stop strings

  /// The per-request parameters these defaults describe.
  [[nodiscard]] sampling_params to_params() const;
  bool operator==(const sampling_section&) const = default;
};

/// [scheduler]: admission and batching limits.
struct scheduler_section {
  uint32_t max_batch = 16;          ///< sequences decoded together in one step
  uint32_t max_queue = 256;         ///< requests waiting for admission before new ones are refused
  uint32_t prefill_chunk = 512;     ///< prompt tokens per prefill step
  double prefill_timeout_s = 3.0;   ///< longest a request may wait for its prefill to start
  double request_timeout_s = 600;   ///< whole-request limit; 0: none
  bool operator==(const scheduler_section&) const = default;
};

/// [logging]
struct logging_section {
  std::string level = "info";  ///< debug | info | warn | error
  bool operator==(const logging_section&) const = default;
};

/// [speculative]: speculative decoding.
struct speculative_section {
  std::string draft = "none";  ///< none | model | self-quant | layer-skip | ngram | feature | hybrid
  std::string draft_model;     ///< GGUF draft for draft = "model"
  std::string feature_map = "models/feature_draft.gguf";  ///< draft = "feature": the map `flywheel fit-draft` wrote
  std::string k = "5";         ///< draft tokens per step: "1".."16", or "auto" (adaptive policy)
  uint32_t draft_layers = 0;   ///< layer-skip: target layers the draft runs; 0: half of them
  std::string draft_quant = "q4_0";  ///< self-quant: weight format of the draft copy
  uint32_t ngram_min = 1;      ///< ngram: shortest agreeing context that proposes (1 = any earlier occurrence of the last token)
  double draft_stop_p = 0.0;   ///< the draft stops when its token probability falls below; 0: never

  /// The fixed k, or nullopt for "auto". Precondition: k was validated (parsed or set()).
  [[nodiscard]] std::optional<uint32_t> fixed_k() const;
  bool operator==(const speculative_section&) const = default;
};

/// One [[plugins.load]] entry.
struct plugin_load {
  std::string name;  ///< the name the runtime and console use; unique
  std::string path;  ///< the .so file; empty: <plugins.dir>/lib<name>.so
  bool operator==(const plugin_load&) const = default;
};

/// [plugins]: plugins loaded at start-up (never from a path sent by a remote client).
struct plugins_section {
  std::string dir = "build/plugins";
  std::vector<plugin_load> load;

  /// The file of p: p.path, or <dir>/lib<name>.so when empty.
  [[nodiscard]] std::string file_of(const plugin_load& p) const;
  bool operator==(const plugins_section&) const = default;
};

/// One [[devices]] entry: a compute device and its role in prefill/decode separation.
struct device_section {
  std::string kind = "cpu";    ///< cpu | cuda
  uint32_t id = 0;             ///< index among devices of its kind; (kind, id) is unique
  int threads = 0;             ///< cpu: kernel threads; 0: compute.threads
  uint32_t kv_pool_mib = 0;    ///< KV pool size on this device; 0: as [kv_cache] says
  std::string role = "both";   ///< prefill | decode | both | offload
  double bandwidth_gbs = 0.0;  ///< memory bandwidth in GB/s for the k policy; 0: unknown
  bool operator==(const device_section&) const = default;
};

/// [server]: the HTTP front end.
struct server_section {
  std::string host = "127.0.0.1";
  uint32_t port = 8080;   ///< 0: any free port
  int threads = 8;        ///< HTTP worker threads (each open stream holds one)
  bool operator==(const server_section&) const = default;
};

// -- the whole configuration --

/// The effective configuration: built-in defaults, then a file, then overrides.
struct config {
  model_section model;
  compute_section compute;
  kv_cache_section kv_cache;
  sampling_section sampling;
  scheduler_section scheduler;
  logging_section logging;
  speculative_section speculative;
  plugins_section plugins;
  std::vector<device_section> devices = {device_section{}};  ///< default: one cpu device, role both
  server_section server;
  std::string source_path;  ///< the file parsed (or the name given to from_string); empty: built-in

  /// Reads and parses a TOML file; errc::io_error when it cannot be read.
  [[nodiscard]] static expected<config> from_file(const std::string& path);
  /// Parses TOML text; name stands for the file in error messages and becomes source_path.
  [[nodiscard]] static expected<config> from_string(std::string_view text, std::string_view name);

  /// Checks the rules that involve several keys (e.g. draft = "model" needs draft_model);
  /// single values are checked when parsed or set. errc::invalid_argument, one problem per line.
  [[nodiscard]] expected<void> validate() const;

  /// Sets one value from text, checked like the file's value; then validate(). On error nothing
  /// changes. key is "section.key" or a bare key that names one field ("temperature", "draft").
  /// Text is read as TOML ("0.2", "[\"a\", \"b\"]", "\"quoted\"") except that string keys take
  /// it as is, and a list of strings takes a bare word as a one-element list ("" empties it).
  /// Arrays of tables (devices, plugins.load) are not settable.
  expected<void> set(std::string_view key, std::string_view value);
  /// Applies several set()s, then validate() once; all or nothing. Errors name the key.
  expected<void> set_all(const std::vector<std::pair<std::string, std::string>>& values);
  /// The current value of key (same key forms as set()) as TOML text.
  [[nodiscard]] expected<std::string> get(std::string_view key) const;
  /// Every key set() accepts, as "section.key", in file order.
  [[nodiscard]] static std::vector<std::string> keys();

  /// The effective configuration as TOML that from_string() parses back to an equal config.
  [[nodiscard]] std::string to_toml() const;
  /// to_toml() headed by a comment naming the source (for the console's :config).
  [[nodiscard]] std::string describe() const;

  bool operator==(const config&) const = default;
};

}  // namespace fw

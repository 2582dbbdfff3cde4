#include "runtime/config/config_schema.hpp"

#include "runtime/base/edit_distance.hpp"
#include "runtime/config/sections/enum_names.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>

namespace fw::config_schema {

namespace {

/// Shortest text that reads back to v ("1", "0.7") for messages.
template <class F>
std::string shortest(F v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

/// shortest(v) with a '.' or exponent: a TOML float.
template <class F>
std::string format_number(F v) {
  std::string s = shortest(v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // 'n': inf, nan
  return s;
}

/// "0 to 1024 (0 = all cores)"; an open bound says "above 0, up to 100".
std::string range_text(const std::string& lo, const std::string& hi, std::string_view note) {
  std::string s = lo + (hi.rfind("up to ", 0) == 0 ? " " : " to ") + hi;
  if (!note.empty()) s += " (" + std::string(note) + ")";
  return s;
}

// -- field makers: one per kind of value --

template <class T, class M>
field<T> integer(std::string_view key, M T::*m, int64_t lo, int64_t hi, std::string_view note = {}) {
  return {key, value_kind::integer,
          [=](T& obj, const toml::node& n, const std::string& q) -> check_result {
            const auto* v = n.as_integer();
            if (!v) return q + ": expected an integer, got " + type_name(n);
            const int64_t x = v->get();
            if (x < lo || x > hi)
              return q + " = " + std::to_string(x) + " is out of range; allowed: " +
                     range_text(std::to_string(lo), std::to_string(hi), note);
            obj.*m = static_cast<M>(x);
            return {};
          },
          [=](const T& obj) { return std::to_string(obj.*m); },
          "an integer, " + range_text(std::to_string(lo), std::to_string(hi), note)};
}

/// A float or integer in [lo, hi]; with lo_open the lower bound itself is excluded.
template <class T, class M>
field<T> number(std::string_view key, M T::*m, double lo, double hi, bool lo_open,
                std::string_view note = {}) {
  return {key, value_kind::number,
          [=](T& obj, const toml::node& n, const std::string& q) -> check_result {
            double x = 0;
            if (const auto* f = n.as_floating_point()) x = f->get();
            else if (const auto* i = n.as_integer()) x = static_cast<double>(i->get());
            else return q + ": expected a number, got " + type_name(n);
            if (!std::isfinite(x) || x > hi || (lo_open ? x <= lo : x < lo)) {
              const std::string low = lo_open ? "above " + shortest(lo) + "," : shortest(lo);
              return q + " = " + shortest(x) + " is out of range; allowed: " +
                     range_text(low, (lo_open ? "up to " : "") + shortest(hi), note);
            }
            obj.*m = static_cast<M>(x);
            return {};
          },
          [=](const T& obj) { return format_number(obj.*m); },
          "a number, " + range_text(lo_open ? "above " + shortest(lo) + "," : shortest(lo), (lo_open ? "up to " : "") + shortest(hi), note)};
}

template <class T>
field<T> boolean(std::string_view key, bool T::*m) {
  return {key, value_kind::boolean,
          [=](T& obj, const toml::node& n, const std::string& q) -> check_result {
            const auto* v = n.as_boolean();
            if (!v) return q + ": expected true or false, got " + type_name(n);
            obj.*m = v->get();
            return {};
          },
          [=](const T& obj) { return std::string(obj.*m ? "true" : "false"); },
          "true or false"};
}

/// An array of distinct integers in [lo, hi].
template <class T>
field<T> integer_list(std::string_view key, std::vector<int> T::*m, int lo, int hi) {
  return {key, value_kind::integer_list,
          [=](T& obj, const toml::node& n, const std::string& q) -> check_result {
            const auto* a = n.as_array();
            if (!a) return q + ": expected an array of integers, got " + type_name(n);
            std::vector<int> out;
            for (size_t i = 0; i < a->size(); ++i) {
              const std::string qi = q + "[" + std::to_string(i) + "]";
              const auto* v = a->get(i)->as_integer();
              if (!v) return qi + ": expected an integer, got " + type_name(*a->get(i));
              if (v->get() < lo || v->get() > hi)
                return qi + " = " + std::to_string(v->get()) + " is out of range; allowed: " +
                       range_text(std::to_string(lo), std::to_string(hi), {});
              if (std::find(out.begin(), out.end(), v->get()) != out.end())
                return qi + " = " + std::to_string(v->get()) + " is listed twice";
              out.push_back(static_cast<int>(v->get()));
            }
            obj.*m = std::move(out);
            return {};
          },
          [=](const T& obj) {
            std::string s = "[";
            for (size_t i = 0; i < (obj.*m).size(); ++i) s += (i ? ", " : "") + std::to_string((obj.*m)[i]);
            return s + "]";
          },
          "distinct integers, " + range_text(std::to_string(lo), std::to_string(hi), {})};
}

template <class T>
field<T> text(std::string_view key, std::string T::*m, bool allow_empty) {
  return {key, value_kind::string,
          [=](T& obj, const toml::node& n, const std::string& q) -> check_result {
            const auto* v = n.as_string();
            if (!v) return q + ": expected a string, got " + type_name(n);
            if (!allow_empty && v->get().empty()) return q + " must not be empty";
            obj.*m = v->get();
            return {};
          },
          [=](const T& obj) { return quote(obj.*m); },
          allow_empty ? "a string" : "a non-empty string"};
}

/// A string naming one value of an enumeration (its table in sections/).
template <class T, class E, size_t N>
field<T> enumerated(std::string_view key, E T::*m, const enum_table<E, N>& table) {
  return {key, value_kind::string,
          [=, &table](T& obj, const toml::node& n, const std::string& q) -> check_result {
            const auto* v = n.as_string();
            if (!v) return q + ": expected a string, got " + type_name(n);
            const auto e = enum_from_name(table, v->get());
            if (!e) {
              const auto allowed = enum_names(table);
              return q + " = " + quote(v->get()) + " is not allowed" + suggestion(v->get(), allowed) +
                     "; allowed: " + join(allowed);
            }
            obj.*m = *e;
            return {};
          },
          [=, &table](const T& obj) { return quote(enum_name(table, obj.*m)); },
          "one of " + join(enum_names(table))};
}

template <class T>
field<T> string_list(std::string_view key, std::vector<std::string> T::*m) {
  return {key, value_kind::string_list,
          [=](T& obj, const toml::node& n, const std::string& q) -> check_result {
            const auto* a = n.as_array();
            if (!a) return q + ": expected an array of strings, got " + type_name(n);
            std::vector<std::string> out;
            for (size_t i = 0; i < a->size(); ++i) {
              const std::string qi = q + "[" + std::to_string(i) + "]";
              const auto* s = a->get(i)->as_string();
              if (!s) return qi + ": expected a string, got " + type_name(*a->get(i));
              if (s->get().empty()) return qi + " must not be empty";
              out.push_back(s->get());
            }
            obj.*m = std::move(out);
            return {};
          },
          [=](const T& obj) {
            std::string s = "[";
            for (size_t i = 0; i < (obj.*m).size(); ++i) s += (i ? ", " : "") + quote((obj.*m)[i]);
            return s + "]";
          },
          "a list of non-empty strings"};
}

/// speculative.draft: a built-in kind or "plugin:NAME" (a draft_model plugin from [[plugins.load]]).
field<speculative_section> draft_field() {
  return {"draft", value_kind::string,
          [](speculative_section& s, const toml::node& n, const std::string& q) -> check_result {
            const auto* v = n.as_string();
            if (!v) return q + ": expected a string, got " + type_name(n);
            const std::string& t = v->get();
            if (t.rfind("plugin:", 0) == 0 && t.size() > 7) {
              s.draft = draft_kind::plugin;
              s.draft_plugin = t.substr(7);
              return {};
            }
            std::vector<std::string_view> allowed;
            for (const auto& [kind, name] : draft_kind_names)
              if (kind != draft_kind::plugin) allowed.push_back(name);
            const auto kind = enum_from_name(draft_kind_names, t);
            if (!kind || *kind == draft_kind::plugin)
              return q + " = " + quote(t) + " is not allowed" + suggestion(t, allowed) + "; allowed: " +
                     join(allowed) + ", or \"plugin:NAME\" for a draft_model plugin";
            s.draft = *kind;
            s.draft_plugin.clear();
            return {};
          },
          [](const speculative_section& s) { return quote(s.draft_name()); },
          "one of none, model, self-quant, layer-skip, ngram, feature, hybrid, or \"plugin:NAME\""};
}

/// speculative.k: "auto" or a whole number 1..16, written as an integer or a string.
field<speculative_section> draft_k() {
  return {"k", value_kind::int_or_string,
          [](speculative_section& s, const toml::node& n, const std::string& q) -> check_result {
            const std::string allowed = "; allowed: \"auto\" or 1 to 16";
            if (const auto* i = n.as_integer()) {
              if (i->get() < 1 || i->get() > 16)
                return q + " = " + std::to_string(i->get()) + " is out of range" + allowed;
              s.k = static_cast<uint32_t>(i->get());
              return {};
            }
            const auto* v = n.as_string();
            if (!v) return q + ": expected an integer or \"auto\", got " + type_name(n);
            const std::string& t = v->get();
            if (t == "auto") {
              s.k.reset();
              return {};
            }
            int k = 0;
            auto res = std::from_chars(t.data(), t.data() + t.size(), k);
            if (t.empty() || res.ec != std::errc{} || res.ptr != t.data() + t.size() || k < 1 || k > 16)
              return q + " = " + quote(t) + " is not allowed" + allowed;
            s.k = static_cast<uint32_t>(k);
            return {};
          },
          [](const speculative_section& s) {
            return s.k ? std::to_string(*s.k) : quote("auto");  // a number prints as a TOML integer
          },
          "\"auto\" or an integer, 1 to 16"};
}

/// A field of section S, seen from the whole config.
template <class S>
field<config> lift(S config::*sec, field<S> f) {
  return {f.key, f.kind,
          [sec, a = std::move(f.assign)](config& c, const toml::node& n, const std::string& q) {
            return a(c.*sec, n, q);
          },
          [sec, p = std::move(f.print)](const config& c) { return p(c.*sec); }, std::move(f.allowed)};
}

template <class S>
section make_section(std::string_view name, S config::*sec, std::vector<field<S>> fields,
                     std::vector<std::string_view> arrays = {}) {
  section out{name, {}, std::move(arrays)};
  for (auto& f : fields) out.fields.push_back(lift(sec, std::move(f)));
  return out;
}

/// Runs f's checks, then after(obj) when they passed.
template <class T, class After>
field<T> then(field<T> f, After after) {
  f.assign = [a = std::move(f.assign), after](T& obj, const toml::node& n, const std::string& q) {
    auto r = a(obj, n, q);
    if (!r) after(obj);
    return r;
  };
  return f;
}

std::vector<section> build_sections() {
  constexpr int64_t max_ctx = int64_t{1} << 20;
  std::vector<section> s;
  s.push_back(make_section<model_section>(
      "model", &config::model,
      {text("path", &model_section::path, false),
       integer("ctx_size", &model_section::ctx_size, 0, max_ctx,
               "0 = the model's training context, capped at 4096")}));
  s.push_back(make_section<compute_section>(
      "compute", &config::compute,
      {integer("threads", &compute_section::threads, 0, 1024, "0 = all cores"),
       string_list("kernel_plugins", &compute_section::kernel_plugins)}));
  s.push_back(make_section<kv_cache_section>(
      "kv_cache", &config::kv_cache,
      {integer("block_tokens", &kv_cache_section::block_tokens, 1, 1024),
       then(integer("pool_tokens", &kv_cache_section::pool_tokens, 0, int64_t{1} << 24,
                    "0 = size by pool_mib"),
            [](kv_cache_section& k) { if (k.pool_tokens > 0) k.pool_mib = 0; }),
       then(integer("pool_mib", &kv_cache_section::pool_mib, 0, int64_t{1} << 20,
                    "0 = size by pool_tokens"),
            [](kv_cache_section& k) { if (k.pool_mib > 0) k.pool_tokens = 0; }),
       enumerated("type", &kv_cache_section::type, kv_cache_type_names),
       number("prefix_cache_share", &kv_cache_section::prefix_cache_share, 0, 0.9, false, "0 = off"),
       enumerated("transfer", &kv_cache_section::transfer, kv_transfer_type_names)}));
  s.push_back(make_section<sampling_section>(
      "sampling", &config::sampling,
      {number("temperature", &sampling_section::temperature, 0, 100, false, "0 = greedy"),
       integer("top_k", &sampling_section::top_k, 0, 1 << 20, "0 = off"),
       number("top_p", &sampling_section::top_p, 0, 1, false, "1 = off"),
       number("min_p", &sampling_section::min_p, 0, 1, false, "0 = off"),
       number("repeat_penalty", &sampling_section::repeat_penalty, 0, 100, true, "1 = off"),
       integer("repeat_last_n", &sampling_section::repeat_last_n, -1, max_ctx,
               "0 = off, -1 = whole history"),
       number("presence_penalty", &sampling_section::presence_penalty, -2, 2, false, "0 = off"),
       number("frequency_penalty", &sampling_section::frequency_penalty, -2, 2, false, "0 = off"),
       integer("seed", &sampling_section::seed, 0, std::numeric_limits<int64_t>::max(),
               "0 = random"),
       integer("max_tokens", &sampling_section::max_tokens, -1, max_ctx,
               "-1 = until end of sequence or context"),
       string_list("stop", &sampling_section::stop)}));
  s.push_back(make_section<scheduler_section>(
      "scheduler", &config::scheduler,
      {integer("max_batch", &scheduler_section::max_batch, 1, 1024),
       integer("max_queue", &scheduler_section::max_queue, 1, 1 << 20),
       integer("prefill_chunk", &scheduler_section::prefill_chunk, 1, 1 << 16),
       number("prefill_chunk_ms", &scheduler_section::prefill_chunk_ms, 0, 60000, false, "0 = off"),
       boolean("decode_priority", &scheduler_section::decode_priority),
       enumerated("prefill_order", &scheduler_section::prefill_order, prefill_order_type_names),
       number("prefill_max_wait_s", &scheduler_section::prefill_max_wait_s, 0, 3600, false, "0 = no bound"),
       number("prefill_deadline_s", &scheduler_section::prefill_deadline_s, 0, 3600, false, "0 = none"),
       integer("offload_after_tokens", &scheduler_section::offload_after_tokens, 0, 1 << 20),
       number("offload_below_free_share", &scheduler_section::offload_below_free_share, 0, 1, false,
              "1 = whenever a sequence is long enough"),
       number("offload_tpot_ms", &scheduler_section::offload_tpot_ms, 0, 60000, false, "0 = off"),
       number("request_timeout_s", &scheduler_section::request_timeout_s, 0, 7 * 86400, false,
              "0 = none"),
       number("admission_tpot_ms", &scheduler_section::admission_tpot_ms, 0, 60000, false, "0 = off")}));
  s.push_back(make_section<speculative_section>(
      "speculative", &config::speculative,
      {draft_field(),
       text("draft_model", &speculative_section::draft_model, true),
       text("feature_map", &speculative_section::feature_map, false),
       text("feature_prompts", &speculative_section::feature_prompts, false),
       draft_k(),
       integer("draft_layers", &speculative_section::draft_layers, 0, 1024,
               "0 = half of the target's layers"),
       enumerated("draft_quant", &speculative_section::draft_quant, draft_quant_type_names),
       integer("ngram_min", &speculative_section::ngram_min, 1, 16),
       number("draft_stop_p", &speculative_section::draft_stop_p, 0, 1, false, "0 = never"),
       integer("draft_threads", &speculative_section::draft_threads, 0, 1024,
               "0 = share the target's threads")}));
  s.push_back(make_section<plugins_section>(
      "plugins", &config::plugins, {text("dir", &plugins_section::dir, false)},
      {"load"}));
  s.push_back(make_section<server_section>(
      "server", &config::server,
      {text("host", &server_section::host, false),
       integer("port", &server_section::port, 0, 65535, "0 = any free port"),
       text("model_name", &server_section::model_name, true),
       text("api_key", &server_section::api_key, true),
       integer("max_body_kib", &server_section::max_body_kib, 1, 1 << 20),
       number("read_timeout_s", &server_section::read_timeout_s, 0, 3600, true),
       number("idle_timeout_s", &server_section::idle_timeout_s, 0, 86400, true),
       number("write_timeout_s", &server_section::write_timeout_s, 0, 3600, true),
       integer("max_connections", &server_section::max_connections, 1, 1 << 20),
       number("shutdown_timeout_s", &server_section::shutdown_timeout_s, 0, 3600, false),
       integer("retry_after_s", &server_section::retry_after_s, 1, 3600),
       text("tls_cert", &server_section::tls_cert, true),
       text("tls_key", &server_section::tls_key, true)}));
  s.push_back(make_section<supervisor_section>(
      "supervisor", &config::supervisor,
      {integer("restart_backoff_ms", &supervisor_section::restart_backoff_ms, 0, 600000),
       integer("restart_backoff_max_ms", &supervisor_section::restart_backoff_max_ms, 0, 3600000),
       integer("max_restarts", &supervisor_section::max_restarts, 1, 1 << 20),
       number("restart_window_s", &supervisor_section::restart_window_s, 1, 86400, false),
       number("down_s", &supervisor_section::down_s, 0, 86400, false),
       integer("request_retries", &supervisor_section::request_retries, 0, 100),
       integer("telemetry_poll_ms", &supervisor_section::telemetry_poll_ms, 0, 3600000, "0 = off"),
       string_list("telemetry_plugins", &supervisor_section::telemetry_plugins),
       number("temp_degraded_c", &supervisor_section::temp_degraded_c, 0, 200, false),
       number("temp_co_located_c", &supervisor_section::temp_co_located_c, 0, 200, false),
       number("link_nominal_gbps", &supervisor_section::link_nominal_gbps, 0, 100000, false, "0 = highest seen"),
       number("link_min_share", &supervisor_section::link_min_share, 0, 1, false),
       integer("sustain_samples", &supervisor_section::sustain_samples, 1, 100000),
       integer("recover_samples", &supervisor_section::recover_samples, 1, 100000),
       integer("degraded_k_cap", &supervisor_section::degraded_k_cap, 0, 64),
       enumerated("degraded_kv_transfer", &supervisor_section::degraded_kv_transfer, kv_transfer_type_names)}));
  s.push_back(make_section<rollout_section>(
      "rollout", &config::rollout,
      {boolean("enabled", &rollout_section::enabled),
       integer_list("shares_pct", &rollout_section::shares_pct, 0, 100),
       integer("start_stage", &rollout_section::start_stage, 1, 4),
       number("p99_ratio", &rollout_section::p99_ratio, 1, 100, false),
       number("max_error_rate", &rollout_section::max_error_rate, 0, 1, false),
       number("max_draft_failure", &rollout_section::max_draft_failure, 0, 1, false),
       integer("min_requests", &rollout_section::min_requests, 1, 1 << 20),
       integer("advance_after", &rollout_section::advance_after, 1, 1 << 20),
       number("cooldown_s", &rollout_section::cooldown_s, 0, 86400, false)}));
  s.push_back(make_section<node_section>(
      "node", &config::node,
      {enumerated("role", &node_section::role, node_role_names),
       text("listen", &node_section::listen, true),
       string_list("peers", &node_section::peers),
       integer("heartbeat_ms", &node_section::heartbeat_ms, 10, 600000),
       integer("heartbeat_timeout_ms", &node_section::heartbeat_timeout_ms, 10, 3600000),
       integer("reconnect_ms", &node_section::reconnect_ms, 1, 600000),
       integer("reconnect_max_ms", &node_section::reconnect_max_ms, 1, 3600000),
       integer("deadline_ms", &node_section::deadline_ms, 1, 3600000),
       integer("chunk_kib", &node_section::chunk_kib, 4, 1 << 20),
       integer("min_remote_tokens", &node_section::min_remote_tokens, 0, 1 << 20),
       text("secret_file", &node_section::secret_file, true),
       text("tls_cert", &node_section::tls_cert, true),
       text("tls_key", &node_section::tls_key, true),
       text("tls_ca", &node_section::tls_ca, true)}));
  s.push_back(make_section<quantize_section>(
      "quantize", &config::quantize,
      {text("scheme", &quantize_section::scheme, false),
       text("calib", &quantize_section::calib, true),
       integer("group", &quantize_section::group, 32, 128),
       enumerated("method", &quantize_section::method, quantize_method_names),
       enumerated("act", &quantize_section::act, quantize_activations_names),
       integer("budget_mib", &quantize_section::budget_mib, 0, 1 << 24),
       string_list("layers", &quantize_section::layers)}));
  s.push_back(make_section<alerts_section>(
      "alerts", &config::alerts,
      {number("min_acceptance_rate", &alerts_section::min_acceptance_rate, 0, 1, false),
       number("max_prefill_to_decode_s", &alerts_section::max_prefill_to_decode_s, 0, 3600, true),
       number("ttft_p99_slo_s", &alerts_section::ttft_p99_slo_s, 0, 3600, true),
       number("tpot_p99_slo_s", &alerts_section::tpot_p99_slo_s, 0, 3600, true),
       number("window_s", &alerts_section::window_s, 1, 86400, false)}));
  s.push_back(make_section<logging_section>(
      "logging", &config::logging, {enumerated("level", &logging_section::level, logging_level_names)}));
  return s;
}

}  // namespace

const field<config>* section::find(std::string_view key) const {
  for (const auto& f : fields)
    if (f.key == key) return &f;
  return nullptr;
}

std::vector<std::string_view> section::allowed() const {
  std::vector<std::string_view> out;
  for (const auto& f : fields) out.push_back(f.key);
  out.insert(out.end(), arrays.begin(), arrays.end());
  return out;
}

const std::vector<section>& sections() {
  static const std::vector<section> all = build_sections();
  return all;
}

const section* find_section(std::string_view name) {
  for (const auto& s : sections())
    if (s.name == name) return &s;
  return nullptr;
}

const std::vector<field<device_section>>& device_fields() {
  static const std::vector<field<device_section>> all = {
      enumerated("kind", &device_section::kind, device_kind_names),
      integer("id", &device_section::id, 0, 255),
      integer("threads", &device_section::threads, 0, 1024, "0 = compute.threads"),
      integer_list("cores", &device_section::cores, 0, 4095),
      integer("kv_pool_mib", &device_section::kv_pool_mib, 0, int64_t{1} << 20,
              "0 = as [kv_cache] says"),
      enumerated("role", &device_section::role, device_role_names),
      number("bandwidth_gbs", &device_section::bandwidth_gbs, 0, 1e5, false, "0 = unknown"),
  };
  return all;
}

const std::vector<field<plugin_load>>& plugin_load_fields() {
  static const std::vector<field<plugin_load>> all = {
      text("name", &plugin_load::name, false),
      text("path", &plugin_load::path, true),
  };
  return all;
}

// -- text helpers --

std::string type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string join(const std::vector<std::string_view>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + std::string(items[i]);
  return out;
}

std::string_view nearest(std::string_view word, const std::vector<std::string_view>& candidates) {
  auto distance = [](std::string_view a, std::string_view b) { return edit_distance(a, b, true); };
  std::string_view best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (auto c : candidates) {
    const size_t d = distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string suggestion(std::string_view word, const std::vector<std::string_view>& candidates) {
  const auto n = nearest(word, candidates);
  return n.empty() ? std::string() : " (did you mean '" + std::string(n) + "'?)";
}

}  // namespace fw::config_schema

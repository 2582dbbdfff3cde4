// CAF inspectors for runtime value types that travel in messages (KV handles, sampling
// parameters, step events). Kept here so runtime/ stays free of CAF.
#pragma once

#include <caf/meta/type_name.hpp>

#include "runtime/step/step_result.hpp"
#include "runtime/kv/kv_handle.hpp"
#include "runtime/sample/sampling_params.hpp"
#include "runtime/supervise/pair_check.hpp"
#include "runtime/supervise/telemetry_sample.hpp"

namespace fw {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_handle& x) {
  return f(caf::meta::type_name("fw::kv_handle"), x.pool_id, x.epoch, x.n_tokens, x.blocks);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampling_params& x) {
  return f(caf::meta::type_name("fw::sampling_params"), x.temperature, x.top_k, x.top_p, x.min_p,
           x.repeat_penalty, x.repeat_last_n, x.presence_penalty, x.frequency_penalty, x.seed,
           x.max_tokens, x.stop, x.ignore_eos, x.stop_token_ids, x.min_tokens, x.logit_bias_ids, x.logit_bias, x.max_draft_k,
           x.logprobs, x.prompt_logprobs, x.json_object, x.choices, x.json_schema, x.regex, x.grammar);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_logprobs& x) {
  return f(caf::meta::type_name("fw::token_logprobs"), x.token, x.logprob, x.rank, x.top_ids, x.top_logprobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, telemetry_sample& x) {
  return f(caf::meta::type_name("fw::telemetry_sample"), x.t_s, x.device, x.metric, x.value);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, device_identity& x) {
  return f(caf::meta::type_name("fw::device_identity"), x.name, x.kind, x.cuda_runtime, x.cuda_driver,
           x.compute_capability, x.model_fingerprint, x.kv_format_version, x.kv_layers, x.kv_heads, x.kv_head_dim);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_event& x) {
  return f(caf::meta::type_name("fw::step_event"), x.id, x.token, x.text, x.finished, x.finish_reason,
           x.generated, x.cached_tokens, x.has_logprob, x.logprob, x.top_ids, x.top_logprobs, x.prompt_logprobs);
}

}  // namespace fw

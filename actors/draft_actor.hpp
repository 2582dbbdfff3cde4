// draft_actor: speculative decoding's draft, on its own thread (spawned detached) beside the
// decode worker that verifies. It owns the engine's drafter through a draft_pipeline and answers
// the decode worker's asks for proposals; with threads of its own ([speculative] draft_threads)
// a draft that can (a separate draft model) drafts the next step while the target verifies this
// one; a draft that proposes from the confirmed history alone (n-gram, feature, hybrid) drafts
// each sequence's next proposal as soon as the verdict arrives, so the next ask finds it ready.
// It keeps no target KV: the decode worker holds every target handle. If it dies (a throw,
// tests: engine_faults::crash_draft), the decode worker's sequences step plainly until the
// supervisor's replacement arrives; the replacement starts them again from their histories.
// Protocol: actors/protocol/draft_protocol.hpp.
#pragma once

#include <caf/typed_event_based_actor.hpp>

#include <memory>

#include "actors/engine_context.hpp"
#include "actors/protocol/draft_protocol.hpp"
#include "runtime/spec/drafts/draft_pipeline.hpp"

namespace fw::actors {

struct draft_state {
  explicit draft_state(caf::local_actor*) {}
  std::unique_ptr<draft_pipeline> pipeline;
  static inline const char* name = "fw.draft";
};

draft_actor::behavior_type draft_worker(draft_actor::stateful_pointer<draft_state> self, const engine_context* ctx);

}  // namespace fw::actors

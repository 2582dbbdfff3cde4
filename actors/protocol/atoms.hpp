// The atoms of every actor protocol, in one place (CAF 0.17: at most 10 characters each). A
// protocol header lists which of them its actor takes. Thread-safety: constants.
#pragma once

#include <caf/atom.hpp>

namespace fw::actors {

using init_atom = caf::atom_constant<caf::atom("init")>;          ///< start / wire up
using ok_atom = caf::atom_constant<caf::atom("ok")>;              ///< a positive reply
using generate_atom = caf::atom_constant<caf::atom("generate")>;  ///< a client request
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;      ///< stop one request
using fail_atom = caf::atom_constant<caf::atom("fail")>;          ///< requests that failed
using shutdown_atom = caf::atom_constant<caf::atom("shutdown")>;  ///< stop the engine
using stats_atom = caf::atom_constant<caf::atom("stats")>;        ///< a scheduler_stats reply
using prefill_atom = caf::atom_constant<caf::atom("prefill")>;    ///< run a prompt into KV
using decode_atom = caf::atom_constant<caf::atom("decode")>;      ///< a sequence joins decoding
using step_atom = caf::atom_constant<caf::atom("step")>;          ///< one decode step / its tokens
using done_atom = caf::atom_constant<caf::atom("done")>;          ///< sequences that finished
using worker_atom = caf::atom_constant<caf::atom("worker")>;      ///< a worker (re)started
using tick_atom = caf::atom_constant<caf::atom("tick")>;          ///< a timer
using transfer_atom = caf::atom_constant<caf::atom("transfer")>;  ///< move KV between devices
using offload_atom = caf::atom_constant<caf::atom("offload")>;    ///< a sequence leaves for the offload device
using adopt_atom = caf::atom_constant<caf::atom("adopt")>;        ///< a running sequence joins a decode worker
using fallback_atom = caf::atom_constant<caf::atom("fallback")>;  ///< the co-located prefill worker
using progress_atom = caf::atom_constant<caf::atom("progress")>;  ///< tokens a decode step produced
using lost_atom = caf::atom_constant<caf::atom("lost")>;          ///< a worker died (restart pending)
using degrade_atom = caf::atom_constant<caf::atom("degrade")>;    ///< a degradation state to apply
using drill_atom = caf::atom_constant<caf::atom("drill")>;        ///< replay a telemetry trace
using telemetry_atom = caf::atom_constant<caf::atom("telemetry")>;  ///< samples of one moment
using health_atom = caf::atom_constant<caf::atom("health")>;      ///< workers' and devices' health
using hello_atom = caf::atom_constant<caf::atom("hello")>;        ///< the handshake between nodes
using auth_atom = caf::atom_constant<caf::atom("auth")>;          ///< a node's proof of the shared secret
using ping_atom = caf::atom_constant<caf::atom("ping")>;          ///< a heartbeat
using chunk_atom = caf::atom_constant<caf::atom("chunk")>;        ///< part of a KV stream between nodes
using peers_atom = caf::atom_constant<caf::atom("peers")>;        ///< a decode node's view of its peers
using draft_atom = caf::atom_constant<caf::atom("draft")>;        ///< a decode worker's draft actor
using propose_atom = caf::atom_constant<caf::atom("propose")>;    ///< proposals asked of the draft actor
using verdict_atom = caf::atom_constant<caf::atom("verdict")>;    ///< what the target accepted
using begin_atom = caf::atom_constant<caf::atom("begin")>;        ///< sequences start drafting
using end_atom = caf::atom_constant<caf::atom("end")>;            ///< sequences stop drafting

}  // namespace fw::actors

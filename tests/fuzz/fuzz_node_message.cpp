// libFuzzer target: the messages a node receives from a peer over the network (CAF's binary
// format: the handshake and its proof, a remote prefill job, a KV chunk, the job's reply), decoded
// from arbitrary bytes the way CAF's network layer decodes them, then judged as the node judges
// them (the handshake's pair check, the proof, each message's seal under a session key). The
// first byte picks the message type. Nothing may crash, leak or hang, and no fuzzed proof or
// seal may pass.
#include <caf/binary_deserializer.hpp>

#include <cstddef>
#include <cstdint>

#include <cstdlib>

#include "actors/node_seal.hpp"
#include "actors/protocol/node_protocol.hpp"
#include "runtime/net/link_auth.hpp"
#include "runtime/supervise/pair_check.hpp"

namespace {
const std::string secret = "the fuzzer's node secret, not in any input";
const std::string nonce(32, 'n');
const std::string key = fw::link_session_key(secret, nonce, nonce);

template <class Message>
void judge(const Message& m) {
  if (fw::actors::sealed_by(key, m)) std::abort();  // a forged seal passed
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  caf::binary_deserializer src(static_cast<caf::execution_unit*>(nullptr), reinterpret_cast<const char*>(data + 1),
                               size - 1);
  switch (data[0] % 5) {
    case 0: {
      fw::actors::node_hello theirs;
      if (src(theirs)) return 0;  // an error: refused before it reaches the node
      fw::device_identity mine;
      mine.name = "decode node";
      mine.kind = "cpu";
      (void)fw::check_pair(mine, theirs.identity);
      (void)fw::check_pair(theirs.identity, mine);
      if (fw::same_tag(theirs.proof, fw::link_proof(secret, "prefill", nonce, theirs.nonce))) std::abort();
      break;
    }
    case 1: {
      fw::actors::remote_prefill_job job;
      if (!src(job)) judge(job);
      break;
    }
    case 2: {
      fw::actors::remote_prefill_done done;
      if (!src(done)) judge(done);
      break;
    }
    case 3: {
      fw::actors::kv_chunk chunk;
      if (!src(chunk)) judge(chunk);
      break;
    }
    default: {
      fw::actors::node_proof proof;
      if (!src(proof) && fw::same_tag(proof.proof, fw::link_proof(secret, "decode", nonce, nonce))) std::abort();
      break;
    }
  }
  return 0;
}

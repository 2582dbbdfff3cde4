// libFuzzer target: the messages a node receives from a peer over the network (CAF's binary
// format: the handshake, a remote prefill job, its reply), decoded from arbitrary bytes the way
// CAF's network layer decodes them, then judged as the node judges them (the handshake's pair
// check). The first byte picks the message type. Nothing may crash, leak or hang.
#include <caf/binary_deserializer.hpp>

#include <cstddef>
#include <cstdint>

#include "actors/protocol/node_protocol.hpp"
#include "runtime/supervise/pair_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  caf::binary_deserializer src(static_cast<caf::execution_unit*>(nullptr), reinterpret_cast<const char*>(data + 1),
                               size - 1);
  switch (data[0] % 3) {
    case 0: {
      fw::actors::node_hello theirs;
      if (src(theirs)) return 0;  // an error: refused before it reaches the node
      fw::device_identity mine;
      mine.name = "decode node";
      mine.kind = "cpu";
      (void)fw::check_pair(mine, theirs.identity);
      (void)fw::check_pair(theirs.identity, mine);
      break;
    }
    case 1: {
      fw::actors::remote_prefill_job job;
      (void)src(job);
      break;
    }
    default: {
      fw::actors::remote_prefill_done done;
      (void)src(done);
      break;
    }
  }
  return 0;
}

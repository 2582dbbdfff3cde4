// Writes the seed inputs that only the library can make well-formed (a KV stream per wire format,
// a small GGUF with metadata of every kind and a few tensors, each node message in CAF's binary
// format) into tests/fuzz/corpus/. Run once
// when a format changes (scripts/fuzz.sh --make-seeds); the files are committed.
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <caf/binary_serializer.hpp>

#include "actors/protocol/node_protocol.hpp"
#include "runtime/gguf/gguf_writer.hpp"
#include "runtime/kv/kv_block_pool.hpp"
#include "runtime/kv/kv_codec.hpp"

namespace {

template <class Bytes>
void write(const std::string& path, const Bytes& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  std::printf("%s: %zu bytes\n", path.c_str(), b.size());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : FW_SOURCE_DIR "/tests/fuzz/corpus";
  // The shape fuzz_kv_stream's pool has: 2 layers, 2 KV heads of 8, f16.
  fw::kv_layout l;
  l.n_layer = 2, l.n_head_kv = 2, l.head_dim = 8, l.block_tokens = 16, l.dtype = fw::kv_dtype::f16;
  auto pool = fw::kv_block_pool::create(1, l, 8);
  if (!pool) return 1;
  auto& p = **pool;
  const uint32_t n = 5;
  auto h = p.allocate(n);
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.f, 2.f);
  std::vector<float> k(l.head_dim), v(l.head_dim);
  for (uint32_t t = 0; t < n; ++t)
    for (uint32_t layer = 0; layer < l.n_layer; ++layer)
      for (uint32_t head = 0; head < l.n_head_kv; ++head) {
        for (auto& x : k) x = d(rng);
        for (auto& x : v) x = d(rng);
        p.write_token(*h, t, layer, head, k.data(), v.data());
      }
  if (!p.set_length(*h, n)) return 1;
  for (auto [wire, name] : {std::pair{fw::kv_wire::f32, "f32"}, {fw::kv_wire::f16, "f16"}, {fw::kv_wire::int8, "int8"}}) {
    auto bytes = kv_encode(p, *h, wire);
    if (!bytes) return 1;
    // fuzz_kv_stream reads its first byte as the piece size.
    std::vector<std::byte> seed{std::byte{7}};
    seed.insert(seed.end(), bytes->begin(), bytes->end());
    write(root + "/kv_stream/" + name + ".seed", seed);
  }

  fw::gguf_writer w;
  w.add_string("general.architecture", "llama");
  w.add_uint32("llama.block_count", 2);
  w.add_float32("llama.rope.freq_base", 10000.f);
  w.add_bool("fuzz.flag", true);
  w.add_int64("fuzz.i64", -5);
  w.add_float64("fuzz.f64", 0.5);
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "<s>"});
  w.add_int32_array("tokenizer.ggml.token_type", {1, 1, 3});
  w.add_float32_array("tokenizer.ggml.scores", {0.f, -1.f, -2.f});
  std::vector<uint8_t> f32(4 * 32 * 2, 0), q8(34 * 2, 1), q4(18 * 2, 2);
  w.add_tensor("t.f32", {32, 2}, fw::ggml_type::f32, f32);
  w.add_tensor("t.q8_0", {32, 2}, fw::ggml_type::q8_0, q8);
  w.add_tensor("t.q4_0", {32, 2}, fw::ggml_type::q4_0, q4);
  write(root + "/gguf/small.seed", w.bytes());

  // Node messages as CAF's network layer sends them; fuzz_node_message reads the first byte as
  // the type (0 hello, 1 prefill job, 2 its reply).
  auto node_seed = [&](uint8_t type, auto msg, const char* name) {
    std::vector<char> buf;
    caf::binary_serializer sink(static_cast<caf::execution_unit*>(nullptr), buf);
    if (sink(msg)) return false;
    std::vector<char> seed{static_cast<char>(type)};
    seed.insert(seed.end(), buf.begin(), buf.end());
    write(root + "/node_message/" + name + ".seed", seed);
    return true;
  };
  fw::actors::node_hello hello{fw::actors::node_protocol_version, "prefill", {}, std::string(32, 'a'), std::string(32, 'p')};
  hello.identity.name = "prefill node";
  hello.identity.kind = "cpu";
  fw::actors::remote_prefill_job job{7, {1, 2, 3, 4}, 1, 1 << 20, std::string(32, 's')};
  fw::actors::kv_chunk chunk{7, 0, std::string(64, 'k'), std::string(32, 's')};
  fw::actors::node_proof proof{std::string(32, 'p')};
  fw::actors::remote_prefill_done done;
  done.id = 7, done.chunks = 2, done.bytes = 4096, done.error = "", done.seal = std::string(32, 's');
  if (!node_seed(0, hello, "hello") || !node_seed(1, job, "prefill_job") || !node_seed(2, done, "prefill_done") ||
      !node_seed(3, chunk, "kv_chunk") || !node_seed(4, proof, "proof"))
    return 1;
  return 0;
}

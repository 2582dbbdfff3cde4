// flywheel-tiny-model: writes a deterministic random-weight GGUF for tests and measurements.
//   flywheel-tiny-model --out FILE [--arch llama|qwen2|qwen3|phi3] [--vocab bpe|spm]
//                       [--type f32|f16|bf16|q8_0|q4_0|q4_1] [--layers N] [--embd N] [--ff N]
//                       [--heads N] [--kv-heads N] [--head-dim N] [--ctx N] [--vocab-size N]
//                       [--sliding-window N] [--outliers N] [--seed S] [--untied] [--rope-freqs]
//                       [--shape qwen2-7b|qwen2-1.5b|llama-7b|llama3-8b|llama3-70b]
// --type also takes w4a16 (flywheel's 4-bit format, groups of 128, round to nearest).
// --outliers N: the first N channels of every layer norm are 16x larger (outlier activations).
// --shape: a real model's sizes (random weights, untied head, a padded vocabulary) for speed
//          measurements; later options override its sizes (llama3-70b --layers 4: four layers
//          of the 70B model's dimensions, for per-layer GPU timings that fit a short loan).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tools/tiny_model/tiny_model.hpp"

namespace {

int usage(const char* msg) {
  if (msg) std::fprintf(stderr, "flywheel-tiny-model: %s\n", msg);
  std::fprintf(stderr,
               "usage: flywheel-tiny-model --out FILE [--arch llama|qwen2|qwen3|phi3] [--vocab bpe|spm]\n"
               "                           [--type f32|f16|bf16|q8_0|q4_0|q4_1|w4a16]\n"
               "                           [--layers N] [--embd N] [--ff N] [--heads N] [--kv-heads N]\n"
               "                           [--head-dim N] [--ctx N] [--vocab-size N] [--sliding-window N]\n"
               "                           [--outliers N] [--seed S] [--untied] [--rope-freqs]\n"
               "                           [--shape qwen2-7b|qwen2-1.5b|llama-7b|llama3-8b|llama3-70b]\n");
  return 2;
}

bool parse_uint(const char* s, uint64_t& out) {
  if (!s || !*s) return false;
  char* end = nullptr;
  out = std::strtoull(s, &end, 10);
  return *end == '\0' && s[0] != '-';
}

bool parse_type(std::string_view s, fw::ggml_type& out) {
  if (s == "w4a16") {
    out = fw::ggml_type::fw_w4a16_g128;
    return true;
  }
  for (fw::ggml_type t : {fw::ggml_type::f32, fw::ggml_type::f16, fw::ggml_type::bf16,
                          fw::ggml_type::q8_0, fw::ggml_type::q4_0, fw::ggml_type::q4_1}) {
    if (fw::type_traits(t).name == s) {
      out = t;
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  fw::tiny_model_spec spec;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(nullptr);
      return 0;
    }
    if (arg == "--untied") {
      spec.tied_output = false;
      continue;
    }
    if (arg == "--rope-freqs") {
      spec.rope_freqs = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("missing value for '" + std::string(arg) + "'").c_str());
    const char* val = argv[++i];
    uint64_t n = 0;
    if (arg == "--out") {
      out = val;
    } else if (arg == "--type") {
      if (!parse_type(val, spec.weight_type)) return usage("unknown --type");
    } else if (arg == "--layers") {
      if (!parse_uint(val, n) || n == 0 || n > 1024) return usage("--layers needs 1..1024");
      spec.n_layer = static_cast<int>(n);
    } else if (arg == "--embd") {
      if (!parse_uint(val, n) || n == 0 || n > 65536) return usage("--embd needs 1..65536");
      spec.n_embd = static_cast<int>(n);
    } else if (arg == "--ff") {
      if (!parse_uint(val, n) || n == 0 || n > 262144) return usage("--ff needs 1..262144");
      spec.n_ff = static_cast<int>(n);
    } else if (arg == "--heads") {
      if (!parse_uint(val, n) || n == 0 || n > 1024) return usage("--heads needs 1..1024");
      spec.n_head = static_cast<int>(n);
    } else if (arg == "--kv-heads") {
      if (!parse_uint(val, n) || n == 0 || n > 1024) return usage("--kv-heads needs 1..1024");
      spec.n_head_kv = static_cast<int>(n);
    } else if (arg == "--arch") {
      spec.arch = val;
    } else if (arg == "--vocab") {
      spec.vocab = val;
    } else if (arg == "--shape") {
      // Sizes from the models' published configs; random weights.
      struct shape { const char* name; const char* arch; int embd, layers, heads, kv, ff, vocab; float rope_base; };
      static constexpr shape shapes[] = {
          {"qwen2-7b", "qwen2", 3584, 28, 28, 4, 18944, 152064, 1000000.f},
          {"qwen2-1.5b", "qwen2", 1536, 28, 12, 2, 8960, 151936, 1000000.f},
          {"llama-7b", "llama", 4096, 32, 32, 32, 11008, 32000, 10000.f},
          {"llama3-8b", "llama", 4096, 32, 32, 8, 14336, 128256, 500000.f},
          {"llama3-70b", "llama", 8192, 80, 64, 8, 28672, 128256, 500000.f},
      };
      const shape* sh = nullptr;
      for (const auto& c : shapes)
        if (std::string_view(val) == c.name) sh = &c;
      if (!sh) return usage("unknown --shape (qwen2-7b, qwen2-1.5b, llama-7b, llama3-8b, llama3-70b)");
      spec.arch = sh->arch, spec.n_embd = sh->embd, spec.n_layer = sh->layers, spec.n_head = sh->heads;
      spec.n_head_kv = sh->kv, spec.n_ff = sh->ff, spec.vocab_size = sh->vocab, spec.n_ctx = 8192;
      spec.rope_base = sh->rope_base;
      spec.tied_output = false, spec.fast_random = true;
    } else if (arg == "--head-dim") {
      if (!parse_uint(val, n) || n == 0 || n > 1024) return usage("--head-dim needs 1..1024");
      spec.head_dim = static_cast<int>(n);
    } else if (arg == "--ctx") {
      if (!parse_uint(val, n) || n == 0 || n > (1u << 20)) return usage("--ctx needs 1..1048576");
      spec.n_ctx = static_cast<int>(n);
    } else if (arg == "--vocab-size") {
      if (!parse_uint(val, n) || n > (1u << 20)) return usage("--vocab-size needs 0..1048576");
      spec.vocab_size = static_cast<int>(n);
    } else if (arg == "--sliding-window") {
      if (!parse_uint(val, n) || n > (1u << 20)) return usage("--sliding-window needs 0..1048576");
      spec.sliding_window = static_cast<int>(n);
    } else if (arg == "--outliers") {
      if (!parse_uint(val, n) || n > 65536) return usage("--outliers needs 0..65536");
      spec.outlier_channels = static_cast<int>(n);
      spec.outlier_scale = 16.0f;
    } else if (arg == "--seed") {
      if (!parse_uint(val, n)) return usage("--seed needs an unsigned integer");
      spec.seed = n;
    } else {
      return usage(("unknown argument '" + std::string(arg) + "'").c_str());
    }
  }
  if (out.empty()) return usage("--out is required");
  if (auto r = fw::write_tiny_model(spec, out); !r) {
    std::fprintf(stderr, "flywheel-tiny-model: %s\n", r.err().what().c_str());
    return 1;
  }
  return 0;
}

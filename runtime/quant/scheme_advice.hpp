// scheme_advice: which scheme to quantize to on this hardware under a memory budget, and why
// (SPEC.md's policy: W8A8 first; W4A16 only when memory is still short; mixed when the budget
// falls between the two). Pure: the caller passes the hardware and model facts.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/model/llama_weights.hpp"
#include "runtime/quant/quant_scheme.hpp"

namespace fw {

struct hardware_facts {
  bool avx2 = false;
  bool avx_vnni = false;  ///< AVX-VNNI (256-bit vpdpbusd) without AVX-512: the AVX2 path's int8 products take it
  bool avx512_vnni = false;
  bool amx_int8 = false;  ///< AMX int8 tiles granted to this process (W8A8 products of 4+ rows)
  bool cuda_hopper = false;  ///< an sm_90 GPU serves the model
  uint64_t memory_bytes = 0; ///< memory the weights may use when no budget is given
};

struct model_facts {
  uint64_t matrix_params = 0;  ///< parameters of the layers' matrices
  uint64_t embd_params = 0;    ///< token embedding (and untied head) parameters
  uint32_t n_layer = 0;
};

struct scheme_advice {
  bool fits = false;  ///< false: not even W4A16 fits the budget
  quant_scheme scheme = quant_scheme::w8a8;
  uint64_t w8a8_bytes = 0, w4a16_bytes = 0, budget_bytes = 0;
  std::string reason;  ///< one or two sentences for the user
};

/// budget_bytes 0: hw.memory_bytes.
scheme_advice advise_scheme(const hardware_facts& hw, const model_facts& m, uint64_t budget_bytes);

/// This host: its SIMD features and half of its memory.
hardware_facts this_host();
/// The parameter counts of a model's weights.
model_facts facts_of(const llama_weights& w, uint32_t n_layer);

}  // namespace fw

#include "runtime/quant/scheme_advice.hpp"

#include <cstdio>

#include <unistd.h>

#include "kernels/cpu/cpu_features.hpp"

namespace fw {
namespace {

std::string mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

}  // namespace

scheme_advice advise_scheme(const hardware_facts& hw, const model_facts& m, uint64_t budget) {
  scheme_advice a;
  a.budget_bytes = budget ? budget : hw.memory_bytes;
  // Bytes per weight: W8A8 ~8.4 bits (a 32-byte header per row), W4A16 ~4.4 bits (g64/g128
  // groups); the embedding stays q8_0.
  const uint64_t embd = m.embd_params * 34 / 32;
  a.w8a8_bytes = m.matrix_params * 105 / 100 + embd;
  a.w4a16_bytes = m.matrix_params * 55 / 100 + embd;
  const std::string compute =
      hw.cuda_hopper  ? "the Hopper GPU runs W8A8 and W4A16 on tensor cores"
      : hw.amx_int8    ? "this CPU has AMX int8 tiles: W8A8's products of 4 or more rows run on them"
      : hw.avx512_vnni ? "this CPU has AVX-512 VNNI: int8 activations take its integer dot products"
      : hw.avx_vnni    ? "this CPU has AVX-VNNI: int8 products take its 256-bit integer dot products"
      : hw.avx2        ? "this CPU has AVX2 (no VNNI): int8 products still run in its integer units"
                       : "this CPU has no SIMD path for the calibrated formats (scalar fallback)";
  if (a.budget_bytes == 0 || a.w8a8_bytes <= a.budget_bytes) {
    a.fits = true;
    a.scheme = quant_scheme::w8a8;
    a.reason = "W8A8: it fits (" + mib(a.w8a8_bytes) + (a.budget_bytes ? " of " + mib(a.budget_bytes) : "") +
               ") and loses least; " + compute + ", so prefill is fastest in int8.";
  } else if (a.w4a16_bytes <= a.budget_bytes) {
    a.fits = true;
    const bool close = a.budget_bytes >= a.w4a16_bytes + (a.w8a8_bytes - a.w4a16_bytes) / 4;
    a.scheme = close ? quant_scheme::mixed : quant_scheme::w4a16;
    a.reason = "W8A8 needs " + mib(a.w8a8_bytes) + ", more than the budget of " + mib(a.budget_bytes) + "; " +
               (close ? "mixed (--budget-mib) keeps the most sensitive layers at 8 bits and fits the rest in W4A16 (" +
                            mib(a.w4a16_bytes) + " all 4-bit)."
                      : "W4A16 (" + mib(a.w4a16_bytes) + ") fits: 4-bit weights halve decode's memory traffic.") +
               " " + compute + ".";
  } else {
    a.fits = false;
    a.scheme = quant_scheme::w4a16;
    a.reason = "nothing fits: even W4A16 needs " + mib(a.w4a16_bytes) + " and the budget is " + mib(a.budget_bytes) +
               "; use a smaller model or more memory.";
  }
  return a;
}

hardware_facts this_host() {
  hardware_facts hw;
  hw.avx2 = cpu::host_features().has_avx2();
  hw.avx512_vnni = cpu::host_features().has_avx512_vnni();
  hw.avx_vnni = hw.avx2 && cpu::host_features().avx_vnni;
  hw.amx_int8 = cpu::host_features().has_amx();
  hw.memory_bytes = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) / 2;
  return hw;
}

model_facts facts_of(const llama_weights& w, uint32_t n_layer) {
  model_facts mf;
  for (const auto& l : w.layers)
    for (const auto* v : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      mf.matrix_params += static_cast<uint64_t>(v->k * v->n);
  mf.embd_params = static_cast<uint64_t>(w.tok_embd.k * w.tok_embd.n) * (w.tied_output ? 1 : 2);
  mf.n_layer = n_layer;
  return mf;
}

}  // namespace fw

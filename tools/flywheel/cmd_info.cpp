#include <cstdio>

#include "kernels/cpu/cpu_features.hpp"
#include "runtime/quant/scheme_advice.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/model_session.hpp"

namespace fw::cli {

int cmd_info(int argc, char** argv) {
  arg_parser args("info");
  model_session::declare_flags(args);
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  auto s = model_session::open(args, false);
  if (!s) {
    std::fprintf(stderr, "info: %s\n", s.err().what().c_str());
    return 1;
  }
  const auto& c = s->m->config();
  std::printf("model:        %s\n", s->m->file().path().c_str());
  std::printf("name:         %s\n", c.name.c_str());
  std::printf("architecture: %s, %u layers, width %u, ffn %u, heads %u/%u (q/kv), head dim %u\n",
              c.architecture.c_str(), c.n_layer, c.n_embd, c.n_ff, c.n_head, c.n_head_kv, c.head_dim);
  std::printf("kind:         %s\n", s->m->describe().c_str());
  std::printf("vocabulary:   %u tokens; context %u (training), %u (this run)\n", c.n_vocab, c.n_ctx_train, s->n_ctx);
  std::printf("rope:         base %.0f, scale %.3f; rms eps %g\n", c.rope_freq_base, c.rope_freq_scale, c.rms_eps);
  std::printf("weights:      %.1f MiB of matrices, output head %s\n", s->m->weights().matrix_bytes() / 1048576.0,
              s->m->weights().tied_output ? "tied to the embedding" : "separate");
  const auto& f = s->m->file();
  if (auto scheme = f.get_string("flywheel.quant.scheme")) {
    std::printf("quantization: %s by flywheel quantize (%s", scheme->c_str(), f.get_string("flywheel.quant.method").value_or("?").c_str());
    if (auto q = f.get_uint("flywheel.quant.calibration.queries"))
      std::printf(", calibrated on %llu queries / %llu tokens", static_cast<unsigned long long>(*q),
                  static_cast<unsigned long long>(f.get_uint("flywheel.quant.calibration.tokens").value_or(0)));
    std::printf(")\n");
  }
  if (c.architecture == "llama" && c.q_dim() == c.n_embd) {
    const auto advice = advise_scheme(this_host(), facts_of(s->m->weights(), c.n_layer), 0);
    std::printf("recommended:  %s (flywheel quantize --recommend [--budget-mib N]): %s\n",
                advice.fits ? std::string(scheme_name(advice.scheme)).c_str() : "none", advice.reason.c_str());
  } else {
    std::printf("recommended:  q8_0 (flywheel quantize --scheme q8_0|q4_0|q4_1 converts %s files tensor by tensor; the "
                "calibrated w8a8 / w4a16 / mixed run the llama architecture)\n", c.architecture.c_str());
  }
  std::printf("cpu:          %s; %d threads\n", cpu::host_features().describe().c_str(), s->threads()->size());
  std::printf("kernels:\n");
  int fallbacks = 0;
  for (const auto& k : s->device()->kernel_paths()) {
    std::printf("  %-13s -> %s%s%s\n", k.weight_type.c_str(), k.path.c_str(), k.fallback ? "  WARNING: " : "",
                k.fallback ? k.note.c_str() : "");
    fallbacks += k.fallback;
  }
  if (fallbacks) std::printf("%d weight type(s) run on a fallback path\n", fallbacks);
  return 0;
}

}  // namespace fw::cli

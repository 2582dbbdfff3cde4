// flywheel quantize: writes a model in another weight scheme; the calibrated ones (w8a8, w4a16,
// mixed) are tuned on the user's own queries (runtime/quant). --recommend says which scheme fits
// this hardware and budget, and why.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "kernels/cpu/cpu_features.hpp"
#include "runtime/model/user_prompt.hpp"
#include "runtime/quant/calibration_set.hpp"
#include "runtime/quant/calibrator.hpp"
#include "runtime/quant/quantizer.hpp"
#include "runtime/quant/scheme_advice.hpp"
#include "runtime/text/chat_encoding.hpp"
#include "tools/flywheel/cancel_flag.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/model_session.hpp"
#include "tools/flywheel/quality_runner.hpp"
#include "runtime/config/sections/quantize_section.hpp"

namespace fw::cli {
namespace {

void progress_line(const char* what, uint32_t done, uint32_t total) {
  static const bool tty = ::isatty(2) != 0;
  if (tty) {
    const int width = 30;
    const int filled = total ? static_cast<int>(width * done / total) : width;
    std::fprintf(stderr, "\rquantize: %-11s [%.*s%*s] %u/%u", what, filled, "##############################", width - filled,
                 "", done, total);
    if (done == total) std::fprintf(stderr, "\n");
  } else if (done == total || done % 10 == 0) {
    std::fprintf(stderr, "quantize: %s %u/%u\n", what, done, total);
  }
}

/// "0-5:w8a8,6-29:w4a16" -> one scheme per layer.
expected<std::vector<quant_scheme>> parse_layer_table(const std::string& text, uint32_t n_layer) {
  std::vector<quant_scheme> out(n_layer, quant_scheme::mixed);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    const auto colon = item.find(':');
    auto bad = [&](const std::string& why) {
      return make_error(errc::invalid_argument, "--layers '" + item + "': " + why + " (write e.g. 0-5:w8a8,6-29:w4a16)");
    };
    if (colon == std::string::npos) return bad("no ':'");
    const auto scheme = scheme_by_name(item.substr(colon + 1));
    if (!scheme || (*scheme != quant_scheme::w8a8 && *scheme != quant_scheme::w4a16)) return bad("the scheme must be w8a8 or w4a16");
    const std::string range = item.substr(0, colon);
    const auto dash = range.find('-');
    unsigned long a = 0, b = 0;
    try {
      a = std::stoul(range.substr(0, dash));
      b = dash == std::string::npos ? a : std::stoul(range.substr(dash + 1));
    } catch (...) {
      return bad("layers must be N or N-M");
    }
    if (a > b || b >= n_layer) return bad("layers run 0.." + std::to_string(n_layer - 1));
    for (unsigned long l = a; l <= b; ++l) out[l] = *scheme;
  }
  for (uint32_t l = 0; l < n_layer; ++l)
    if (out[l] == quant_scheme::mixed)
      return make_error(errc::invalid_argument, "--layers does not name layer " + std::to_string(l));
  return out;
}

int recommend(const arg_parser& args, const model& m, uint32_t config_budget_mib) {
  if (m.config().architecture != "llama" || m.config().q_dim() != m.config().n_embd) {
    std::printf("recommended scheme: q8_0\n  the calibrated schemes (w8a8, w4a16, mixed) run the llama architecture; "
                "this model is '%s': q8_0, q4_0 and q4_1 convert it tensor by tensor\n",
                m.config().architecture.c_str());
    return 0;
  }
  const hardware_facts hw = this_host();
  const model_facts mf = facts_of(m.weights(), m.config().n_layer);
  uint64_t budget = 0;
  if (args.has("budget-mib")) {
    auto b = args.integer("budget-mib", 1);
    if (!b) {
      std::fprintf(stderr, "quantize: %s\n", b.err().message.c_str());
      return 2;
    }
    budget = static_cast<uint64_t>(*b) << 20;
  } else {
    budget = static_cast<uint64_t>(config_budget_mib) << 20;  // [quantize] budget_mib; 0: half of memory
  }
  const auto a = advise_scheme(hw, mf, budget);
  std::printf("recommended scheme: %s\n  %s\n", a.fits ? std::string(scheme_name(a.scheme)).c_str() : "none", a.reason.c_str());
  std::printf("  sizes: w8a8 %.0f MiB, w4a16 (g128) %.0f MiB; budget %.0f MiB%s\n", a.w8a8_bytes / 1048576.0,
              a.w4a16_bytes / 1048576.0, a.budget_bytes / 1048576.0, budget ? "" : " (half of this machine's memory)");
  return a.fits ? 0 : 1;
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
  arg_parser args("quantize");
  model_session::declare_flags(args);
  args.option("out", "GGUF file to write (written to OUT.partial first; nothing is left behind on an error or Ctrl-C)")
      .option("scheme", std::string("target scheme: ") + std::string(scheme_names()) + " (default: [quantize] scheme, w8a8)")
      .option("calib", "calibration queries: one per line, like the ones you serve (w8a8, w4a16, mixed; default: "
                       "[quantize] calib)")
      .option("calib-max", "the longest N queries of --calib are used", "100")
      .option("calib-batch", "queries per calibration forward pass", "4")
      .option("ema", "EMA factor of the activation statistics across batches", "0.9")
      .option("calib-noise", "fraction of queries that also get a perturbed copy (typos), 0..1", "0")
      .option("group", "W4A16 group size: 32, 64 or 128 (default: [quantize] group, 128)")
      .option("method", "auto (AWQ for 4-bit, SmoothQuant for 8-bit), gptq (auto, and 4-bit matrices also rounded by "
                        "GPTQ where that measures lower) or rtn (plain round-to-nearest) (default: [quantize] method, auto)")
      .option("gptq-damp", "--method gptq: dampening, the share of the input Gram matrix's mean diagonal added to it "
                           "(larger: closer to round-to-nearest, less fitted to the calibration queries)", "0.01")
      .option("gptq-shrink", "--method gptq: shrinkage of the input Gram matrix towards its diagonal, 0..1 (0: "
                             "plain GPTQ, fitted to the calibration queries alone; 1: no error feedback between "
                             "channels)", "0.8")
      .option("gptq-order", "--method gptq: act (the most active input channels first, every group chosen up front) "
                            "or natural (the channels in order, each group chosen as it starts)", "act")
      .option("alpha", "SmoothQuant migration strength, 0..1, or auto (searched per product on the calibration rows)", "0.5")
      .option("act", "W8A8 activations: dynamic (per token) or static (per tensor, from calibration) (default: "
                     "[quantize] act, dynamic)")
      .option("embd-type", "type of the token embedding and an untied output head (default: q8_0 for the calibrated "
                           "schemes, the scheme's type otherwise)")
      .option("budget-mib", "mixed: size budget of the file; --recommend: the memory budget (default: [quantize] "
                            "budget_mib)")
      .option("layers", "mixed: a per-layer table, e.g. 0-5:w8a8,6-29:w4a16 (default: [quantize] layers)")
      .option("samples", "calibration input rows kept per product for the scale search", "256")
      .option("seed", "seed of --calib-noise", "1")
      .flag("report", "after writing, measure the quality against the source (flywheel eval)")
      .option("text", "held-out text of --report", "conf/eval/heldout.txt")
      .option("chunks", "--report: 512-token chunks of the text at most (0: all)", "0")
      .option("json", "write the quantization (and --report) figures as JSON to this file")
      .flag("recommend", "say which scheme fits this hardware and --budget-mib, and why; writes nothing");
  if (auto done = args.parse_or_exit_code(argc, argv)) return *done;
  auto fail = [](const std::string& msg, int code) {
    std::fprintf(stderr, "quantize: %s\n", msg.c_str());
    return code;
  };
  // [quantize] in the config gives what the flags do not.
  auto cfg = model_session::load_config(args);
  if (!cfg) return fail(cfg.err().what(), 2);
  const quantize_section& qs = cfg->quantize;
  auto flag_or = [&](const char* flag, std::string from_config) { return args.has(flag) ? args.str(flag) : from_config; };
  const std::string scheme_text = flag_or("scheme", qs.scheme);
  const auto scheme = scheme_by_name(scheme_text);
  if (!scheme)
    return fail(std::string(args.has("scheme") ? "--scheme" : "quantize.scheme") + " '" + scheme_text + "': choose " +
                    std::string(scheme_names()),
                2);
  std::string layers_text = args.has("layers") ? args.str("layers") : std::string();
  if (!args.has("layers"))
    for (const auto& entry : qs.layers) layers_text += (layers_text.empty() ? "" : ",") + entry;
  const std::string calib_path = flag_or("calib", qs.calib);
  auto calib_max = args.integer("calib-max", 1);
  auto calib_batch = args.integer("calib-batch", 1);
  auto group = args.has("group") ? args.integer("group", 1) : expected<int64_t>(static_cast<int64_t>(qs.group));
  auto samples = args.integer("samples", 8);
  auto seed = args.integer("seed", 0);
  for (const auto* v : {&calib_max, &calib_batch, &group, &samples, &seed})
    if (!*v) return fail(v->err().message, 2);
  auto ema = args.number("ema");
  auto noise = args.number("calib-noise");
  const bool alpha_auto = args.str("alpha") == "auto";
  auto alpha = alpha_auto ? expected<double>(-1.0) : args.number("alpha");
  if (!ema || !(*ema >= 0 && *ema < 1)) return fail("--ema must be in [0, 1)", 2);
  if (!noise || !(*noise >= 0 && *noise <= 1)) return fail("--calib-noise must be in [0, 1]", 2);
  if (!alpha || !(alpha_auto || (*alpha >= 0 && *alpha <= 1))) return fail("--alpha must be in [0, 1] or auto", 2);
  const std::string method = flag_or("method", std::string(enum_name(quantize_method_names, qs.method)));
  const std::string act = flag_or("act", std::string(enum_name(quantize_activations_names, qs.act)));
  if (method != "auto" && method != "gptq" && method != "rtn") return fail("--method must be auto, gptq or rtn", 2);
  if (act != "dynamic" && act != "static") return fail("--act must be dynamic or static", 2);
  std::optional<ggml_type> embd;
  if (args.has("embd-type")) {
    embd = type_by_name(args.str("embd-type"));
    if (!embd || (type_traits(*embd).flywheel && *embd != ggml_type::fw_w8a8))
      return fail("--embd-type '" + args.str("embd-type") + "': choose f32|f16|bf16|q8_0|q4_0|q4_1|fw_w8a8", 2);
  }
  if (!args.on("recommend") && !args.has("out")) return fail("--out FILE is required", 2);
  if (!args.on("recommend")) {
    // An output that cannot be written fails now, not after minutes of calibration.
    const std::string probe = args.str("out") + ".partial";
    const bool existed = std::filesystem::exists(probe);
    std::FILE* f = std::fopen(probe.c_str(), "ab");  // appends nothing; truncates nothing
    if (!f) return fail("cannot write " + probe + ": " + std::strerror(errno), 1);
    std::fclose(f);
    if (!existed) std::filesystem::remove(probe);
  }

  quantize_options o;
  o.scheme = *scheme;
  o.group = static_cast<int>(*group);
  o.activation_aware = method != "rtn";
  o.gptq = method == "gptq";
  for (const char* flag : {"gptq-damp", "gptq-shrink", "gptq-order"})
    if (args.has(flag) && !o.gptq) return fail(std::string("--") + flag + " applies to --method gptq", 2);
  auto damp = args.number("gptq-damp");
  if (!damp || !(*damp > 0 && *damp <= 100)) return fail("--gptq-damp must be in (0, 100]", 2);
  o.gptq_damp = *damp;
  auto shrink = args.number("gptq-shrink");
  if (!shrink || !(*shrink >= 0 && *shrink <= 1)) return fail("--gptq-shrink must be in [0, 1]", 2);
  o.gptq_shrink = *shrink;
  const std::string order = args.str("gptq-order");
  if (order != "act" && order != "natural") return fail("--gptq-order must be act or natural", 2);
  o.gptq_act_order = order == "act";
  o.alpha = *alpha;
  o.static_activations = act == "static";
  o.embd_type = embd;
  if (o.static_activations && o.scheme != quant_scheme::w8a8 && o.scheme != quant_scheme::mixed)
    return fail("--act static applies to w8a8 (and mixed) only", 2);
  if (o.gptq && o.scheme != quant_scheme::w4a16 && o.scheme != quant_scheme::mixed)
    return fail(std::string(args.has("method") ? "--method" : "quantize.method") +
                    " gptq rounds 4-bit groups: it applies to w4a16 and mixed, not " + scheme_text +
                    " (use auto)",
                2);
  if (o.scheme == quant_scheme::w4a16 && !w4a16_type(o.group)) return fail("--group / quantize.group must be 32, 64 or 128", 2);
  const bool calibrated = is_flywheel_scheme(o.scheme) && (o.activation_aware || o.scheme == quant_scheme::mixed || o.static_activations);
  if (calibrated && calib_path.empty() && !args.on("recommend"))
    return fail("--scheme " + scheme_text +
                    " is calibrated on your own queries: give --calib FILE (one query per line; e.g. "
                    "conf/calibration/prompts.txt), or --method rtn for uncalibrated round-to-nearest",
                2);

  // Read the calibration file before loading anything: a bad file fails fast.
  std::vector<std::string> texts;
  if (calibrated && !calib_path.empty()) {
    calibration_options co;
    co.max_queries = static_cast<uint32_t>(*calib_max);
    co.noise = *noise;
    co.seed = static_cast<uint64_t>(*seed);
    auto t = read_calibration_file(calib_path, co);
    if (!t) return fail(t.err().message, 2);
    texts = std::move(*t);
  }
  const std::string src_path = cfg->model.path;
  calibration_run_options cro;
  cro.batch = static_cast<uint32_t>(*calib_batch);
  cro.ema = *ema;
  cro.max_samples = static_cast<uint32_t>(*samples);
  cro.gram = o.gptq;
  const auto& cancel = install_cancel_on_sigint();
  cro.cancel = &cancel;
  cro.progress = [](uint32_t d, uint32_t t) { progress_line("calibration", d, t); };
  calibrator cal(cro);
  build_options bo;
  bo.build_draft = false;
  // Calibration statistics come from the unquantized reference: quantized sources are expanded
  // to f32 at load (float sources run as they are, with f32 activations). Without calibration
  // nothing runs the model: its weights stay in the mapping (a 7B source would need 30 GB as f32).
  if (calibrated && !args.on("recommend")) bo.load.convert_to = ggml_type::f32;
  // Nor is there a device then: no packed copy of the weights, no KV pool (peak memory ~ the
  // source's mapping plus one layer).
  bo.build_devices = calibrated && !args.on("recommend");
  bo.observer = &cal;
  bo.kv_tokens = 8192;
  auto parts = build_runtime(*cfg, bo);
  if (!parts) return fail(parts.err().what(), 1);
  const model& m = *parts->m;
  if (args.on("recommend")) return recommend(args, m, qs.budget_mib);
  const auto& mc = m.config();
  if (args.has("layers") && o.scheme != quant_scheme::mixed) return fail("--layers needs --scheme mixed", 2);
  // A config whose own scheme cannot use its table says so (a --scheme flag may override it).
  if (!args.has("layers") && !args.has("scheme") && !qs.layers.empty() && o.scheme != quant_scheme::mixed)
    return fail("quantize.layers applies to scheme = \"mixed\"; this config's scheme is \"" + scheme_text + "\"", 2);
  if (!layers_text.empty() && o.scheme == quant_scheme::mixed) {
    auto table = parse_layer_table(layers_text, mc.n_layer);
    if (!table) return fail(std::string(args.has("layers") ? "" : "quantize.layers: ") + table.err().message, 2);
    o.layer_schemes = std::move(*table);
  }
  if (args.has("budget-mib")) {
    auto b = args.integer("budget-mib", 1);
    if (!b) return fail(b.err().message, 2);
    o.budget_bytes = static_cast<uint64_t>(*b) << 20;
  } else if (o.scheme == quant_scheme::mixed && o.layer_schemes.empty()) {
    o.budget_bytes = static_cast<uint64_t>(qs.budget_mib) << 20;
  }
  if (o.scheme == quant_scheme::mixed && o.layer_schemes.empty() && o.budget_bytes == 0)
    return fail("--scheme mixed needs --budget-mib N or --layers TABLE (or [quantize] budget_mib / layers)", 2);

  if (o.gptq) {
    // GPTQ keeps every product input's Gram matrix (float) from calibration to quantization.
    const uint64_t gram_bytes = static_cast<uint64_t>(mc.n_layer) * 4 *
                                (3 * static_cast<uint64_t>(mc.n_embd) * mc.n_embd + static_cast<uint64_t>(mc.n_ff) * mc.n_ff);
    const uint64_t half_memory = this_host().memory_bytes;
    if (gram_bytes > half_memory)
      return fail("--method gptq keeps " + std::to_string(gram_bytes >> 20) + " MiB of calibration Gram matrices for this "
                  "model, more than half of this machine's memory (" + std::to_string(half_memory >> 20) +
                  " MiB): use --method auto (AWQ)", 2);
    cal.use_pool(parts->threads().get());
  }
  calibration_summary summary;
  const calibrator* calp = nullptr;
  if (calibrated) {
    std::vector<std::vector<int32_t>> prompts;
    for (const auto& t : texts)
      prompts.push_back(user_prompt(m, t));
    auto s = cal.run(*parts->device(), mc.n_layer, mc.n_embd, mc.n_ff, prompts, parts->n_ctx);
    if (!s) return fail(s.err().message, s.err().code == errc::cancelled ? 130 : 1);
    summary = *s;
    calp = &cal;
    std::fprintf(stderr, "quantize: calibrated on %u queries (%llu tokens) in %u batches of %u\n", summary.queries,
                 static_cast<unsigned long long>(summary.tokens), summary.batches, cro.batch);
  }
  o.source_name = std::filesystem::path(src_path).filename().string();
  o.cancel = &cancel;
  o.progress = [](uint32_t d, uint32_t t) { progress_line("layers", d, t); };
  // The output streams into OUT.partial as each layer is made, renamed when complete.
  const std::string path = args.str("out"), partial = path + ".partial";
  gguf_writer out;
  out.stream_to(partial);
  auto res = quantize_model(m, calp, calibrated ? &summary : nullptr, o, *parts->threads(), out);
  if (!res) {
    std::filesystem::remove(partial);
    return fail(res.err().message, res.err().code == errc::cancelled ? 130 : 1);
  }
  if (cancel.load()) {
    std::filesystem::remove(partial);
    return fail("cancelled; nothing written", 130);
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    std::filesystem::remove(partial);
    return fail("cannot write " + path + ": " + ec.message(), 1);
  }
  const auto file_bytes = std::filesystem::file_size(path);
  std::printf("quantize: %s -> %s: scheme %s, %.2f bits per weight in the layers, %.1f MiB file\n", src_path.c_str(),
              path.c_str(), scheme_text.c_str(), res->bits_per_weight(), file_bytes / 1048576.0);
  nlohmann::json j = {{"source", src_path}, {"out", path}, {"scheme", scheme_text},
                      {"file_bytes", file_bytes}, {"bits_per_weight", res->bits_per_weight()}};
  if (!res->sites.empty()) {
    // Mean relative output error per site kind, round-to-nearest vs the chosen scales.
    std::printf("  %-8s %-14s %12s %12s %s\n", "site", "type", "error(rtn)", "error", "method (layers)");
    std::map<std::string, std::array<double, 3>> agg;
    std::map<std::string, std::map<std::string, int>> methods;
    std::map<std::string, std::map<std::string, int>> typecount;
    for (const auto& s : res->sites) {
      auto& a = agg[s.site];
      a[0] += s.error_rtn, a[1] += s.error, a[2] += 1;
      methods[s.site][s.method]++;
      typecount[s.site][std::string(type_traits(s.type).name)]++;
    }
    for (const auto& [site, a] : agg) {
      std::string ms, ts;
      for (const auto& [mname, n] : methods[site]) ms += (ms.empty() ? "" : ", ") + mname + " " + std::to_string(n);
      for (const auto& [tname, n] : typecount[site]) ts += (ts.empty() ? "" : "+") + tname;
      std::printf("  %-8s %-14s %12.3e %12.3e %s\n", site.c_str(), ts.c_str(), a[0] / a[2], a[1] / a[2], ms.c_str());
    }
    nlohmann::json sites = nlohmann::json::array();
    for (const auto& s : res->sites)
      sites.push_back({{"layer", s.layer}, {"site", s.site}, {"type", type_traits(s.type).name}, {"error_rtn", s.error_rtn},
                       {"error", s.error}, {"method", s.method}, {"alpha", s.alpha}, {"bytes", s.bytes}});
    j["sites"] = sites;
  }
  if (args.on("report")) {
    quality_run run;
    run.model_path = path;
    run.ref_path = src_path;
    run.text_path = args.str("text");
    if (!calib_path.empty()) run.queries_path = calib_path;
    run.options.cancel = &cancel;
    auto chunks = args.integer("chunks", 0);
    if (!chunks) return fail(chunks.err().message, 2);
    run.options.max_chunks = static_cast<uint32_t>(*chunks);
    parts = make_error(errc::cancelled, "released");  // free the f32 copy before loading two models
    auto rep = run_quality(*cfg, run);
    if (!rep) return fail("report: " + rep.err().message, rep.err().code == errc::cancelled ? 130 : 1);
    print_quality(*rep, run);
    j["quality"] = quality_json(*rep, run);
  }
  if (args.has("json")) {
    std::ofstream f(args.str("json"));
    f << j.dump(2) << "\n";
    if (!f) return fail("cannot write " + args.str("json"), 1);
  }
  return 0;
}

}  // namespace fw::cli

// runtime/quant: calibration files, EMA statistics, the scheme policy, and the quantizer end to
// end on tiny random models with outlier channels: calibrated beats round-to-nearest on
// per-layer error, calibration is deterministic, the files load and run, a W8A8 step of many
// sequences equals each decoded alone, mixed precision keeps its budget, and a file from another
// quantizer version is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <unistd.h>

#include "kernels/format/fw_formats.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/gguf/gguf_writer.hpp"
#include "runtime/model/model.hpp"
#include "runtime/quant/activation_stats.hpp"
#include "runtime/quant/calibration_set.hpp"
#include "runtime/quant/calibrator.hpp"
#include "runtime/quant/quality_eval.hpp"
#include "runtime/quant/quantizer.hpp"
#include "runtime/quant/scheme_advice.hpp"
#include "tools/tiny_model/tiny_model.hpp"

namespace fw {
namespace {

// -- calibration files --

TEST(calibration_set, refuses_empty_binary_short_and_invalid_utf8_files) {
  calibration_options o;
  auto msg = [&](const std::string& text) {
    auto r = parse_calibration_text(text, "calib.txt", o);
    EXPECT_FALSE(r);
    return r ? std::string() : r.err().message;
  };
  EXPECT_NE(msg("").find("is empty"), std::string::npos);
  EXPECT_NE(msg(std::string("abc\0def\n", 8)).find("binary"), std::string::npos);
  EXPECT_NE(msg("# only a comment\n\n   \n").find("holds 0 queries"), std::string::npos);
  EXPECT_NE(msg("one\ntwo\n").find("at least 4"), std::string::npos);
  EXPECT_NE(msg("a\nb\nc\n\xff\xfe bad\n").find("line 4: not valid UTF-8"), std::string::npos);
  auto missing = read_calibration_file("/nonexistent/calib.txt", o);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.err().message.find("cannot be opened"), std::string::npos);
}

TEST(calibration_set, keeps_the_longest_queries_in_a_stable_order) {
  calibration_options o;
  o.max_queries = 3;
  auto r = parse_calibration_text("bb\n# skip\naaaa\ncc\r\ndddd\ne\\nf\n", "c", o);
  ASSERT_TRUE(r) << r.err().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], "aaaa");
  EXPECT_EQ((*r)[1], "dddd");
  EXPECT_EQ((*r)[2], "e\nf");  // '\n' escapes become line breaks; ties keep file order
}

TEST(calibration_set, noise_adds_deterministic_perturbed_copies) {
  calibration_options o;
  o.noise = 0.5;
  const std::string text = "The quick brown fox jumps over the lazy dog\nPack my box with five dozen liquor jugs\n"
                           "How vexingly quick daft zebras jump\nSphinx of black quartz judge my vow\n";
  auto a = parse_calibration_text(text, "c", o), b = parse_calibration_text(text, "c", o);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->size(), 6u);  // 4 + half of them perturbed
  EXPECT_EQ(*a, *b);
  EXPECT_NE((*a)[4], (*a)[0]);
  EXPECT_NE(perturb_text((*a)[0], 1), perturb_text((*a)[0], 2));
  EXPECT_EQ(perturb_text("日本語 text", 3).substr(0, 9), "日本語");  // UTF-8 is never split
}

// -- statistics --

TEST(activation_stats, ema_of_batch_maxima_and_means) {
  activation_stats s(2, 0.5, 4);
  const float b1[] = {1, -2, -1, 0};  // rows (1, -2), (-1, 0)
  s.add_batch(b1, 2, 2);
  EXPECT_FLOAT_EQ(s.max_abs()[0], 1);
  EXPECT_FLOAT_EQ(s.max_abs()[1], 2);
  EXPECT_FLOAT_EQ(s.mean_abs()[1], 1);
  EXPECT_FLOAT_EQ(s.tensor_max(), 2);
  const float b2[] = {3, 0};
  s.add_batch(b2, 2, 1);
  EXPECT_FLOAT_EQ(s.max_abs()[0], 0.5f * 1 + 0.5f * 3);
  EXPECT_FLOAT_EQ(s.max_abs()[1], 0.5f * 2 + 0.5f * 0);
  EXPECT_FLOAT_EQ(s.mean_abs()[0], 0.5f * 1 + 0.5f * 3);
  EXPECT_FLOAT_EQ(s.tensor_max(), 0.5f * 2 + 0.5f * 3);
  EXPECT_EQ(s.batches(), 2u);
  EXPECT_EQ(s.samples_count(), 3);
  const float b3[] = {5, 5, 6, 6, 7, 7};
  s.add_batch(b3, 2, 3);
  EXPECT_EQ(s.samples_count(), 4);  // bounded
  EXPECT_EQ(s.rows_seen(), 6u);
}

// -- policy --

TEST(scheme_advice, w8a8_first_then_mixed_then_w4a16) {
  hardware_facts hw;
  hw.avx2 = true;
  model_facts m;
  m.matrix_params = 100u << 20;
  m.embd_params = 10u << 20;
  const auto roomy = advise_scheme(hw, m, 1ull << 30);
  EXPECT_TRUE(roomy.fits);
  EXPECT_EQ(roomy.scheme, quant_scheme::w8a8);
  EXPECT_NE(roomy.reason.find("AVX2"), std::string::npos);
  const auto between = advise_scheme(hw, m, (roomy.w8a8_bytes + roomy.w4a16_bytes) / 2);
  EXPECT_EQ(between.scheme, quant_scheme::mixed);
  const auto tight = advise_scheme(hw, m, roomy.w4a16_bytes + 1);
  EXPECT_EQ(tight.scheme, quant_scheme::w4a16);
  EXPECT_FALSE(advise_scheme(hw, m, roomy.w4a16_bytes / 2).fits);
  EXPECT_NE(roomy.reason.find("no VNNI"), std::string::npos);
  hw.avx_vnni = true;
  EXPECT_NE(advise_scheme(hw, m, 0).reason.find("AVX-VNNI"), std::string::npos);
  hw.avx512_vnni = true;
  EXPECT_NE(advise_scheme(hw, m, 0).reason.find("VNNI"), std::string::npos);
  hw.amx_int8 = true;
  EXPECT_NE(advise_scheme(hw, m, 0).reason.find("AMX"), std::string::npos);
}

// -- the quantizer on a tiny model --

struct tiny_quant : ::testing::Test {
  static std::shared_ptr<const model> src;
  static std::string dir;

  static void SetUpTestSuite() {
    dir = (std::filesystem::temp_directory_path() / ("fw_quant_test_" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir);
    tiny_model_spec spec;
    spec.n_embd = 128, spec.n_ff = 256, spec.n_layer = 2, spec.n_head = 4, spec.n_head_kv = 2;
    spec.outlier_channels = 4, spec.outlier_scale = 24.f;
    ASSERT_TRUE(write_tiny_model(spec, dir + "/src.gguf"));
    auto m = model::load(dir + "/src.gguf");
    ASSERT_TRUE(m) << m.err().message;
    src = *m;
  }
  static void TearDownTestSuite() {
    src.reset();
    std::filesystem::remove_all(dir);
  }

  static std::vector<std::vector<int32_t>> prompts() {
    std::vector<std::vector<int32_t>> out;
    const char* texts[] = {"hello there, how are you today?", "the quick brown fox", "quantize me gently please",
                           "one two three four five six", "calibration needs real queries", "zebra quartz jumps"};
    for (const char* t : texts) out.push_back(src->vocab().encode(t, true, false));
    return out;
  }

  /// Calibrates on the prompts and quantizes; the file is written to dir/name.
  /// More and longer queries: every word pair of a small vocabulary in one sentence frame.
  static std::vector<std::vector<int32_t>> many_prompts() {
    const char* words[] = {"river", "engine", "quartz", "seven", "lantern", "maple", "orbit", "copper"};
    std::vector<std::vector<int32_t>> out;
    for (const char* a : words)
      for (const char* b : words)
        out.push_back(src->vocab().encode(std::string("please describe the ") + a + " and its " + b +
                                              " in a few careful words, with numbers 3 and 14",
                                          true, false));
    return out;
  }

  /// A 2-thread CPU backend of the source model whose activations `cal` sees.
  static std::unique_ptr<cpu_backend> observed_backend(calibrator& cal) {
    cpu_backend_options bo;
    bo.threads = 2;
    bo.kv_tokens = 1024;
    bo.observer = &cal;
    return std::make_unique<cpu_backend>(src->config(), src->weights(), bo);
  }

  static quantize_result quantize(const quantize_options& o, const std::string& name, bool calibrate = true,
                                  uint32_t samples = 256, const std::vector<std::vector<int32_t>>& qs = prompts()) {
    calibration_run_options cro;
    cro.batch = 2;
    cro.max_samples = samples;
    cro.gram = o.gptq;
    calibrator cal(cro);
    auto bp = observed_backend(cal);
    cpu_backend& b = *bp;
    cal.use_pool(&*b.thread_pool());
    calibration_summary sum;
    if (calibrate) {
      auto s = cal.run(b, src->config().n_layer, src->config().n_embd, src->config().n_ff, qs, 256);
      EXPECT_TRUE(s) << s.err().message;
      sum = *s;
    }
    // Streamed into the file as the CLI does; the image kept in memory instead must be the same
    // bytes (the quantizer is deterministic).
    gguf_writer w;
    w.stream_to(dir + "/" + name);
    auto r = quantize_model(*src, calibrate ? &cal : nullptr, calibrate ? &sum : nullptr, o, *b.thread_pool(), w);
    EXPECT_TRUE(r) << r.err().message;
    gguf_writer mem;
    auto r2 = quantize_model(*src, calibrate ? &cal : nullptr, calibrate ? &sum : nullptr, o, *b.thread_pool(), mem);
    EXPECT_TRUE(r2) << r2.err().message;
    std::ifstream f(dir + "/" + name, std::ios::binary);
    const std::vector<uint8_t> streamed((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(streamed == mem.bytes()) << name << ": the streamed file differs from the in-memory image";
    return r ? *r : quantize_result{};
  }

  /// Per-layer relative error of `path` against the source on a text.
  static std::vector<double> layer_error(const std::string& path) {
    auto m = model::load(path);
    EXPECT_TRUE(m) << m.err().message;
    layer_capture cm, cr;
    cpu_backend_options o;
    o.threads = 2;
    o.kv_tokens = 1024;
    o.observer = &cm;
    cpu_backend bm((*m)->config(), (*m)->weights(), o);
    o.observer = &cr;
    cpu_backend br(src->config(), src->weights(), o);
    const auto text = src->vocab().encode("a different held-out text, not the calibration queries at all: "
                                          "numbers 12345, code x = f(y); and more words to score here.",
                                          false, false);
    quality_options qo;
    qo.ctx = 64;
    auto rep = evaluate_quality(bm, cm, br, cr, src->config().n_layer, src->config().n_vocab, -1, text, {}, qo);
    EXPECT_TRUE(rep) << rep.err().message;
    return rep ? rep->layer_error : std::vector<double>{};
  }
};
std::shared_ptr<const model> tiny_quant::src;
std::string tiny_quant::dir;

// Mixed precision weighs each product by its share of the residual stream, which pairs each
// sampled input row with the stream's row of the same token: layer 1's q|k|v input must be the
// RMS-normalized stream after layer 0, row for row, times layer 1's norm weights.
TEST_F(tiny_quant, the_residual_stream_is_sampled_on_the_same_tokens_as_the_product_inputs) {
  calibration_run_options cro;
  cro.batch = 3;
  cro.max_samples = 40;  // fewer than the tokens: later batches replace sampled rows
  calibrator cal(cro);
  auto b = observed_backend(cal);
  const auto& c = src->config();
  auto s = cal.run(*b, c.n_layer, c.n_embd, c.n_ff, many_prompts(), 256);
  ASSERT_TRUE(s) << s.err().message;
  const auto& res = cal.stats(0, activation_site::layer_out);
  const auto& next = cal.stats(1, activation_site::qkv_in);
  ASSERT_EQ(res.samples_count(), 40);
  ASSERT_EQ(next.samples_count(), 40);
  EXPECT_EQ(res.rows_seen(), next.rows_seen());
  const float* g = src->weights().layers[1].attn_norm;
  double worst = 0;
  for (int64_t r = 0; r < 40; ++r) {
    const float* x = res.samples().data() + r * c.n_embd;
    double ss = 0;
    for (int64_t j = 0; j < c.n_embd; ++j) ss += static_cast<double>(x[j]) * x[j];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(c.n_embd) + c.rms_eps);
    for (int64_t j = 0; j < c.n_embd; ++j) {
      const double want = x[j] * inv * g[j], got = next.samples()[r * c.n_embd + j];
      worst = std::max(worst, std::fabs(got - want) / (1e-3 + std::fabs(want)));
    }
  }
  EXPECT_LT(worst, 1e-3) << "the stream's sampled rows are not the q|k|v input's tokens";
}

TEST_F(tiny_quant, calibrated_w8a8_and_w4a16_beat_round_to_nearest) {
  for (quant_scheme s : {quant_scheme::w8a8, quant_scheme::w4a16}) {
    quantize_options rtn;
    rtn.scheme = s;
    rtn.activation_aware = false;
    quantize(rtn, "rtn.gguf", false);
    quantize_options cal;
    cal.scheme = s;
    const auto res = quantize(cal, "cal.gguf");
    // The scale search measured less error than round-to-nearest where the outliers are.
    bool improved = false;
    for (const auto& r : res.sites) {
      EXPECT_LE(r.error, r.error_rtn) << r.site;
      if (r.site == "qkv" || r.site == "gate_up") improved |= r.error < 0.8 * r.error_rtn;
    }
    EXPECT_TRUE(improved) << scheme_name(s);
    // And the whole model agrees: the calibrated file's last layer is closer to the reference.
    const auto e_rtn = layer_error(dir + "/rtn.gguf"), e_cal = layer_error(dir + "/cal.gguf");
    ASSERT_EQ(e_rtn.size(), 2u);
    ASSERT_EQ(e_cal.size(), 2u);
    EXPECT_LT(e_cal.back(), e_rtn.back()) << scheme_name(s);
    EXPECT_GT(e_cal.back(), 0.0);
  }
}

TEST_F(tiny_quant, gptq_is_kept_where_it_measures_lower_and_the_file_runs) {
  quantize_options awq, gptq;
  awq.scheme = gptq.scheme = quant_scheme::w4a16;
  gptq.gptq = true;
  // The rows the search measures on (the sample) stay out of GPTQ's fit.
  const auto qs = many_prompts();
  const auto ra = quantize(awq, "awq.gguf", true, 256, qs), rg = quantize(gptq, "gptq.gguf", true, 256, qs);
  ASSERT_EQ(ra.sites.size(), rg.sites.size());
  int chosen = 0;
  for (size_t i = 0; i < rg.sites.size(); ++i) {
    EXPECT_LE(rg.sites[i].error, ra.sites[i].error) << rg.sites[i].site;
    if (rg.sites[i].method.find("gptq") != std::string::npos) {
      ++chosen;
      EXPECT_LT(rg.sites[i].error, 0.5 * ra.sites[i].error) << rg.sites[i].site;
    } else {
      EXPECT_EQ(rg.sites[i].error, ra.sites[i].error) << rg.sites[i].site;
    }
  }
  EXPECT_GE(chosen, static_cast<int>(rg.sites.size()) / 2) << "GPTQ measured lower at few sites";
  auto m = model::load(dir + "/gptq.gguf");
  ASSERT_TRUE(m) << m.err().message;
  EXPECT_EQ((*m)->file().get_string("flywheel.quant.method"), "awq+gptq");
  // On text it was not calibrated on, the last layer is closer to the reference than plain
  // round-to-nearest's and AWQ's (measured: 0.050 against 0.206 and 0.084).
  quantize_options rtn;
  rtn.scheme = quant_scheme::w4a16;
  rtn.activation_aware = false;
  quantize(rtn, "rtn4.gguf", false);
  const auto e_rtn = layer_error(dir + "/rtn4.gguf"), e_gptq = layer_error(dir + "/gptq.gguf");
  const auto e_awq = layer_error(dir + "/awq.gguf");
  ASSERT_EQ(e_gptq.size(), 2u);
  EXPECT_LT(e_gptq.back(), e_rtn.back());
  EXPECT_LT(e_gptq.back(), e_awq.back());
}

TEST_F(tiny_quant, calibration_is_deterministic_and_the_file_loads_and_runs) {
  quantize_options o;
  o.scheme = quant_scheme::w8a8;
  quantize(o, "a.gguf");
  quantize(o, "b.gguf");
  auto read = [&](const std::string& f) {
    std::ifstream in(dir + "/" + f, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(read("a.gguf"), read("b.gguf"));
  auto m = model::load(dir + "/a.gguf");
  ASSERT_TRUE(m) << m.err().message;
  EXPECT_EQ((*m)->file().get_uint(fw_quant_version_key), fw_quant_version);
  EXPECT_EQ((*m)->file().get_string("flywheel.quant.scheme"), "w8a8");
  EXPECT_EQ((*m)->file().get_string("flywheel.quant.method"), "smoothquant");
  EXPECT_EQ((*m)->weights().layers[0].wq.type, ggml_type::fw_w8a8);
  EXPECT_EQ((*m)->weights().tok_embd.type, ggml_type::q8_0);
  cpu_backend_options bo;
  bo.threads = 2;
  cpu_backend b((*m)->config(), (*m)->weights(), bo);
  bool named = false;
  for (const auto& k : b.kernel_paths())
    if (k.weight_type == "fw_w8a8") named = k.path.find("int8 activations per token") != std::string::npos;
  EXPECT_TRUE(named);
  kv_handle kv;
  forward_batch batch;
  const auto toks = src->vocab().encode("hello", true, false);
  batch.add_sequence(&kv, toks.data(), toks.size(), 0, false);
  std::vector<float> logits;
  ASSERT_TRUE(b.forward(batch, logits));
  ASSERT_EQ(logits.size(), src->config().n_vocab);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
}

// A W8A8 decode step of 21 sequences together gives each sequence the logits it gets decoded
// alone, bit for bit: the batched products run 16-row and 5-row tiles (AMX int8 tiles on a host
// with them, the AVX-512 VNNI tiles elsewhere), a lone row the 1-row product. The engine's
// batched = sequential guarantee rests on this.
TEST_F(tiny_quant, a_w8a8_step_of_many_sequences_equals_each_decoded_alone) {
  quantize_options o;
  o.scheme = quant_scheme::w8a8;
  quantize(o, "batch.gguf");
  auto m = model::load(dir + "/batch.gguf");
  ASSERT_TRUE(m) << m.err().message;
  cpu_backend_options bo;
  bo.threads = 2;
  bo.kv_tokens = 4096;
  cpu_backend together((*m)->config(), (*m)->weights(), bo), alone((*m)->config(), (*m)->weights(), bo);
  const auto prompts = many_prompts();
  constexpr size_t n = 21;
  ASSERT_GE(prompts.size(), n);
  const size_t vocab = src->config().n_vocab;
  std::vector<kv_handle> kv_t(n), kv_a(n);
  std::vector<float> logits, batched;
  forward_batch batch;
  for (size_t i = 0; i < n; ++i)
    for (auto* p : {&together, &alone}) {
      batch.clear();
      batch.add_sequence(p == &together ? &kv_t[i] : &kv_a[i], prompts[i].data(), prompts[i].size(), 0, false);
      ASSERT_TRUE(p->forward(batch, logits));
    }
  std::vector<int32_t> next(n);
  for (size_t i = 0; i < n; ++i) next[i] = static_cast<int32_t>((i * 7919 + 11) % vocab);
  batch.clear();
  for (size_t i = 0; i < n; ++i)
    batch.add_sequence(&kv_t[i], &next[i], 1, static_cast<int32_t>(prompts[i].size()), false);
  ASSERT_TRUE(together.forward(batch, batched));
  ASSERT_EQ(batched.size(), n * vocab);
  for (size_t i = 0; i < n; ++i) {
    batch.clear();
    batch.add_sequence(&kv_a[i], &next[i], 1, static_cast<int32_t>(prompts[i].size()), false);
    ASSERT_TRUE(alone.forward(batch, logits));
    ASSERT_EQ(logits.size(), vocab);
    EXPECT_EQ(std::memcmp(logits.data(), batched.data() + i * vocab, vocab * sizeof(float)), 0)
        << "sequence " << i << ": batched logits differ from the lone step's";
  }
}

TEST_F(tiny_quant, static_activation_scales_are_written_and_loaded) {
  quantize_options o;
  o.scheme = quant_scheme::w8a8;
  o.static_activations = true;
  quantize(o, "static.gguf");
  auto m = model::load(dir + "/static.gguf");
  ASSERT_TRUE(m) << m.err().message;
  EXPECT_TRUE((*m)->file().find_tensor("blk.0.attn_q.act_scale"));
  EXPECT_GT((*m)->weights().layers[0].wq.act_scale, 0.f);
  EXPECT_GT((*m)->weights().layers[1].w_down.act_scale, 0.f);
  EXPECT_EQ((*m)->file().get_string("flywheel.quant.activations"), "static");
}

TEST_F(tiny_quant, mixed_precision_fits_its_budget_from_measured_sensitivity) {
  quantize_options w8, w4;
  w8.scheme = quant_scheme::w8a8;
  w4.scheme = quant_scheme::w4a16;
  const auto r8 = quantize(w8, "m8.gguf"), r4 = quantize(w4, "m4.gguf");
  const uint64_t s8 = std::filesystem::file_size(dir + "/m8.gguf"), s4 = std::filesystem::file_size(dir + "/m4.gguf");
  ASSERT_GT(s8, s4);
  quantize_options mixed;
  mixed.scheme = quant_scheme::mixed;
  mixed.budget_bytes = r4.tensor_bytes + (r8.tensor_bytes - r4.tensor_bytes) / 2;
  const auto rm = quantize(mixed, "mixed.gguf");
  EXPECT_LE(rm.tensor_bytes, mixed.budget_bytes);
  int n8 = 0, n4 = 0;
  for (const auto& s : rm.sites) (s.type == ggml_type::fw_w8a8 ? n8 : n4)++;
  EXPECT_GT(n8, 0);
  EXPECT_GT(n4, 0);
  ASSERT_TRUE(model::load(dir + "/mixed.gguf"));
  // A per-layer table instead of a budget.
  mixed.budget_bytes = 0;
  mixed.layer_schemes = {quant_scheme::w8a8, quant_scheme::w4a16};
  const auto rt = quantize(mixed, "table.gguf");
  for (const auto& s : rt.sites) EXPECT_EQ(s.type == ggml_type::fw_w8a8, s.layer == 0) << s.site;
}

TEST_F(tiny_quant, mixed_with_gptq_runs_it_on_the_4bit_layers_only) {
  quantize_options plain, gptq;
  plain.scheme = gptq.scheme = quant_scheme::mixed;
  plain.layer_schemes = gptq.layer_schemes = {quant_scheme::w8a8, quant_scheme::w4a16};
  gptq.gptq = true;
  const auto qs = many_prompts();
  const auto rp = quantize(plain, "mixed-plain.gguf", true, 256, qs), rg = quantize(gptq, "mixed-gptq.gguf", true, 256, qs);
  ASSERT_EQ(rp.sites.size(), rg.sites.size());
  int chosen = 0;
  for (size_t i = 0; i < rg.sites.size(); ++i) {
    const auto& s = rg.sites[i];
    const bool uses_gptq = s.method.find("gptq") != std::string::npos;
    EXPECT_EQ(s.type, rp.sites[i].type) << s.site;
    if (s.layer == 0) {  // W8A8: GPTQ does not apply, the choice is SmoothQuant's as without it
      EXPECT_FALSE(uses_gptq) << s.site;
      EXPECT_EQ(s.error, rp.sites[i].error) << s.site;
    } else {
      EXPECT_LE(s.error, rp.sites[i].error) << s.site;
      chosen += uses_gptq;
    }
  }
  EXPECT_GT(chosen, 0) << "no 4-bit site kept GPTQ";
  auto m = model::load(dir + "/mixed-gptq.gguf");
  ASSERT_TRUE(m) << m.err().message;
  EXPECT_EQ((*m)->file().get_string("flywheel.quant.method"), "smoothquant+awq+gptq");
  EXPECT_EQ((*m)->weights().layers[0].wq.type, ggml_type::fw_w8a8);
  EXPECT_NE((*m)->weights().layers[1].wq.type, ggml_type::fw_w8a8);
  const auto e = layer_error(dir + "/mixed-gptq.gguf");
  ASSERT_EQ(e.size(), 2u);
  EXPECT_TRUE(std::isfinite(e.back()));
}

TEST_F(tiny_quant, a_budget_below_all_4bit_and_missing_calibration_are_refused) {
  cpu::thread_pool pool(1);
  gguf_writer w;
  quantize_options o;
  o.scheme = quant_scheme::w4a16;
  auto r = quantize_model(*src, nullptr, nullptr, o, pool, w);
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("--calib"), std::string::npos);
  calibrator cal({});
  o.scheme = quant_scheme::mixed;
  o.budget_bytes = 1000;
  r = quantize_model(*src, &cal, nullptr, o, pool, w);  // a calibrator that never ran
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("calibrate this model first"), std::string::npos);
  cpu_backend_options bo;
  bo.threads = 1;
  bo.observer = &cal;
  cpu_backend b(src->config(), src->weights(), bo);
  ASSERT_TRUE(cal.run(b, src->config().n_layer, src->config().n_embd, src->config().n_ff, prompts(), 256));
  r = quantize_model(*src, &cal, nullptr, o, pool, w);
  ASSERT_FALSE(r);
  EXPECT_NE(r.err().message.find("too small"), std::string::npos);
  // A query longer than the context is refused by the calibrator, naming it.
  auto long_query = prompts();
  long_query[2].resize(300, long_query[2].front());
  auto s = cal.run(b, src->config().n_layer, src->config().n_embd, src->config().n_ff, long_query, 256);
  ASSERT_FALSE(s);
  EXPECT_NE(s.err().message.find("query 3 has 300 tokens"), std::string::npos) << s.err().message;
}

TEST_F(tiny_quant, a_file_of_another_quantizer_version_is_refused_by_name) {
  quantize_options o;
  o.scheme = quant_scheme::w4a16;
  o.activation_aware = false;
  quantize(o, "v1.gguf", false);
  auto f = gguf_file::open(dir + "/v1.gguf");
  ASSERT_TRUE(f);
  gguf_writer w;
  for (const auto& [k, v] : (*f)->metadata())
    if (k != fw_quant_version_key) w.add_value(k, v);
  w.add_uint32(fw_quant_version_key, fw_quant_version + 1);
  for (const auto& t : (*f)->tensors()) w.add_tensor(t.name, t.ne, t.type, {t.data, t.n_bytes});
  ASSERT_TRUE(w.write(dir + "/v2.gguf"));
  auto m = model::load(dir + "/v2.gguf");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.err().code, errc::unsupported);
  EXPECT_NE(m.err().message.find("flywheel quantization format version 2"), std::string::npos) << m.err().message;
  // A tensor type from a newer flywheel is named as such too.
  gguf_writer u;
  u.add_string("general.architecture", "llama");
  const std::vector<uint8_t> bytes(64, 0);
  u.add_tensor_raw("x", {32}, fw_type_base + 0x7777, bytes);
  auto g = gguf_file::from_bytes(u.bytes());
  ASSERT_FALSE(g);
  EXPECT_NE(g.err().message.find("flywheel tensor type"), std::string::npos) << g.err().message;
}

}  // namespace
}  // namespace fw

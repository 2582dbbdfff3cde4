// Tests of fw::config: defaults, every shipped conf file, one test per kind of mistake (asserting
// the message and its file:line:column), set()/get() overrides and the to_toml() round trip.
#include "runtime/config/config.hpp"
#include "runtime/sample/sampling_params.hpp"

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace fw {
namespace {

/// Passes when text contains part; prints both otherwise.
::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\"\ndoes not contain\n\"" << part << "\"";
}

/// The error message of parsing text as "bad.toml"; fails the test when it parses.
std::string error_of(const std::string& text, errc want = errc::invalid_argument) {
  auto c = config::from_string(text, "bad.toml");
  EXPECT_FALSE(c.has_value()) << "parsed but should not:\n" << text;
  if (c.has_value()) return {};
  EXPECT_EQ(c.err().code, want) << c.err().message;
  return c.err().message;
}

config parse_ok(const std::string& text) {
  auto c = config::from_string(text, "good.toml");
  EXPECT_TRUE(c.has_value()) << c.err().message;
  return c.has_value() ? *c : config{};
}

// -- defaults and shipped files --

TEST(config_test, built_in_defaults) {
  const config c;
  EXPECT_EQ(c.model.path, "models/SmolLM2-135M-Instruct.Q4_1.gguf");
  EXPECT_EQ(c.model.ctx_size, 4096u);
  EXPECT_EQ(c.compute.threads, 0);
  EXPECT_EQ(c.kv_cache.block_tokens, 16u);
  EXPECT_EQ(c.kv_cache.pool_tokens, 16384u);
  EXPECT_EQ(c.kv_cache.pool_mib, 0u);
  EXPECT_EQ(c.scheduler.max_batch, 16u);
  EXPECT_EQ(c.scheduler.max_queue, 256u);
  EXPECT_EQ(c.scheduler.prefill_chunk, 512u);
  EXPECT_DOUBLE_EQ(c.scheduler.request_timeout_s, 600.0);
  EXPECT_EQ(c.logging.level, logging_level::info);
  EXPECT_EQ(c.speculative.draft, draft_kind::none);
  EXPECT_EQ(c.speculative.k, 5u);
  EXPECT_EQ(c.plugins.dir, "build/plugins");
  ASSERT_EQ(c.devices.size(), 1u);
  EXPECT_EQ(c.devices[0].kind, device_kind::cpu);
  EXPECT_EQ(c.devices[0].role, device_role::both);
  EXPECT_TRUE(c.source_path.empty());
  EXPECT_TRUE(c.validate().has_value());

  // The sampling defaults are sampling_params' own.
  const sampling_params d, p = sampling_params::from_section(c.sampling);
  EXPECT_EQ(p.temperature, d.temperature);
  EXPECT_EQ(p.top_k, d.top_k);
  EXPECT_EQ(p.top_p, d.top_p);
  EXPECT_EQ(p.min_p, d.min_p);
  EXPECT_EQ(p.repeat_penalty, d.repeat_penalty);
  EXPECT_EQ(p.repeat_last_n, d.repeat_last_n);
  EXPECT_EQ(p.seed, d.seed);
  EXPECT_EQ(p.max_tokens, d.max_tokens);
  EXPECT_TRUE(p.stop.empty());
}

TEST(config_test, empty_file_gives_defaults) {
  config c = parse_ok("# nothing here\n");
  EXPECT_EQ(c.source_path, "good.toml");
  c.source_path.clear();
  EXPECT_EQ(c, config{});
}

TEST(config_test, default_toml_parses_with_its_values) {
  auto c = config::from_file(std::string(FW_SOURCE_DIR) + "/conf/default.toml");
  ASSERT_TRUE(c.has_value()) << c.err().message;
  EXPECT_EQ(c->model.path, "models/SmolLM2-135M-Instruct.Q4_1.gguf");
  EXPECT_EQ(c->compute.threads, 2);
  EXPECT_FLOAT_EQ(c->sampling.temperature, 0.7f);
  EXPECT_EQ(c->speculative.draft, draft_kind::none);
  EXPECT_TRUE(contains(c->source_path, "conf/default.toml"));
  const sampling_params p = sampling_params::from_section(c->sampling);
  EXPECT_FLOAT_EQ(p.temperature, 0.7f);
  EXPECT_TRUE(p.validate().has_value());
}

TEST(config_test, every_shipped_conf_file_parses) {
  const std::filesystem::path root = std::filesystem::path(FW_SOURCE_DIR) / "conf";
  int files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file() || e.path().extension() != ".toml") continue;
    ++files;
    auto c = config::from_file(e.path().string());
    ASSERT_TRUE(c.has_value()) << e.path() << ":\n" << c.err().message;
    EXPECT_TRUE(c->validate().has_value()) << e.path();
    // And each prints back to TOML that parses to the same config.
    auto again = config::from_string(c->to_toml(), c->source_path);
    ASSERT_TRUE(again.has_value()) << again.err().message << "\n" << c->to_toml();
    EXPECT_EQ(*again, *c) << e.path();
  }
  EXPECT_GE(files, 3);  // default.toml and the examples
}

TEST(config_test, missing_file_is_an_io_error_naming_the_path) {
  auto c = config::from_file("/nonexistent/flywheel.toml");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.err().code, errc::io_error);
  EXPECT_TRUE(contains(c.err().message, "/nonexistent/flywheel.toml"));
}

// -- one test per kind of mistake --

TEST(config_test, syntax_error_has_line_and_column) {
  const auto msg = error_of("[scheduler]\nmax_batch = = 3\n", errc::malformed_file);
  EXPECT_TRUE(contains(msg, "bad.toml:2:13: TOML syntax error: "));
  const auto msg2 = error_of("[model]\npath = \"unterminated\n", errc::malformed_file);
  EXPECT_TRUE(contains(msg2, "bad.toml:2:"));
  EXPECT_TRUE(contains(msg2, "TOML syntax error"));
  const auto dup = error_of("[compute]\nthreads = 1\nthreads = 2\n", errc::malformed_file);
  EXPECT_TRUE(contains(dup, "bad.toml:3:"));
}

TEST(config_test, unknown_section_lists_the_sections) {
  const auto msg = error_of("[model]\nctx_size = 512\n\n[schedular]\nmax_batch = 3\n");
  EXPECT_EQ(msg,
            "bad.toml:4:2: unknown section [schedular] (did you mean 'scheduler'?); allowed: model, "
            "compute, kv_cache, sampling, scheduler, speculative, plugins, server, supervisor, rollout, node, quantize, alerts, logging, devices");
}

TEST(config_test, the_quantize_section_parses_and_refuses_bad_values_by_key) {
  auto ok = config::from_string(
      "[quantize]\nscheme = \"mixed\"\ncalib = \"q.txt\"\ngroup = 64\nmethod = \"rtn\"\nact = \"static\"\n"
      "budget_mib = 90\nlayers = [\"0-5:w8a8\", \"6-29:w4a16\"]\n",
      "q.toml");
  ASSERT_TRUE(ok) << ok.err().message;
  EXPECT_EQ(ok->quantize.scheme, "mixed");
  EXPECT_EQ(ok->quantize.calib, "q.txt");
  EXPECT_EQ(ok->quantize.group, 64u);
  EXPECT_EQ(ok->quantize.method, quantize_method::rtn);
  EXPECT_EQ(ok->quantize.act, quantize_activations::static_);
  EXPECT_EQ(ok->quantize.budget_mib, 90u);
  EXPECT_EQ(ok->quantize.layers, (std::vector<std::string>{"0-5:w8a8", "6-29:w4a16"}));
  EXPECT_NE(error_of("[quantize]\nmethod = \"fast\"\n").find("auto, gptq, rtn"), std::string::npos);
  auto g = config::from_string("[quantize]\nmethod = \"gptq\"\n", "g.toml");
  ASSERT_TRUE(g) << g.err().message;
  EXPECT_EQ(g->quantize.method, quantize_method::gptq);
  EXPECT_NE(error_of("[quantize]\ngroup = 256\n").find("group"), std::string::npos);
  EXPECT_NE(error_of("[quantize]\nscheme = \"\"\n").find("scheme"), std::string::npos);
}

TEST(config_test, node_roles_need_their_addresses_and_refuse_the_others) {
  auto ok = config::from_string("[node]\nrole = \"decode\"\npeers = [\"127.0.0.1:7700\", \"[::1]:7701\"]\n", "n.toml");
  ASSERT_TRUE(ok) << ok.err().message;
  EXPECT_EQ(ok->node.peers.size(), 2u);
  EXPECT_TRUE(config::from_string("[node]\nrole = \"prefill\"\nlisten = \"0.0.0.0:0\"\n", "n.toml"));
  EXPECT_NE(error_of("[node]\nrole = \"decode\"\n").find("needs node.peers"), std::string::npos);
  EXPECT_NE(error_of("[node]\nrole = \"prefill\"\n").find("needs node.listen"), std::string::npos);
  EXPECT_NE(error_of("[node]\npeers = [\"127.0.0.1:7700\"]\n").find("role = \"both\" serves alone"), std::string::npos);
  EXPECT_NE(error_of("[node]\nrole = \"decode\"\npeers = [\"localhost\"]\n").find("'localhost' is not HOST:PORT: no ':PORT'"),
            std::string::npos);
  EXPECT_NE(error_of("[node]\nrole = \"decode\"\npeers = [\"h:0\"]\n").find("port 0 names no peer"), std::string::npos);
  EXPECT_NE(error_of("[node]\nrole = \"decode\"\npeers = [\"::1:7\"]\n").find("brackets"), std::string::npos);
  EXPECT_NE(error_of("[node]\nrole = \"prefill\"\nlisten = \"h:99999\"\n").find("65535"), std::string::npos);
  EXPECT_NE(error_of("[node]\nrole = \"server\"\n").find("allowed: both, prefill, decode"), std::string::npos);
  auto sec = config::from_string("[node]\nrole = \"decode\"\npeers = [\"h:1\"]\nsecret_file = \"/s\"\n", "n.toml");
  ASSERT_TRUE(sec) << sec.err().message;
  EXPECT_EQ(sec->node.secret_file, "/s");
  config c;
  EXPECT_FALSE(c.set("node.peers", "[\"127.0.0.1:1\"]"));  // role both: refused as a whole
  EXPECT_TRUE(c.set_all({{"node.role", "decode"}, {"node.peers", "[\"127.0.0.1:1\"]"}}));
}

TEST(config_test, unknown_key_lists_the_allowed_keys) {
  const auto msg = error_of("[scheduler]\nmax_batch = 4\nmax_batchh = 8\n");
  EXPECT_EQ(msg,
            "bad.toml:3:1: unknown key 'max_batchh' in [scheduler] (did you mean 'max_batch'?); "
            "allowed: max_batch, max_queue, prefill_chunk, prefill_chunk_ms, decode_priority, prefill_order, prefill_max_wait_s, prefill_deadline_s, offload_after_tokens, offload_below_free_share, offload_tpot_ms, request_timeout_s, admission_tpot_ms");
  // No suggestion when nothing is close.
  const auto far = error_of("[logging]\ncolour = true\n");
  EXPECT_EQ(far, "bad.toml:2:1: unknown key 'colour' in [logging]; allowed: level");
  // The same inside an array of tables.
  const auto dev = error_of("[[devices]]\nrole = \"both\"\nthread = 2\n");
  EXPECT_TRUE(contains(dev, "bad.toml:3:1: unknown key 'thread' in [[devices]] (did you mean "
                             "'threads'?); allowed: kind, id, threads, cores, kv_pool_mib, role"));
}

TEST(config_test, wrong_type) {
  EXPECT_EQ(error_of("[scheduler]\nmax_batch = \"16\"\n"),
            "bad.toml:2:13: scheduler.max_batch: expected an integer, got a string");
  EXPECT_EQ(error_of("[sampling]\ntop_k = 1.5\n"),
            "bad.toml:2:9: sampling.top_k: expected an integer, got a floating-point number");
  EXPECT_EQ(error_of("[model]\npath = 3\n"), "bad.toml:2:8: model.path: expected a string, got an integer");
  EXPECT_EQ(error_of("[sampling]\ntemperature = \"hot\"\n"),
            "bad.toml:2:15: sampling.temperature: expected a number, got a string");
  EXPECT_EQ(error_of("[sampling]\nstop = \"END\"\n"),
            "bad.toml:2:8: sampling.stop: expected an array of strings, got a string");
  EXPECT_EQ(error_of("[sampling]\nstop = [\"a\", 3]\n"),
            "bad.toml:2:8: sampling.stop[1]: expected a string, got an integer");
  EXPECT_EQ(error_of("model = \"x.gguf\"\n"), "bad.toml:1:9: [model] must be a table, got a string");
  EXPECT_TRUE(contains(error_of("devices = 3\n"),
              "devices: expected an array of tables ([[devices]] entries), got an integer"));
  // An integer is a fine number.
  EXPECT_FLOAT_EQ(parse_ok("[sampling]\ntemperature = 1\n").sampling.temperature, 1.0f);
}

TEST(config_test, out_of_range_names_the_range) {
  EXPECT_EQ(error_of("[sampling]\ntop_p = 1.5\n"),
            "bad.toml:2:9: sampling.top_p = 1.5 is out of range; allowed: 0 to 1 (1 = off)");
  EXPECT_EQ(error_of("[sampling]\nrepeat_penalty = 0\n"),
            "bad.toml:2:18: sampling.repeat_penalty = 0 is out of range; allowed: above 0, up to 100 "
            "(1 = off)");
  EXPECT_EQ(error_of("[sampling]\ntemperature = nan\n"),
            "bad.toml:2:15: sampling.temperature = nan is out of range; allowed: 0 to 100 (0 = greedy)");
  EXPECT_EQ(error_of("[scheduler]\nmax_batch = 0\n"),
            "bad.toml:2:13: scheduler.max_batch = 0 is out of range; allowed: 1 to 1024");
  EXPECT_EQ(error_of("[kv_cache]\nblock_tokens = 0\n"),
            "bad.toml:2:16: kv_cache.block_tokens = 0 is out of range; allowed: 1 to 1024");
  EXPECT_EQ(error_of("[model]\nctx_size = -1\n"),
            "bad.toml:2:12: model.ctx_size = -1 is out of range; allowed: 0 to 1048576 (0 = the model's "
            "training context, capped at 4096)");
  // Dotted keys outside a header are located too.
  EXPECT_EQ(error_of("scheduler.max_batch = 2000\n"),
            "bad.toml:1:23: scheduler.max_batch = 2000 is out of range; allowed: 1 to 1024");
}

TEST(config_test, negative_threads) {
  EXPECT_EQ(error_of("[compute]\nthreads = -2\n"),
            "bad.toml:2:11: compute.threads = -2 is out of range; allowed: 0 to 1024 (0 = all cores)");
}

TEST(config_test, zero_block_size) {
  EXPECT_EQ(error_of("[kv_cache]\nblock_tokens = 0\n"),
            "bad.toml:2:16: kv_cache.block_tokens = 0 is out of range; allowed: 1 to 1024");
}

TEST(config_test, plugin_draft_must_name_a_loaded_plugin) {
  EXPECT_NE(error_of("[speculative]\ndraft = \"plugin:draft_x\"\n").find("names no [[plugins.load]] entry 'draft_x'"),
            std::string::npos);
  auto ok = config::from_string("[[plugins.load]]\nname = \"draft_x\"\n[speculative]\ndraft = \"plugin:draft_x\"\n", "ok.toml");
  EXPECT_TRUE(ok) << (ok ? "" : ok.err().message);
}

TEST(config_test, bad_enum_lists_the_values) {
  EXPECT_EQ(error_of("[logging]\nlevel = \"verbose\"\n"),
            "bad.toml:2:9: logging.level = \"verbose\" is not allowed; allowed: debug, info, warn, error");
  EXPECT_EQ(error_of("[speculative]\ndraft = \"n-gram\"\n"),
            "bad.toml:2:9: speculative.draft = \"n-gram\" is not allowed (did you mean 'ngram'?); "
            "allowed: none, model, self-quant, layer-skip, ngram, feature, hybrid, or \"plugin:NAME\" for a draft_model plugin");
  EXPECT_EQ(error_of("[[devices]]\nrole = \"decoder\"\n"),
            "bad.toml:2:8: devices[0].role = \"decoder\" is not allowed (did you mean 'decode'?); "
            "allowed: prefill, decode, both, offload");
  EXPECT_TRUE(contains(error_of("[[devices]]\nkind = \"tpu\"\n"), "allowed: cpu, cuda"));
}

TEST(config_test, draft_k_is_auto_or_1_to_16) {
  EXPECT_EQ(parse_ok("[speculative]\nk = \"auto\"\n").speculative.k, std::nullopt);
  EXPECT_EQ(parse_ok("[speculative]\nk = 8\n").speculative.k, 8u);
  EXPECT_EQ(parse_ok("[speculative]\nk = \"3\"\n").speculative.k, 3u);
  EXPECT_EQ(error_of("[speculative]\nk = 0\n"),
            "bad.toml:2:5: speculative.k = 0 is out of range; allowed: \"auto\" or 1 to 16");
  EXPECT_EQ(error_of("[speculative]\nk = \"seven\"\n"),
            "bad.toml:2:5: speculative.k = \"seven\" is not allowed; allowed: \"auto\" or 1 to 16");
  EXPECT_EQ(error_of("[speculative]\nk = 2.5\n"),
            "bad.toml:2:5: speculative.k: expected an integer or \"auto\", got a floating-point number");
}

TEST(config_test, empty_strings_and_list_entries) {
  EXPECT_EQ(error_of("[model]\npath = \"\"\n"), "bad.toml:2:8: model.path must not be empty");
  EXPECT_EQ(error_of("[sampling]\nstop = [\"\"]\n"), "bad.toml:2:8: sampling.stop[0] must not be empty");
}

TEST(config_test, kv_pool_in_tokens_or_mib_not_both) {
  EXPECT_EQ(error_of("[kv_cache]\npool_tokens = 100\npool_mib = 5\n"),
            "bad.toml:3:12: kv_cache: set either pool_tokens or pool_mib, not both");
  const config c = parse_ok("[kv_cache]\npool_mib = 512\n");
  EXPECT_EQ(c.kv_cache.pool_mib, 512u);
  EXPECT_EQ(c.kv_cache.pool_tokens, 0u);
  EXPECT_EQ(error_of("[kv_cache]\npool_tokens = 0\n"),
            "bad.toml:1:1: kv_cache: one of pool_tokens and pool_mib must be greater than 0");
  EXPECT_EQ(error_of("[kv_cache]\nblock_tokens = 32\npool_tokens = 16\n"),
            "bad.toml:1:1: kv_cache.pool_tokens = 16 is smaller than one block (block_tokens = 32)");
  // A float is refused by the schema alone; the either-or check reads integers only (it used to
  // convert 1.9e26 to int64_t: undefined behaviour, found by tests/fuzz/fuzz_config).
  EXPECT_EQ(error_of("[kv_cache]\npool_tokens = 1.9e26\npool_mib = 5\n"),
            "bad.toml:2:15: kv_cache.pool_tokens: expected an integer, got a floating-point number");
}

TEST(config_test, draft_model_kind_needs_a_file) {
  EXPECT_EQ(error_of("[model]\nctx_size = 512\n[speculative]\ndraft = \"model\"\n"),
            "bad.toml:3:1: speculative.draft = \"model\" needs speculative.draft_model (a GGUF file)");
  const config c = parse_ok("[speculative]\ndraft = \"model\"\ndraft_model = \"models/draft.gguf\"\n");
  EXPECT_EQ(c.speculative.draft_model, "models/draft.gguf");
}

TEST(config_test, devices_rules) {
  EXPECT_EQ(error_of("[[devices]]\nrole = \"both\"\n[[devices]]\nrole = \"decode\"\n"),
            "bad.toml:3:1: devices[1]: cpu device 0 is listed twice (kind and id must be unique)");
  EXPECT_EQ(error_of("[[devices]]\nrole = \"decode\"\n"),
            "bad.toml:1:1: devices: no device can prefill (role \"prefill\" or \"both\")");
  EXPECT_EQ(error_of("[[devices]]\nrole = \"prefill\"\n[[devices]]\nid = 1\nrole = \"offload\"\n"),
            "bad.toml:1:1: devices: no device can decode (role \"decode\" or \"both\")");
  EXPECT_EQ(error_of("devices = []\n"), "bad.toml:1:11: devices: at least one [[devices]] entry is needed");
  const config c = parse_ok("[[devices]]\nkind = \"cuda\"\nrole = \"prefill\"\n[[devices]]\nrole = \"decode\"\n");
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].kind, device_kind::cuda);
  EXPECT_EQ(c.devices[1].kind, device_kind::cpu);
}

TEST(config_test, rollout_rules) {
  EXPECT_TRUE(contains(error_of("[rollout]\nshares_pct = [10, 30, 70, 100]\n"),
                       "rollout.shares_pct needs 3 values (percent of traffic on stage 2, 3 and 4"));
  EXPECT_TRUE(contains(error_of("[rollout]\nshares_pct = [50, 30, 100]\n"), "must not decrease"));
  EXPECT_TRUE(contains(error_of("[rollout]\nshares_pct = [30, 70, 90]\n"), "its share must be 100"));
  EXPECT_TRUE(contains(error_of("[rollout]\nshares_pct = [30, 170, 100]\n"), "rollout.shares_pct"));
  EXPECT_TRUE(contains(error_of("[rollout]\nstart_stage = 5\n"), "rollout.start_stage = 5 is out of range; allowed: 1 to 4"));
  EXPECT_TRUE(contains(error_of("[rollout]\np99_ratio = 0.5\n"), "rollout.p99_ratio"));
  const config c = parse_ok("[rollout]\nenabled = true\nshares_pct = [50, 80, 100]\nstart_stage = 2\n");
  EXPECT_TRUE(c.rollout.enabled);
  EXPECT_EQ(c.rollout.shares_pct, (std::vector<int>{50, 80, 100}));
  EXPECT_EQ(c.rollout.start_stage, 2u);
  EXPECT_FALSE(config{}.rollout.enabled);
}

TEST(config_test, plugin_loads) {
  const config c = parse_ok(
      "[plugins]\ndir = \"build/plugins\"\n[[plugins.load]]\nname = \"q8\"\n"
      "[[plugins.load]]\nname = \"ngram\"\npath = \"/opt/x/libngram.so\"\n");
  ASSERT_EQ(c.plugins.load.size(), 2u);
  EXPECT_EQ(c.plugins.file_of(c.plugins.load[0]), "build/plugins/libq8.so");
  EXPECT_EQ(c.plugins.file_of(c.plugins.load[1]), "/opt/x/libngram.so");
  EXPECT_EQ(error_of("[plugins]\n[[plugins.load]]\npath = \"x.so\"\n"),
            "bad.toml:2:1: plugins.load[0] needs a name");
  EXPECT_EQ(error_of("[[plugins.load]]\nname = \"a\"\n[[plugins.load]]\nname = \"a\"\n"),
            "bad.toml:3:1: plugins.load[1]: the name \"a\" is used twice");
  EXPECT_TRUE(contains(error_of("[plugins]\nload = \"x\"\n"),
              "plugins.load: expected an array of tables ([[plugins.load]] entries)"));
  EXPECT_TRUE(contains(error_of("[plugins]\nfolder = \"x\"\n"), "allowed: dir, load"));
}

TEST(config_test, all_errors_are_reported_in_file_order) {
  const auto msg = error_of(
      "[sampling]\ntop_p = 2.0\n[compute]\nthreads = -1\n[logging]\nlevel = \"loud\"\n");
  EXPECT_EQ(msg,
            "bad.toml:2:9: sampling.top_p = 2 is out of range; allowed: 0 to 1 (1 = off)\n"
            "bad.toml:4:11: compute.threads = -1 is out of range; allowed: 0 to 1024 (0 = all cores)\n"
            "bad.toml:6:9: logging.level = \"loud\" is not allowed; allowed: debug, info, warn, error");
}

// -- overrides --

TEST(config_test, set_overrides_with_the_same_checks) {
  config c;
  ASSERT_TRUE(c.set("sampling.temperature", "0.2").has_value());
  EXPECT_FLOAT_EQ(c.sampling.temperature, 0.2f);
  ASSERT_TRUE(c.set("temperature", "0").has_value());  // a bare key that names one field
  EXPECT_FLOAT_EQ(c.sampling.temperature, 0.0f);
  ASSERT_TRUE(c.set("scheduler.max_batch", "32").has_value());
  EXPECT_EQ(c.scheduler.max_batch, 32u);
  ASSERT_TRUE(c.set("model.path", "models/other model.gguf").has_value());  // strings as is
  EXPECT_EQ(c.model.path, "models/other model.gguf");
  ASSERT_TRUE(c.set("logging.level", "\"debug\"").has_value());  // or quoted
  EXPECT_EQ(c.logging.level, logging_level::debug);
  ASSERT_TRUE(c.set("draft", "ngram").has_value());
  EXPECT_EQ(c.speculative.draft, draft_kind::ngram);
  ASSERT_TRUE(c.set("k", "auto").has_value());
  EXPECT_EQ(c.speculative.k, std::nullopt);
  ASSERT_TRUE(c.set("k", "7").has_value());
  EXPECT_EQ(c.speculative.k, 7u);
  ASSERT_TRUE(c.set("seed", "42").has_value());
  EXPECT_EQ(sampling_params::from_section(c.sampling).seed, 42u);

  const config before = c;
  auto bad = c.set("sampling.top_p", "1.5");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.err().code, errc::invalid_argument);
  EXPECT_EQ(bad.err().message, "sampling.top_p = 1.5 is out of range; allowed: 0 to 1 (1 = off)");
  EXPECT_EQ(c.set("temperature", "abc").err().message,
            "sampling.temperature: expected a number, got 'abc'");
  EXPECT_EQ(c.set("compute.threads", "-1").err().message,
            "compute.threads = -1 is out of range; allowed: 0 to 1024 (0 = all cores)");
  EXPECT_EQ(c.set("logging.level", "loud").err().message,
            "logging.level = \"loud\" is not allowed; allowed: debug, info, warn, error");
  EXPECT_EQ(c.set("max_tokens", "12 \nmax_batch = 3").err().message,
            "sampling.max_tokens: expected an integer, got '12 \nmax_batch = 3'");
  EXPECT_EQ(c, before);  // failed sets change nothing
}

TEST(config_test, booleans_and_core_lists_are_checked) {
  config c;
  ASSERT_TRUE(c.set("scheduler.decode_priority", "false").has_value());
  EXPECT_FALSE(c.scheduler.decode_priority);
  EXPECT_EQ(c.set("scheduler.decode_priority", "2").err().message,
            "scheduler.decode_priority: expected true or false, got an integer");
  EXPECT_TRUE(contains(error_of("[[devices]]\nrole = \"both\"\ncores = [0, 0]\n"), "devices[0].cores[1] = 0 is listed twice"));
  EXPECT_TRUE(contains(error_of("[[devices]]\nrole = \"both\"\ncores = [\"a\"]\n"), "expected an integer, got a string"));
  auto ok = config::from_string("[[devices]]\nrole = \"both\"\ncores = [1, 0]\n[kv_cache]\ntransfer = \"int8\"\n", "");
  ASSERT_TRUE(ok.has_value()) << ok.err().message;
  EXPECT_EQ(ok->devices[0].cores, (std::vector<int>{1, 0}));
  EXPECT_EQ(ok->kv_cache.transfer, kv_transfer_type::int8);
  EXPECT_TRUE(contains(error_of("[kv_cache]\ntransfer = \"fp8\"\n"), "allowed: auto, f32, f16, int8"));
}

TEST(config_test, set_rejects_unknown_and_ambiguous_keys) {
  config c;
  EXPECT_EQ(c.set("scheduler.max_batchh", "3").err().message,
            "unknown key 'max_batchh' in [scheduler] (did you mean 'max_batch'?); allowed: max_batch, "
            "max_queue, prefill_chunk, prefill_chunk_ms, decode_priority, prefill_order, prefill_max_wait_s, prefill_deadline_s, offload_after_tokens, offload_below_free_share, offload_tpot_ms, request_timeout_s, admission_tpot_ms");
  EXPECT_TRUE(contains(c.set("schedular.max_batch", "3").err().message,
              "unknown section 'schedular' in key 'schedular.max_batch' (did you mean "
                        "'scheduler'?)"));
  // A bare key names the one field it can mean ([[devices]] threads is not settable).
  ASSERT_TRUE(c.set("threads", "3"));
  EXPECT_EQ(c.compute.threads, 3);
  EXPECT_TRUE(contains(c.set("webserver.port", "80").err().message, "unknown section 'webserver'"));
  EXPECT_TRUE(contains(c.set("temprature", "3").err().message,
              "unknown key 'temprature' (did you mean 'temperature'?)"));
  EXPECT_TRUE(contains(c.set("devices.0.role", "decode").err().message, "array of tables"));
  EXPECT_TRUE(contains(c.set("plugins.load", "x").err().message, "array of tables"));
}

TEST(config_test, set_checks_rules_across_keys) {
  config c;
  EXPECT_EQ(c.set("speculative.draft", "model").err().message,
            "speculative.draft = \"model\" needs speculative.draft_model (a GGUF file)");
  EXPECT_EQ(c.speculative.draft, draft_kind::none);
  // set_all applies several values, then checks once.
  ASSERT_TRUE(c.set_all({{"draft", "model"}, {"draft_model", "models/draft.gguf"}}).has_value());
  EXPECT_EQ(c.speculative.draft, draft_kind::model);
  // All or nothing.
  const config before = c;
  EXPECT_FALSE(c.set_all({{"temperature", "0.1"}, {"top_k", "-1"}}).has_value());
  EXPECT_EQ(c, before);
  // pool_mib and pool_tokens: setting one clears the other.
  ASSERT_TRUE(c.set("kv_cache.pool_mib", "512").has_value());
  EXPECT_EQ(c.kv_cache.pool_tokens, 0u);
  ASSERT_TRUE(c.set("kv_cache.pool_tokens", "4096").has_value());
  EXPECT_EQ(c.kv_cache.pool_mib, 0u);
  EXPECT_EQ(c.set("kv_cache.pool_tokens", "0").err().message,
            "kv_cache: one of pool_tokens and pool_mib must be greater than 0");
}

TEST(config_test, set_stop_strings) {
  config c;
  ASSERT_TRUE(c.set("stop", "END").has_value());  // a bare word is a one-element list
  EXPECT_EQ(c.sampling.stop, (std::vector<std::string>{"END"}));
  ASSERT_TRUE(c.set("sampling.stop", R"(["a", "b\n"])").has_value());
  EXPECT_EQ(c.sampling.stop, (std::vector<std::string>{"a", "b\n"}));
  ASSERT_TRUE(c.set("stop", "").has_value());
  EXPECT_TRUE(c.sampling.stop.empty());
  EXPECT_EQ(c.set("stop", "[1]").err().message, "sampling.stop[0]: expected a string, got an integer");
}

TEST(config_test, get_and_keys) {
  config c;
  ASSERT_TRUE(c.set("temperature", "0.25").has_value());
  EXPECT_EQ(*c.get("sampling.temperature"), "0.25");
  EXPECT_EQ(*c.get("max_batch"), "16");
  EXPECT_EQ(*c.get("model.path"), "\"models/SmolLM2-135M-Instruct.Q4_1.gguf\"");
  EXPECT_EQ(*c.get("k"), "5");
  EXPECT_FALSE(c.get("nope").has_value());
  const auto keys = config::keys();
  EXPECT_EQ(keys.front(), "model.path");
  for (const auto& k : keys) {
    auto v = c.get(k);
    ASSERT_TRUE(v.has_value()) << k;
    // Every printed value sets back to the same config.
    config d = c;
    ASSERT_TRUE(d.set(k, *v).has_value()) << k << " = " << *v;
    EXPECT_EQ(d, c) << k;
  }
}

TEST(config_test, to_toml_round_trips) {
  config c;
  ASSERT_TRUE(c.set_all({{"temperature", "0.3"},
                         {"stop", R"(["</s>", "quote \" and \\ and \t"])"},
                         {"model.path", "dir with \"quotes\"/m.gguf"},
                         {"k", "auto"},
                         {"kv_cache.pool_mib", "256"}})
                  .has_value());
  c.plugins.load.push_back({"q8", ""});
  c.devices = {{device_kind::cpu, 0, 1, {0}, 64, device_role::prefill, 0.0},
               {device_kind::cpu, 1, 1, {1}, 256, device_role::decode, 12.5}};
  ASSERT_TRUE(c.validate().has_value());
  auto back = config::from_string(c.to_toml(), "");
  ASSERT_TRUE(back.has_value()) << back.err().message << "\n" << c.to_toml();
  EXPECT_EQ(*back, c);
  EXPECT_TRUE(contains(c.describe(), "# effective configuration (built-in defaults"));
  EXPECT_TRUE(contains(c.describe(), "[[plugins.load]]\nname = \"q8\""));
}

}  // namespace
}  // namespace fw

// telemetry_source plugins: real .so files through the plugin host. A fake source whose
// readings come from a file drives a running engine's supervisor: 85 C degrades it, 60 C brings
// it back, a failing source is logged and serving goes on. The shipped NVML plugin loads where
// a driver exists and is refused with the reason where none does (this machine kind).
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "actors/engine.hpp"
#include "runtime/config/config.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/plugin/plugin_host.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "tests/support/sampling_presets.hpp"
#include "tests/support/test_models.hpp"

namespace fw::actors {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string fake_so = std::string(FW_BINARY_DIR) + "/tests/plugins/libtelemetry_fake.so";
const std::string nvml_so = std::string(FW_BINARY_DIR) + "/plugins/libtelemetry_nvml.so";

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path + ".tmp");
  out << text;
  out.close();
  fs::rename(path + ".tmp", path);  // the plugin never reads half a file
}

class telemetry_plugin_test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fw-telemetry-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    readings_ = (dir_ / "readings.txt").string();
    plugin_host_options o;
    o.copy_dir = (dir_ / "copies").string();
    host_ = std::make_shared<plugin_host>(o);
  }
  void TearDown() override {
    host_.reset();
    fs::remove_all(dir_);
  }

  std::string params() const { return "{\"file\": \"" + readings_ + "\"}"; }

  fs::path dir_;
  std::string readings_;
  std::shared_ptr<plugin_host> host_;
};

TEST_F(telemetry_plugin_test, the_host_serves_a_telemetry_source_and_reports_its_failures) {
  auto info = host_->load("telemetry_fake", fake_so);
  ASSERT_TRUE(info) << info.err().what();
  EXPECT_EQ(info->kind, plugin_kind::telemetry_source);
  EXPECT_EQ(std::string(to_string(info->kind)), "telemetry_source");
  auto feed = host_->create_telemetry_source("telemetry_fake", params());
  ASSERT_TRUE(feed) << feed.err().what();
  EXPECT_NE((*feed)->describe().find("telemetry_fake 1.0.0-test: readings from"), std::string::npos)
      << (*feed)->describe();
  write(readings_, "prefill temperature_c 71.5\ncuda:0 link_errors 3\n");
  auto s = (*feed)->sample(2.5);
  ASSERT_TRUE(s) << s.err().what();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].device, "prefill");
  EXPECT_EQ((*s)[0].metric, "temperature_c");
  EXPECT_DOUBLE_EQ((*s)[0].value, 71.5);
  EXPECT_DOUBLE_EQ((*s)[0].t_s, 2.5);
  EXPECT_EQ((*s)[1].device, "cuda:0");
  write(readings_, "fail\n");
  auto bad = (*feed)->sample(3);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.err().message.find("sample"), std::string::npos) << bad.err().message;
  EXPECT_NE(bad.err().message.find("telemetry_fake"), std::string::npos) << bad.err().message;
  // Another kind under that name is not a telemetry source.
  ASSERT_TRUE(host_->load("ngram", std::string(FW_BINARY_DIR) + "/plugins/libdraft_ngram.so"));
  auto wrong = host_->create_telemetry_source("ngram");
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.err().message.find("is a draft_model plugin, not a telemetry_source"), std::string::npos);
}

TEST_F(telemetry_plugin_test, a_running_engine_degrades_on_plugin_readings_and_recovers) {
  tiny_model_spec spec;
  spec.seed = 47;
  auto m = test::load_tiny(spec, "telemetry_engine");
  ASSERT_TRUE(m);
  ASSERT_TRUE(host_->load("telemetry_fake", fake_so));
  auto feed = host_->create_telemetry_source("telemetry_fake", params());
  ASSERT_TRUE(feed);
  write(readings_, "prefill temperature_c 60\n");
  cpu_backend_options o;
  o.threads = 2;
  o.kv_tokens = 1024;
  o.kv_block_tokens = 16;
  engine_limits lim;
  lim.n_ctx = 128;
  lim.telemetry_poll_s = 0.01;
  lim.degradation.sustain_samples = 1000000;  // stay link-degraded while hot (no co-location)
  lim.telemetry_feeds = {*feed};
  auto e = engine::start(m, std::make_unique<cpu_backend>(m->config(), m->weights(), o), lim, engine_options{});
  ASSERT_TRUE(e) << e.err().what();
  auto state = [&] {
    auto h = (*e)->health();
    return h ? h->degradation : std::string("?");
  };
  auto wait_for = [&](const std::string& want) {
    for (int i = 0; i < 3000 && state() != want; ++i) std::this_thread::sleep_for(10ms);
    return state();
  };
  auto h = (*e)->health();
  ASSERT_TRUE(h);
  EXPECT_NE(h->telemetry.find("telemetry_fake"), std::string::npos) << h->telemetry;
  EXPECT_EQ(state(), "healthy");
  write(readings_, "prefill temperature_c 85\n");
  EXPECT_EQ(wait_for("link-degraded"), "link-degraded");
  h = (*e)->health();
  ASSERT_TRUE(h);
  EXPECT_NE(h->transitions.back().find("prefill at 85 C"), std::string::npos) << h->transitions.back();
  auto r = (*e)->run({5, 6, 7, 8}, test::greedy(6));
  EXPECT_TRUE(r.ok()) << r.final.error;
  write(readings_, "fail\n");  // logged; the state holds, serving goes on
  std::this_thread::sleep_for(100ms);
  r = (*e)->run({5, 6, 7, 8}, test::greedy(6));
  EXPECT_TRUE(r.ok()) << r.final.error;
  write(readings_, "prefill temperature_c 60\n");
  EXPECT_EQ(wait_for("healthy"), "healthy");
  (*e)->shutdown();
}

TEST_F(telemetry_plugin_test, nvml_loads_with_a_driver_and_is_refused_with_the_reason_without_one) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  const bool driver = lib != nullptr;
  if (lib) dlclose(lib);
  auto info = host_->load("telemetry_nvml", nvml_so);
  if (driver) {
    ASSERT_TRUE(info) << info.err().what();
    auto feed = host_->create_telemetry_source("telemetry_nvml");
    ASSERT_TRUE(feed) << feed.err().what();
    EXPECT_NE((*feed)->describe().find("NVML, driver"), std::string::npos);
    auto s = (*feed)->sample(0);
    ASSERT_TRUE(s) << s.err().what();
    GTEST_SKIP() << "NVIDIA driver present: " << (*feed)->describe() << ", " << s->size() << " readings";
  }
  ASSERT_FALSE(info);
  EXPECT_NE(info.err().message.find("no NVIDIA driver on this machine, GPU telemetry is off"), std::string::npos)
      << info.err().message;
}

TEST_F(telemetry_plugin_test, the_config_names_telemetry_plugins_and_a_missing_driver_only_warns) {
  EXPECT_FALSE(config::from_string("[supervisor]\ntelemetry_plugins = [\"nope\"]\n", "t.toml"));
  tiny_model_spec spec;
  spec.seed = 48;
  ASSERT_TRUE(test::load_tiny(spec, "telemetry_cfg"));
  const std::string path = test::temp_dir() + "/telemetry_cfg.gguf";
  auto cfg = config::from_string("[model]\npath = \"" + path +
                                     "\"\nctx_size = 128\n[kv_cache]\nblock_tokens = 16\npool_tokens = 1024\n"
                                     "[plugins]\ndir = \"" + std::string(FW_BINARY_DIR) + "/plugins\"\n"
                                     "[[plugins.load]]\nname = \"telemetry_nvml\"\n"
                                     "[supervisor]\ntelemetry_plugins = [\"telemetry_nvml\"]\n",
                                 "t.toml");
  ASSERT_TRUE(cfg) << cfg.err().message;
  auto parts = build_runtime(*cfg);
  ASSERT_TRUE(parts) << parts.err().what();
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib) {
    dlclose(lib);
    EXPECT_EQ(parts->telemetry.size(), 1u);
    EXPECT_EQ(parts->limits().telemetry_feeds.size(), 1u);
  } else {
    EXPECT_TRUE(parts->telemetry.empty());
    bool warned = false;
    for (const auto& w : parts->warnings) warned = warned || w.find("that telemetry is off") != std::string::npos;
    EXPECT_TRUE(warned);
  }
}

}  // namespace
}  // namespace fw::actors

#include "tools/bench/bench_soak.hpp"

#include <dirent.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "actors/engine.hpp"
#include "actors/engine_faults.hpp"
#include "runtime/base/free_memory.hpp"
#include "runtime/config/config.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "tools/bench/http_stream_client.hpp"
#include "tools/bench/percentile.hpp"
#include "tools/bench/server_process.hpp"
#include "tools/bench/soak_schedule.hpp"
#include "tools/bench/workload_file.hpp"
#include "tools/server/server_stack.hpp"

namespace fw::cli {

namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

size_t open_fds() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n > 0 ? n - 1 : 0;  // the directory stream's own
}

/// The process's threads now.
size_t thread_count() {
  size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

/// Memory in MiB, read after the allocator returned its free pages (what is still allocated, not
/// the high-water mark of the last burst: runtime/base/free_memory).
struct memory_sample {
  double anon = 0;  ///< anonymous resident memory
  double file = 0;  ///< file-backed resident memory (the mapped model)
  /// Bytes the program holds from the allocator (glibc: every arena's chunks in use plus its own
  /// mappings); 0 elsewhere. Unlike resident memory, free memory an arena keeps is not in it.
  double heap = 0;
};

memory_sample sample_memory() {
  release_free_memory();
  memory_sample m;
  std::ifstream in("/proc/self/status");
  std::string line;
  auto field = [&](const char* name, double& out) {
    const size_t n = std::strlen(name);
    if (line.compare(0, n, name) == 0) out = std::strtod(line.c_str() + n, nullptr) / 1024.0;
  };
  while (std::getline(in, line)) {
    field("RssAnon:", m.anon);
    field("RssFile:", m.file);
  }
#if defined(__GLIBC__)
  const struct mallinfo2 mi = mallinfo2();
  m.heap = static_cast<double>(mi.uordblks + mi.hblkhd) / (1 << 20);
#endif
  return m;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// What the driver has armed and what fired, shared with the engine's fault hooks (worker threads).
struct chaos_state {
  /// Faults armed and not yet fired, per kind. A damaged KV stream needs a prompt crossing
  /// the link while the node is up, a less frequent moment: its armings add up (to 8) so that each fires at the next chance.
  /// The others' moments are frequent, and one arming at a time keeps them from firing in bursts
  /// (armings that pile up while a worker restarts would kill it again at once, each time).
  std::array<std::atomic<int>, soak_fault_kinds> armed{};
  void arm(soak_fault k) {
    const int cap = k == soak_fault::kv_stream ? 8 : 1;
    auto& n = armed[static_cast<size_t>(k)];
    int have = n.load();
    while (have < cap && !n.compare_exchange_weak(have, have + 1)) {
    }
  }
  std::mutex m;
  struct fired {
    soak_fault kind;
    double at_s;
  };
  std::vector<fired> log;
  clock_type::time_point t0 = clock_type::now();

  void record(soak_fault k) {
    std::lock_guard<std::mutex> lock(m);
    log.push_back({k, seconds_since(t0)});
  }
  /// The hook's question: is this fault armed? (true once per arming)
  bool fire(soak_fault k) {
    if (!take(k)) return false;
    record(k);
    return true;
  }
  /// One arming of k used up, if any.
  bool take(soak_fault k) {
    auto& n = armed[static_cast<size_t>(k)];
    int have = n.load();
    while (have > 0)
      if (n.compare_exchange_weak(have, have - 1)) return true;
    return false;
  }
};

struct request_record {
  size_t line = 0;
  double start_s = 0, end_s = -1;
  std::string outcome;  ///< same, changed, disconnected, failed, hung
  int attempts = 0;
  std::string error;
};

/// The soak's own config: the user's, as a decode node of a prefill node on `peer` (when set)
/// whose prompts of 32 tokens or more go there, with a draft (the draft_ngram plugin when it is
/// built, else the n-gram draft) at a fixed k so that the draft actor is asked every step, and a
/// crash-loop limit its own injected deaths (one fault each fault_gap_s) cannot reach, and a
/// restart back-off capped at 200 ms.
config decode_config(config cfg, const std::string& peer, double fault_gap_s, json& overrides) {
  if (!peer.empty()) {
    cfg.node.role = node_role::decode;
    cfg.node.listen.clear();
    cfg.node.peers = {peer};
    cfg.node.heartbeat_ms = 100;
    cfg.node.heartbeat_timeout_ms = 1000;
    cfg.node.reconnect_ms = 50;
    cfg.node.reconnect_max_ms = 400;
    cfg.node.deadline_ms = 30000;
    // Every prompt of the shipped workload (80+ tokens) crosses the link while the prefill node is
    // up and the supervisor keeps the roles apart: with only the long ones (3 of 40 lines) crossing,
    // a node killed every ~6 s and drills that co-locate the roles for seconds, a 100-s run could
    // see no stream to damage. The local prefill worker still serves the rest of the time.
    cfg.node.min_remote_tokens = 32;
    overrides["node"] = "role decode, peers [" + peer + "], prompts of 32+ tokens prefilled there";
  }
  if (cfg.speculative.draft == draft_kind::none) {
    plugin_load p{"draft_ngram", ""};
    if (std::filesystem::exists(cfg.plugins.file_of(p))) {
      bool loaded = false;
      for (const auto& l : cfg.plugins.load) loaded |= l.name == p.name;
      if (!loaded) cfg.plugins.load.push_back(p);
      cfg.speculative.draft = draft_kind::plugin;
      cfg.speculative.draft_plugin = p.name;
      overrides["speculative.draft"] = "plugin:" + p.name;
    } else {
      cfg.speculative.draft = draft_kind::ngram;
      overrides["speculative.draft"] = "ngram";
    }
  }
  // Every prompt prefilled (none served from the cache of an earlier run of the same prompt), so
  // the long ones cross the KV stream and the short ones run on the local prefill worker.
  cfg.kv_cache.prefix_cache_share = 0;
  overrides["kv_cache.prefix_cache_share"] = 0;
  // The admin routes (plugin reload, drills) need a key.
  if (cfg.server.api_key.empty() && !std::getenv("FLYWHEEL_API_KEY")) {
    cfg.server.api_key = "soak-" + std::to_string(std::random_device{}());
    overrides["server.api_key"] = "a random one";
  }
  // The driver kills each worker once per ~6-9 faults (as many kinds): ~10 deaths a minute at a
  // fault per 0.7 s, the shipped crash-loop limit. A worker that trips it marks its device down
  // for [supervisor] down_s, decoding stops, the arrivals pile up and, on a slow or busy host, run
  // past the hang bound: a CI run's soak failed so. The soak tests that requests survive the deaths;
  // the escalation itself is the restart policy's and supervisor's tests' (restart_policy_test).
  // Bounded by every fault killing it (--faults decode_worker alone).
  const double deaths = cfg.supervisor.restart_window_s / std::max(0.05, fault_gap_s);
  const auto limit = static_cast<uint32_t>(std::ceil(3 * deaths)) + 10;
  if (cfg.supervisor.max_restarts < limit) {
    cfg.supervisor.max_restarts = limit;
    overrides["supervisor.max_restarts"] = limit;
  }
  // At that rate the restart back-off (doubling per death in the window) sits at its cap: with the
  // shipped 2 s, each worker is down ~2 s of every ~6, a third of the host's decoding and
  // prefilling gone, which no deployment sees. 200 ms keeps the soak about survival, not back-off.
  if (cfg.supervisor.restart_backoff_max_ms > 200) {
    cfg.supervisor.restart_backoff_max_ms = std::max<uint32_t>(200, cfg.supervisor.restart_backoff_ms);
    overrides["supervisor.restart_backoff_max_ms"] = cfg.supervisor.restart_backoff_max_ms;
  }
  if (!cfg.speculative.k) {
    cfg.speculative.k = 3;
    overrides["speculative.k"] = 3;
  }
  return cfg;
}

/// The name of the draft plugin the soak reloads ("" when the draft is not a plugin).
std::string draft_plugin(const config& cfg) {
  return cfg.speculative.draft == draft_kind::plugin ? cfg.speculative.draft_plugin : std::string();
}

}  // namespace

expected<json> run_soak(const soak_options& o, const std::function<void(const std::string&)>& progress) {
  auto user_cfg = config::from_file(o.config_path);
  if (!user_cfg) return user_cfg.err();
  auto wl = workload_file::load(o.workload_path);
  if (!wl) return wl.err();
  if (wl->lines.empty()) return make_error(errc::invalid_argument, o.workload_path + " has no requests");
  std::filesystem::create_directories(o.work_dir);

  // The prefill node: the user's config as role prefill, in a child process.
  json overrides = json::object();
  std::unique_ptr<server_process> node;
  const std::string node_log = o.work_dir + "/prefill_node.log";
  std::string node_config;
  uint16_t node_port = 0;
  if (o.prefill_node) {
    config pc = *user_cfg;
    pc.node.role = node_role::prefill;
    pc.node.peers.clear();
    pc.node.listen = "127.0.0.1:0";
    pc.speculative.draft = draft_kind::none;
    node_config = o.work_dir + "/prefill_node.toml";
    std::ofstream(node_config) << pc.to_toml();
    std::filesystem::remove(node_log);
    progress("soak: starting the prefill node (log " + node_log + ")");
    auto n = server_process::start_prefill_node(o.exe, node_config, 0, node_log);
    if (!n) return n.err();
    node = std::make_unique<server_process>(std::move(*n));
    node_port = static_cast<uint16_t>(std::stoi(node->url().substr(node->url().rfind(':') + 1)));
  }

  // The decode node in this process: the engine with the fault seam, the real HTTP server.
  config cfg = decode_config(*user_cfg, node ? node->url() : std::string(), o.fault_gap_s, overrides);
  if (auto ok = cfg.validate(); !ok) return ok.err();
  const std::string plugin = draft_plugin(cfg);
  auto parts = build_runtime(cfg);
  if (!parts) return parts.err();
  // Every page of the KV pool touched now (before the engine owns it), so that resident memory
  // measures the rest: the pool's pages are first written as blocks are first used, which would
  // otherwise read as growth.
  {
    auto& pool = parts->device()->kv_pool();
    for (uint32_t b = 0; b < pool.total_blocks(); ++b) {
      auto bytes = pool.block_data(b);
      for (size_t i = 0; i < bytes.size(); i += 4096) bytes[i] = std::byte{0};
    }
  }
  auto chaos = std::make_shared<chaos_state>();
  auto faults = std::make_shared<actors::engine_faults>();
  faults->before_decode_step = [chaos] { return chaos->fire(soak_fault::decode_worker); };
  faults->crash_prefill = [chaos](uint64_t) { return chaos->fire(soak_fault::prefill_worker); };
  faults->crash_draft = [chaos] { return chaos->fire(soak_fault::draft_actor); };
  faults->fail_kv_reserve = [chaos](uint64_t) { return chaos->fire(soak_fault::kv_reserve); };
  faults->damage_kv_stream = [chaos](uint64_t, std::vector<std::byte>& bytes) {
    if (!bytes.empty() && chaos->fire(soak_fault::kv_stream)) bytes[bytes.size() / 2] ^= std::byte{0x20};
  };
  actors::engine_options eo;
  eo.faults = faults;
  auto engine = actors::engine::start(*parts, parts->limits(), eo);
  if (!engine) return engine.err();
  auto& e = **engine;
  auto stack = server::server_stack::start(e, *parts, "127.0.0.1", 0);
  if (!stack) {
    e.shutdown();
    return stack.err();
  }
  const endpoint ep{"127.0.0.1", std::to_string((*stack)->http->port())};
  const std::string api_key = (*stack)->options.api_key;
  auto stop_all = [&] {
    (*stack)->service->cancel_all();
    (*stack)->http->stop();
    e.shutdown();
    if (node) node->stop();
  };
  if (node) {
    const auto until = clock_type::now() + std::chrono::seconds(60);
    while (e.peers().empty() || e.peers()[0].state != "connected") {
      if (clock_type::now() > until) {
        const std::string why = e.peers().empty() ? "" : e.peers()[0].reason;
        stop_all();
        return make_error(errc::timed_out, "the decode node did not connect to the prefill node: " + why);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // The reference: each distinct prompt once, undisturbed, greedy.
  // Lines spread over the file (its classes in their shares).
  const size_t n_lines = std::min(o.prompts, wl->lines.size());
  std::vector<size_t> lines(n_lines);
  for (size_t i = 0; i < n_lines; ++i) lines[i] = i * wl->lines.size() / n_lines;
  auto body_of = [&](size_t line, int max_tokens) {
    return json{{"model", (*stack)->options.model_name},
                {"messages", wl->lines[lines[line]].messages},
                {"max_tokens", max_tokens},
                {"temperature", 0}};
  };
  auto tokens_of = [&](size_t line) { return std::min(o.max_tokens, wl->lines[lines[line]].max_tokens); };
  std::vector<std::string> reference(n_lines);
  progress("soak: the reference run (" + std::to_string(n_lines) + " prompts, undisturbed)");
  {
    std::atomic<size_t> next{0};
    std::string failure;
    std::mutex fm;
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
      ts.emplace_back([&] {
        for (size_t i; (i = next++) < n_lines;) {
          auto r = stream_chat(ep, body_of(i, tokens_of(i)), api_key, clock_type::now() + std::chrono::seconds(300));
          if (!r.ok) {
            std::lock_guard<std::mutex> lock(fm);
            failure = "the reference run's request " + std::to_string(i) + " failed: HTTP " + std::to_string(r.status) +
                      " " + r.error;
          }
          reference[i] = r.text;
        }
      });
    for (auto& t : ts) t.join();
    if (!failure.empty()) {
      stop_all();
      return make_error(errc::internal, failure);
    }
  }
  // Idle counts before the faults: what must come back.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const size_t fds_idle = open_fds();
  const size_t threads_idle = thread_count();
  const auto idle_stats = e.stats();

  // The faults this run can inject.
  std::vector<soak_fault> kinds = {soak_fault::decode_worker, soak_fault::prefill_worker, soak_fault::draft_actor,
                                   soak_fault::kv_reserve,    soak_fault::client_disconnect, soak_fault::drill};
  if (node) {
    kinds.push_back(soak_fault::kv_stream);
    kinds.push_back(soak_fault::prefill_node_kill);
  }
  if (!plugin.empty()) kinds.push_back(soak_fault::plugin_reload);
  if (o.faults.size() == 1 && o.faults[0] == "none") {
    kinds.clear();  // load only: the soak's baseline
  } else if (!o.faults.empty()) {  // the kinds asked for, each of which this run must be able to inject
    std::vector<soak_fault> chosen;
    for (const auto& name : o.faults) {
      auto it = std::find(soak_fault_names.begin(), soak_fault_names.end(), name);
      const bool known = it != soak_fault_names.end();
      const auto k = static_cast<soak_fault>(known ? it - soak_fault_names.begin() : 0);
      if (!known || std::find(kinds.begin(), kinds.end(), k) == kinds.end()) {
        stop_all();
        std::string all;
        for (soak_fault f : kinds) all += (all.empty() ? "" : ", ") + std::string(soak_fault_names[static_cast<size_t>(f)]);
        return make_error(errc::invalid_argument, "--faults: '" + name + "' is not a fault this run can inject (" + all + ")");
      }
      chosen.push_back(k);
    }
    kinds = chosen;
  }
  soak_schedule schedule(kinds, o.fault_gap_s, o.seed);
  std::string drill_csv;
  for (const std::string& p : {std::string("conf/drills/heat_ramp.csv"), std::filesystem::path(o.config_path).parent_path().string() + "/drills/heat_ramp.csv"})
    if (drill_csv.empty() && std::filesystem::exists(p)) drill_csv = read_text(p);

  std::mutex rm;
  std::vector<request_record> records;
  std::vector<std::string> problems;
  std::map<std::string, uint64_t> skipped;  // faults the driver could not inject (and why)
  chaos->t0 = clock_type::now();
  const auto t0 = chaos->t0;
  const auto end = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.duration_s));
  std::atomic<bool> arrivals_done{false};
  double rss_warm = 0, heap_warm = 0;
  json rss_series = json::array();  // [seconds, anonymous resident MiB, file-backed resident MiB, allocated MiB] every 15 s

  auto client = [&](size_t idx, size_t line, bool disconnect) {
    request_record rec;
    {
      std::lock_guard<std::mutex> lock(rm);
      rec = records[idx];
    }
    std::string last_error;
    for (int attempt = 1; attempt <= 4 && rec.outcome.empty(); ++attempt) {
      rec.attempts = attempt;
      // A disconnecting client goes away after its first text chunk.
      auto r = stream_chat(ep, body_of(line, tokens_of(line)), api_key, clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.hang_s)),
                           disconnect ? 1 : 0);
      if (disconnect && r.abandoned && r.text_events > 0) {
        // What it got before it left must still be the reference's beginning.
        rec.outcome = reference[line].compare(0, r.text.size(), r.text) == 0 ? "disconnected" : "changed";
        chaos->record(soak_fault::client_disconnect);
        break;
      }
      disconnect = false;  // it ended first: judged as any other
      if (r.ok) {
        rec.outcome = r.text == reference[line] ? "same" : "changed";
        if (rec.outcome == "changed") {
          size_t at = 0;
          while (at < r.text.size() && at < reference[line].size() && r.text[at] == reference[line][at]) ++at;
          const size_t from = at > 20 ? at - 20 : 0;
          rec.error = "finish_reason " + r.finish_reason + ", " + std::to_string(r.text.size()) + " vs " +
                      std::to_string(reference[line].size()) + " bytes, first difference at byte " + std::to_string(at) +
                      ": got \"" + r.text.substr(from, 60) + "\", want \"" + reference[line].substr(from, 60) + "\"";
        }
        break;
      } else if (r.abandoned) {
        rec.outcome = "hung";
        rec.error = "no end within " + std::to_string(static_cast<int>(o.hang_s)) + " s";
        break;
      }
      last_error = !r.error.empty() ? r.error : r.status ? "HTTP " + std::to_string(r.status) : std::string();
      std::this_thread::sleep_for(std::chrono::milliseconds(100 * attempt));
    }
    if (rec.outcome.empty()) {
      rec.outcome = last_error.empty() ? "lost" : "failed";  // no clear error: lost
      rec.error = last_error.empty() ? "no response and no error" : last_error;
    }
    rec.end_s = seconds_since(t0);
    std::lock_guard<std::mutex> lock(rm);
    records[idx] = rec;
  };

  progress("soak: " + std::to_string(static_cast<int>(o.duration_s)) + " s of requests (" + std::to_string(o.rate) +
           "/s) and faults (one per " + std::to_string(o.fault_gap_s) + " s on average)");
  // One thread per request; a finished one is joined at the next arrival (an exited thread that
  // is not joined keeps its stack mapped: ~30 KiB of resident memory per request, which the
  // memory check would count against the server).
  struct client_thread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::list<client_thread> clients;
  auto reap_clients = [&clients] {
    for (auto it = clients.begin(); it != clients.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = clients.erase(it);
      } else {
        ++it;
      }
    }
  };
  // One damaged-stream arming before the first arrival, so that the first stream that crosses
  // carries it, whatever the bag's order.
  if (std::find(kinds.begin(), kinds.end(), soak_fault::kv_stream) != kinds.end()) chaos->arm(soak_fault::kv_stream);
  std::thread arrivals([&] {
    std::mt19937_64 rng(o.seed * 7919 + 1);
    std::exponential_distribution<double> gap(o.rate);
    std::uniform_int_distribution<size_t> pick(0, n_lines - 1);
    double at = 0;
    for (;;) {
      at += gap(rng);
      const auto when = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(at));
      if (when >= end) break;
      std::this_thread::sleep_until(when);
      const size_t line = pick(rng);
      const bool disconnect = chaos->take(soak_fault::client_disconnect);
      size_t idx;
      {
        std::lock_guard<std::mutex> lock(rm);
        idx = records.size();
        records.push_back({line, seconds_since(t0), -1, "", 0, ""});
      }
      reap_clients();
      auto done = std::make_shared<std::atomic<bool>>(false);
      clients.push_back({std::thread([&client, idx, line, disconnect, done] {
                           client(idx, line, disconnect);
                           *done = true;
                         }),
                         done});
    }
    arrivals_done = true;
  });

  // Remote prefills over the whole run: the link's counters start again whenever its actor does
  // (a prefill_worker fault on a decode node kills the link, its prefill worker), so they are
  // summed across restarts, read after each fault: at least this many (those finished between the
  // last read and a restart are missed). The report's other link figures are since its last start.
  uint64_t remote_prefills = 0, remote_last = e.peers().empty() ? 0 : e.peers()[0].prefills;  // the reference run's
  auto count_remote = [&] {
    const auto peers = e.peers();
    const uint64_t now = peers.empty() ? 0 : peers[0].prefills;
    remote_prefills += now >= remote_last ? now - remote_last : now;
    remote_last = now;
  };
  std::thread driver([&] {
    auto next = clock_type::now();
    auto last_report = clock_type::now();
    while (clock_type::now() < end) {
      next += std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(schedule.next_gap_s()));
      std::this_thread::sleep_until(std::min(next, end));
      if (clock_type::now() >= end) break;
      if (rss_warm == 0 && seconds_since(t0) > 0.25 * o.duration_s) {
        const memory_sample m = sample_memory();
        rss_warm = m.anon;
        heap_warm = m.heap;
      }
      const soak_fault k = schedule.kinds().empty() ? soak_fault::drill : schedule.next_kind();
      switch (schedule.kinds().empty() ? soak_fault_kinds : static_cast<size_t>(k)) {
        case soak_fault_kinds:  // no faults: only the bookkeeping below
          break;
        case static_cast<size_t>(soak_fault::prefill_node_kill): {
          node->kill9();
          chaos->record(k);
          std::this_thread::sleep_for(std::chrono::milliseconds(300 + static_cast<int>(schedule.next_gap_s() * 300) % 900));
          auto again = server_process::start_prefill_node(o.exe, node_config, node_port, node_log);
          if (!again) {
            std::lock_guard<std::mutex> lock(rm);
            problems.push_back("the prefill node did not restart: " + again.err().message);
          } else {
            node = std::make_unique<server_process>(std::move(*again));
          }
          break;
        }
        case static_cast<size_t>(soak_fault::plugin_reload): {
          const auto r = http_post(ep, "/admin/plugins/" + plugin + "/reload", "", api_key, 30);
          if (r.status == 200) chaos->record(k);
          else ++skipped["plugin_reload: HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 120)];
          break;
        }
        case static_cast<size_t>(soak_fault::drill): {
          if (drill_csv.empty()) {
            ++skipped["drill: conf/drills/heat_ramp.csv not found"];
            break;
          }
          const auto r = http_post(ep, "/admin/drill", json{{"trace", drill_csv}, {"speed", 40}}.dump(), api_key, 30);
          if (r.status == 202) chaos->record(k);
          else ++skipped["drill: HTTP " + std::to_string(r.status) + " (one is playing)"];
          break;
        }
        default:
          chaos->arm(k);  // counted when it fires
          break;
      }
      count_remote();
      if (seconds_since(last_report) >= 15) {
        last_report = clock_type::now();
        const memory_sample m = sample_memory();
        rss_series.push_back({static_cast<int>(seconds_since(t0)), static_cast<int>(m.anon), static_cast<int>(m.file),
                              static_cast<int>(m.heap)});
        size_t done = 0, total = 0;
        {
          std::lock_guard<std::mutex> lock(rm);
          total = records.size();
          for (const auto& r : records) done += r.end_s >= 0;
        }
        size_t fired = 0;
        {
          std::lock_guard<std::mutex> lock(chaos->m);
          fired = chaos->log.size();
        }
        progress("soak: " + std::to_string(static_cast<int>(seconds_since(t0))) + " s: " + std::to_string(done) + "/" +
                 std::to_string(total) + " requests done, " + std::to_string(fired) + " faults injected");
      }
    }
    for (auto& a : chaos->armed) a = 0;  // nothing fires after the end
  });

  arrivals.join();
  driver.join();
  progress("soak: draining");
  for (auto& c : clients) c.thread.join();
  // Idle again: every request's KV back, every connection closed.
  const auto drain_until = clock_type::now() + std::chrono::seconds(30);
  scheduler_stats st{};
  for (;;) {
    auto s = e.stats();
    if (s) st = *s;
    const bool idle = s && st.waiting + st.prefilling + st.decoding == 0 && (*stack)->service->in_flight() == 0 &&
                      (*stack)->http->open_connections() == 0;
    if (idle || clock_type::now() > drain_until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (node) {  // the link back up before the descriptors are counted
    const auto until = clock_type::now() + std::chrono::seconds(10);
    while ((e.peers().empty() || e.peers()[0].state != "connected") && clock_type::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const size_t fds_end = open_fds();
  const size_t threads_end = thread_count();
  const memory_sample m_end = sample_memory();
  const double rss_end = m_end.anon;
  const double heap_end = m_end.heap;
  const uint64_t kv_used = e.device().kv_pool().used_blocks();

  // The report.
  json r;
  r["duration_s"] = o.duration_s;
  r["rate"] = o.rate;
  r["fault_gap_s"] = o.fault_gap_s;
  r["seed"] = o.seed;
  r["prompts"] = n_lines;
  r["overrides"] = overrides;
  std::map<std::string, uint64_t> outcomes;
  for (const auto& rec : records) ++outcomes[rec.outcome];
  uint64_t retried = 0;
  for (const auto& rec : records) retried += rec.outcome == "same" && rec.attempts > 1;
  r["requests"] = {{"total", records.size()},
                   {"same", outcomes["same"]},
                   {"same_after_retry", retried},
                   {"changed", outcomes["changed"]},
                   {"disconnected", outcomes["disconnected"]},
                   {"failed", outcomes["failed"]},
                   {"hung", outcomes["hung"]},
                   {"lost", outcomes["changed"] + outcomes["hung"] + outcomes["lost"]}};
  {
    // Arrival to end (retries included): how far the slowest stayed from the hang bound.
    std::vector<double> took;
    for (const auto& rec : records)
      if (rec.end_s >= 0) took.push_back(rec.end_s - rec.start_s);
    r["requests"]["seconds_p50"] = percentile(took, 0.5);
    r["requests"]["seconds_max"] = percentile(took, 1.0);
    r["requests"]["hang_bound_s"] = o.hang_s;
  }
  json examples = json::array();
  for (const auto& rec : records) {
    if (rec.outcome == "same" || rec.outcome == "disconnected" || examples.size() >= 10) continue;
    std::string during;  // the faults of its lifetime (a hung one: until the drain)
    const double until = rec.end_s >= 0 ? rec.end_s : seconds_since(t0);
    for (const auto& f : chaos->log)
      if (f.at_s >= rec.start_s && f.at_s <= until)
        during += (during.empty() ? "" : ", ") + std::string(soak_fault_names[static_cast<size_t>(f.kind)]) + "@" +
                  std::to_string(static_cast<int>(10 * f.at_s) / 10.0).substr(0, 5);
    examples.push_back({{"outcome", rec.outcome}, {"at_s", rec.start_s}, {"attempts", rec.attempts}, {"error", rec.error},
                        {"line", lines[rec.line]}, {"faults_during", during}});
  }
  r["not_same_examples"] = examples;
  json fk = json::object();
  for (soak_fault k : kinds) {
    uint64_t injected = 0, in_flight = 0, survived = 0;
    std::vector<double> at;
    for (const auto& f : chaos->log)
      if (f.kind == k) at.push_back(f.at_s);
    injected = at.size();
    for (const auto& rec : records) {
      if (rec.outcome == "disconnected") continue;
      const bool hit = std::any_of(at.begin(), at.end(), [&](double t) { return rec.start_s <= t && t <= rec.end_s; });
      if (!hit) continue;
      ++in_flight;
      survived += rec.outcome == "same";
    }
    fk[std::string(soak_fault_names[static_cast<size_t>(k)])] = {
        {"injected", injected}, {"requests_in_flight", in_flight}, {"survived", survived}};
  }
  r["faults"] = fk;
  r["faults_total"] = chaos->log.size();
  r["faults_skipped"] = skipped;
  r["resources"] = {{"kv_used_blocks", kv_used},
                    {"prefix_cache_blocks", st.prefix_cache_blocks},
                    {"requests_running", st.waiting + st.prefilling + st.decoding},
                    {"waiting", st.waiting},
                    {"prefilling", st.prefilling},
                    {"decoding", st.decoding},
                    {"peer_in_flight", e.peers().empty() ? 0u : e.peers()[0].in_flight},
                    {"open_connections", (*stack)->http->open_connections()},
                    {"fds_idle", fds_idle},
                    {"fds_end", fds_end},
                    {"threads_idle", threads_idle},
                    {"threads_end", threads_end},
                    {"rss_warm_mib", rss_warm},
                    {"rss_end_mib", rss_end},
                    {"rss_drift", rss_warm > 0 ? rss_end / rss_warm - 1 : 0.0},
                    {"heap_warm_mib", heap_warm},
                    {"heap_end_mib", heap_end},
                    {"rss_series_mib", rss_series},
                    {"worker_restarts", st.worker_restarts - (idle_stats ? idle_stats->worker_restarts : 0)},
                    {"resumed", st.resumed},
                    {"requeued", st.requeued}};
  if (!e.peers().empty()) {
    const auto p = e.peers()[0];
    count_remote();
    r["prefill_node"] = {{"state", p.state},          {"prefills", remote_prefills},
                         {"prefills_since_link_start", p.prefills}, {"failovers", p.failovers},
                         {"connects", p.connects},  {"local_prefills", e.local_prefills()}};
  }

  // The verdict.
  if (r["requests"]["lost"].get<uint64_t>() > 0)
    problems.push_back(std::to_string(r["requests"]["lost"].get<uint64_t>()) + " requests lost (changed, hung or failed without an error)");
  if (outcomes["failed"] > 0)
    problems.push_back(std::to_string(outcomes["failed"]) + " requests failed after their retries");
  if (st.waiting + st.prefilling + st.decoding != 0) problems.push_back("requests still running after the drain");
  if (kv_used != st.prefix_cache_blocks)
    problems.push_back("KV blocks not back: " + std::to_string(kv_used) + " used, " + std::to_string(st.prefix_cache_blocks) +
                       " held by the prefix cache");
  if ((*stack)->http->open_connections() != 0)
    problems.push_back(std::to_string((*stack)->http->open_connections()) + " HTTP connections still open");
  if (fds_end > fds_idle + 2)
    problems.push_back("file descriptors: " + std::to_string(fds_end) + " at the end, " + std::to_string(fds_idle) + " idle before");
  if (rss_warm > 0 && rss_end > rss_warm * (1 + o.rss_bound))
    problems.push_back("resident memory grew " + std::to_string(static_cast<int>(100 * (rss_end / rss_warm - 1))) +
                       "% after warm-up (bound " + std::to_string(static_cast<int>(100 * o.rss_bound)) + "%)");
  if (heap_warm > 0 && heap_end > heap_warm * (1 + o.rss_bound))
    problems.push_back("memory in use grew " + std::to_string(static_cast<int>(100 * (heap_end / heap_warm - 1))) +
                       "% after warm-up (bound " + std::to_string(static_cast<int>(100 * o.rss_bound)) + "%)");
  r["verdict"] = problems.empty() ? "pass" : "fail";
  r["problems"] = problems;
  stop_all();
  return r;
}

void print_soak(const json& r) {
  const auto& q = r["requests"];
  std::printf("\nchaos soak: %.0f s, %.2f requests/s, one fault per %.2f s on average (seed %llu)\n", r["duration_s"].get<double>(),
              r["rate"].get<double>(), r["fault_gap_s"].get<double>(), static_cast<unsigned long long>(r["seed"].get<uint64_t>()));
  std::printf("requests: %llu; unchanged %llu (%llu after a retry), disconnected by the client %llu, failed after retries "
              "%llu, changed %llu, hung %llu; lost %llu\n",
              static_cast<unsigned long long>(q["total"].get<uint64_t>()), static_cast<unsigned long long>(q["same"].get<uint64_t>()),
              static_cast<unsigned long long>(q["same_after_retry"].get<uint64_t>()),
              static_cast<unsigned long long>(q["disconnected"].get<uint64_t>()),
              static_cast<unsigned long long>(q["failed"].get<uint64_t>()), static_cast<unsigned long long>(q["changed"].get<uint64_t>()),
              static_cast<unsigned long long>(q["hung"].get<uint64_t>()), static_cast<unsigned long long>(q["lost"].get<uint64_t>()));
  std::printf("arrival to end: median %.1f s, slowest %.1f s (hung after %.0f s)\n\n", q["seconds_p50"].get<double>(),
              q["seconds_max"].get<double>(), q["hang_bound_s"].get<double>());
  std::printf("| fault | injected | requests in flight | of which unchanged |\n|---|---|---|---|\n");
  for (const auto& [name, f] : r["faults"].items())
    std::printf("| %s | %llu | %llu | %llu |\n", name.c_str(), static_cast<unsigned long long>(f["injected"].get<uint64_t>()),
                static_cast<unsigned long long>(f["requests_in_flight"].get<uint64_t>()),
                static_cast<unsigned long long>(f["survived"].get<uint64_t>()));
  const auto& s = r["resources"];
  std::printf("\nafter the drain: KV blocks used %llu (prefix cache %llu), requests running %llu (waiting %llu, prefilling "
              "%llu, decoding %llu; at the prefill node %llu), HTTP connections %llu, file "
              "descriptors %llu (idle before: %llu), anonymous resident memory %.0f MiB (%.0f after warm-up, %+.1f%%), "
              "allocated %.0f MiB (%.0f after warm-up); %llu worker restarts\n",
              static_cast<unsigned long long>(s["kv_used_blocks"].get<uint64_t>()),
              static_cast<unsigned long long>(s["prefix_cache_blocks"].get<uint64_t>()),
              static_cast<unsigned long long>(s["requests_running"].get<uint64_t>()),
              static_cast<unsigned long long>(s["waiting"].get<uint64_t>()), static_cast<unsigned long long>(s["prefilling"].get<uint64_t>()),
              static_cast<unsigned long long>(s["decoding"].get<uint64_t>()),
              static_cast<unsigned long long>(s["peer_in_flight"].get<uint64_t>()),
              static_cast<unsigned long long>(s["open_connections"].get<uint64_t>()),
              static_cast<unsigned long long>(s["fds_end"].get<uint64_t>()), static_cast<unsigned long long>(s["fds_idle"].get<uint64_t>()),
              s["rss_end_mib"].get<double>(), s["rss_warm_mib"].get<double>(), 100 * s["rss_drift"].get<double>(),
              s["heap_end_mib"].get<double>(), s["heap_warm_mib"].get<double>(),
              static_cast<unsigned long long>(s["worker_restarts"].get<uint64_t>()));
  for (const auto& [why, n] : r["faults_skipped"].items())
    std::printf("not injected %llu times: %s\n", static_cast<unsigned long long>(n.get<uint64_t>()), why.c_str());
  for (const auto& ex : r["not_same_examples"])
    std::printf("  %s at %.1f s after %d attempts: %s\n", ex["outcome"].get<std::string>().c_str(), ex["at_s"].get<double>(),
                ex["attempts"].get<int>(), ex["error"].get<std::string>().c_str());
  for (const auto& ex : r["not_same_examples"])
    if (!ex["faults_during"].get<std::string>().empty())
      std::printf("  (at %.1f s) faults during it: %s\n", ex["at_s"].get<double>(), ex["faults_during"].get<std::string>().c_str());
  std::printf("\nverdict: %s\n", r["verdict"].get<std::string>().c_str());
  for (const auto& p : r["problems"]) std::printf("  - %s\n", p.get<std::string>().c_str());
}

}  // namespace fw::cli

#include "tools/bench/trace_replay.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "tools/bench/http_stream_client.hpp"
#include "tools/bench/percentile.hpp"

namespace fw::cli {

namespace {

using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

clock_type::duration seconds(double s) {
  return std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(s));
}

double s_since(clock_type::time_point a) { return std::chrono::duration<double>(clock_type::now() - a).count(); }

json percentiles(const std::vector<double>& v) {
  if (v.empty()) return json{{"p50", nullptr}, {"p95", nullptr}, {"p99", nullptr}, {"mean", nullptr}};
  double sum = 0;
  for (double x : v) sum += x;
  return json{{"p50", percentile(v, 0.50)}, {"p95", percentile(v, 0.95)}, {"p99", percentile(v, 0.99)},
              {"mean", sum / static_cast<double>(v.size())}};
}

expected<std::string> first_model(const endpoint& ep, const std::string& url, const std::string& api_key) {
  const auto r = http_get(ep, "/v1/models", api_key);
  auto j = json::parse(r.body, nullptr, false);
  if (r.status != 200 || j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty())
    return make_error(errc::io_error, url + "/v1/models answered " + std::to_string(r.status) + ": " + r.body.substr(0, 200));
  return j["data"][0].value("id", "");
}

}  // namespace

expected<replay_result> replay_trace(const replay_options& o, const std::vector<traced_request>& trace) {
  auto ep = parse_endpoint(o.url);
  if (!ep) return ep.err();
  replay_result out;
  out.model = o.model;
  if (out.model.empty()) {
    auto m = first_model(*ep, o.url, o.api_key);
    if (!m) return m.err();
    out.model = *m;
  }
  std::mutex mutex;
  std::condition_variable slot_free;
  std::atomic<int> open{0}, sent{0}, finished{0}, failed{0};
  std::vector<std::thread> threads;
  out.outcomes.reserve(trace.size());
  const auto t0 = clock_type::now();
  const double last_at = trace.empty() ? 0 : trace.back().at_s;
  const auto deadline = t0 + seconds(last_at + o.drain_s);
  auto last_progress = t0;
  auto progress = [&](bool final) {
    if (!o.progress) return;
    std::fprintf(stderr, "\r%s: %5.1f s  sent %d/%zu  done %d  errors %d  open %d   %s", o.label.c_str(), s_since(t0),
                 sent.load(), trace.size(), finished.load(), failed.load(), open.load(), final ? "\n" : "");
    std::fflush(stderr);
  };
  for (const auto& req : trace) {
    const auto arrival = t0 + seconds(req.at_s);
    while (clock_type::now() < arrival) {
      std::this_thread::sleep_until(std::min(arrival, clock_type::now() + std::chrono::milliseconds(200)));
      if (clock_type::now() - last_progress > std::chrono::seconds(1)) {
        last_progress = clock_type::now();
        progress(false);
      }
    }
    if (o.concurrency > 0) {
      std::unique_lock<std::mutex> lock(mutex);
      slot_free.wait(lock, [&] { return open.load() < o.concurrency; });
    }
    ++open;
    ++sent;
    threads.emplace_back([&, &req = req, arrival] {
      request_outcome r;
      r.cls = req.cls;
      r.at_s = req.at_s;
      r.client_wait_ms = std::chrono::duration<double, std::milli>(clock_type::now() - arrival).count();
      json body = {{"model", out.model}, {"messages", req.messages}, {"max_tokens", req.max_tokens},
                   {"temperature", o.temperature}};
      auto s = stream_chat(*ep, std::move(body), o.api_key, deadline);
      r.status = s.status;
      r.ok = s.ok;
      r.abandoned = s.abandoned;
      r.ttft_ms = s.ttft_ms + r.client_wait_ms;
      r.e2e_ms = s.e2e_ms + r.client_wait_ms;
      r.tokens = s.tokens;
      r.gaps_ms = std::move(s.gaps_ms);
      r.error = std::move(s.error);
      {
        std::lock_guard<std::mutex> lock(mutex);
        (r.ok ? finished : failed)++;
        out.outcomes.push_back(std::move(r));
        --open;
      }
      slot_free.notify_one();
    });
  }
  while (open.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (clock_type::now() - last_progress > std::chrono::seconds(1)) {
      last_progress = clock_type::now();
      progress(false);
    }
  }
  for (auto& t : threads) t.join();
  out.wall_s = s_since(t0);
  out.window_s = std::max(last_at, 1e-9);
  progress(true);
  return out;
}

json summarize(const replay_result& r, const slo& s) {
  std::map<std::string, std::vector<const request_outcome*>> groups;
  for (const auto& o : r.outcomes) {
    groups["all"].push_back(&o);
    groups[o.cls].push_back(&o);
  }
  if (groups.empty()) groups["all"];
  json out = json::object();
  for (const auto& [name, list] : groups) {
    std::vector<double> ttft, tpot, itl, e2e, wait;
    std::map<std::string, int> errors;
    uint64_t tokens = 0, good = 0, abandoned = 0;
    for (const request_outcome* o : list) {
      wait.push_back(o->client_wait_ms);
      if (!o->ok) {
        if (o->abandoned) ++abandoned;
        else errors[o->status ? std::to_string(o->status) : "no response"]++;
        continue;
      }
      ttft.push_back(o->ttft_ms);
      e2e.push_back(o->e2e_ms);
      tokens += o->tokens;
      itl.insert(itl.end(), o->gaps_ms.begin(), o->gaps_ms.end());
      if (o->tokens > 1) tpot.push_back(o->tpot_ms());
      if (o->ttft_ms <= s.ttft_ms && o->tpot_ms() <= s.tpot_ms) ++good;
    }
    out[name] = {{"requests", list.size()},
                 {"completed", ttft.size()},
                 {"abandoned", abandoned},
                 {"errors", errors},
                 {"qps", static_cast<double>(ttft.size()) / std::max(r.wall_s, 1e-9)},
                 {"output_tok_s", static_cast<double>(tokens) / std::max(r.wall_s, 1e-9)},
                 {"good", good},
                 {"goodput", static_cast<double>(good) / r.window_s},
                 {"slo_attainment", list.empty() ? 0.0 : static_cast<double>(good) / static_cast<double>(list.size())},
                 {"ttft_ms", percentiles(ttft)},
                 {"tpot_ms", percentiles(tpot)},
                 {"itl_ms", percentiles(itl)},
                 {"e2e_ms", percentiles(e2e)},
                 {"client_wait_ms", percentiles(wait)}};
  }
  return out;
}

}  // namespace fw::cli

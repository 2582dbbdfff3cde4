#include "tools/console/console_session.hpp"

#include "tools/console/words.hpp"

#include "tools/console/format_line.hpp"
#include "tools/console/health_report.hpp"
#include "runtime/supervise/telemetry_trace.hpp"
#include "runtime/text/chat_encoding.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <cstdlib>


namespace fw::console {
namespace {

using namespace std::chrono_literals;

/// The "section.key" a bare key names when exactly one key has that name; else key as given.
std::string qualify(std::string_view key) {
  if (key.find('.') != std::string_view::npos) return std::string(key);
  std::string found;
  for (const auto& k : config::keys()) {
    if (k.size() > key.size() && k.ends_with(key) && k[k.size() - key.size() - 1] == '.') {
      if (!found.empty()) return std::string(key);
      found = k;
    }
  }
  return found.empty() ? std::string(key) : found;
}

/// Stream events handed from the engine's threads to the console's thread.
struct event_queue {
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<actors::stream_event> events;  // GUARDED_BY(mutex)
};


}  // namespace

console_session::console_session(actors::engine& engine, config& cfg, std::ostream& out, std::ostream& err,
                                 console_options options)
    : engine_(engine), cfg_(cfg), out_(out), err_(err), options_(std::move(options)) {}

console_session::outcome console_session::execute(std::string_view line) {
  line = trim(line);
  if (line.empty()) return outcome::ok;
  if (line.front() == ':') {
    auto [name, args] = split_word(line);
    return run_command(name, args);
  }
  return chat_turn(line);
}

console_session::outcome console_session::fail(const std::string& message) {
  ++failed_;
  out_.flush();
  err_ << "error: " << message << "\n";
  err_.flush();
  return outcome::failed;
}

console_session::outcome console_session::run_command(std::string_view name, std::string_view args) {
  const console_command* c = find_command(name);
  if (!c) {
    std::string msg = "unknown command '" + std::string(name) + "'";
    if (auto near = nearest_command(name); !near.empty()) msg += " (did you mean '" + std::string(near) + "'?)";
    return fail(msg + "; :help lists the commands");
  }
  if (c->args.empty() && !args.empty()) return fail(std::string(c->name) + " takes no arguments");
  if (!c->args.empty() && !c->optional_args && args.empty())
    return fail("usage: " + std::string(c->name) + " " + std::string(c->args));

  switch (c->id) {
    case command_id::help: out_ << help_text(); break;
    case command_id::reset:
      conversation_.clear();
      out_ << "conversation cleared\n";
      break;
    case command_id::gen: return cmd_gen(args);
    case command_id::set: return cmd_set(args);
    case command_id::get: return cmd_get(args);
    case command_id::format: return cmd_format(args);
    case command_id::stats: return cmd_stats();
    case command_id::metrics: out_ << engine_.render_metrics(); break;
    case command_id::kernels: return cmd_kernels();
    case command_id::config: {
      std::string text = cfg_.describe();
      if (!text.ends_with('\n')) text += '\n';
      out_ << text;
      break;
    }
    case command_id::devices: return cmd_devices();
    case command_id::health: return cmd_health();
    case command_id::drill: return cmd_drill(args);
    case command_id::rollout: {
      auto st = engine_.stats();
      if (!st) return fail(st.err().message);
      out_ << format_rollout(*st);
      break;
    }
    case command_id::plugins:
    case command_id::load:
    case command_id::unload:
    case command_id::reload: return cmd_plugins(c->id, args);
    case command_id::quit: return outcome::quit;
  }
  out_.flush();
  return outcome::ok;
}

// -- generation --

console_session::outcome console_session::chat_turn(std::string_view text) {
  const auto& tmpl = engine_.get_model().chat();
  if (!tmpl) return fail("the model has no usable chat template (" + tmpl.err().message + "); use :gen TEXT");
  conversation_.push_back({"user", std::string(text)});
  // Message text never becomes control tokens: "<|im_end|>" typed by the user stays text.
  auto r = generate(encode_chat(engine_.get_model().vocab(), *tmpl, conversation_, true));
  if (!r.ok && !r.cancelled) {
    conversation_.pop_back();
    return fail(r.error);
  }
  // A cancelled answer stays as far as it was shown, so the conversation matches the screen.
  conversation_.push_back({"assistant", std::move(r.text)});
  return outcome::ok;
}

console_session::outcome console_session::cmd_gen(std::string_view text) {
  // A raw prompt: the user writes the whole text, control tokens included (as llama.cpp's
  // completion does).
  auto r = generate(engine_.get_model().vocab().encode(text, true, true));
  if (!r.ok && !r.cancelled) return fail(r.error);
  return outcome::ok;
}

console_session::stream_result console_session::generate(std::vector<int32_t> prompt) {
  stream_result r;
  sampling_params params = sampling_params::from_section(cfg_.sampling);
  format_.apply(params);
  if (auto ok = params.validate(); !ok) {
    r.error = ok.err().message;
    return r;
  }
  auto queue = std::make_shared<event_queue>();
  const uint64_t id = engine_.submit(std::move(prompt), params, [queue](const actors::stream_event& e) {
    {
      std::lock_guard<std::mutex> lock(queue->mutex);
      queue->events.push_back(e);
    }
    queue->ready.notify_one();
  });

  actors::stream_event final;
  bool finished = false;
  while (!finished) {
    std::deque<actors::stream_event> batch;
    {
      std::unique_lock<std::mutex> lock(queue->mutex);
      queue->ready.wait_for(lock, 20ms, [&] { return !queue->events.empty(); });
      batch.swap(queue->events);
    }
    if (!r.cancelled && options_.interrupted && options_.interrupted()) {
      engine_.cancel(id);
      r.cancelled = true;
    }
    for (auto& e : batch) {
      if (e.kind == static_cast<uint8_t>(actors::stream_kind::token)) {
        out_ << e.text;
        r.text += e.text;
      } else {
        final = std::move(e);
        finished = true;
        break;
      }
    }
    out_.flush();
  }
  out_ << "\n";
  out_.flush();

  r.ok = final.kind == static_cast<uint8_t>(actors::stream_kind::done);
  if (!r.ok && !r.cancelled) r.error = "generation failed: " + final.finish_reason + ": " + final.error;
  if (r.ok) r.cancelled = false;  // the answer finished before the cancel arrived

  turn_record t;
  t.prompt_tokens = final.prompt_tokens;
  t.generated_tokens = final.completion_tokens;
  t.ttft_ms = final.ttft_ms;
  t.tpot_ms = final.tpot_ms;
  t.total_ms = final.total_ms;
  t.finish = final.finish_reason;
  t.cancelled = r.cancelled;
  t.failed = !r.ok && !r.cancelled;
  stats_.record(t);

  if (r.cancelled) err_ << "[generation stopped: " << t.generated_tokens << " tokens]\n";
  else if (r.ok && options_.interactive) err_ << stats_.summary_line() << "\n";
  err_.flush();
  return r;
}

// -- settings --

console_session::outcome console_session::cmd_format(std::string_view args) {
  if (!args.empty()) {
    auto f = output_format::parse(args);
    if (!f) return fail(f.err().message);
    format_ = std::move(*f);
  }
  out_ << "answers: " << format_.description << "\n";
  return outcome::ok;
}

console_session::outcome console_session::cmd_set(std::string_view args) {
  auto [key, value] = split_word(args);
  if (value.empty()) return fail("usage: :set KEY VALUE (e.g. :set temperature 0)");
  std::string qualified;
  if (!is_settable(key, &qualified)) {
    if (cfg_.get(key)) {
      return fail(qualify(key) + " cannot be changed while the console runs (:set takes sampling.* and "
                  "speculative.* keys)");
    }
    auto probe = cfg_;  // for the unknown-key message and its suggestion
    auto ok = probe.set(key, value);
    return fail(ok ? "unknown setting '" + std::string(key) + "'" : ok.err().message);
  }
  if (auto ok = cfg_.set(qualified, value); !ok) return fail(ok.err().message);
  out_ << qualified << " = " << *cfg_.get(qualified) << "\n";
  if (qualified.starts_with("speculative."))
    out_ << "note: the runtime's draft is chosen at start (--draft, [speculative]); this value applies when the "
            "console starts again\n";
  out_.flush();
  return outcome::ok;
}

console_session::outcome console_session::cmd_get(std::string_view args) {
  if (args.empty()) {
    for (const auto& k : settable_keys()) out_ << k << " = " << *cfg_.get(k) << "\n";
    out_.flush();
    return outcome::ok;
  }
  if (args.find_first_of(" \t") != std::string_view::npos) return fail("usage: :get [KEY]");
  auto v = cfg_.get(args);
  if (!v) return fail(v.err().message);
  out_ << qualify(args) << " = " << *v << "\n";
  out_.flush();
  return outcome::ok;
}

// -- reports --

console_session::outcome console_session::cmd_stats() {
  out_ << stats_.last_line() << "\n" << stats_.totals_line() << "\n";
  auto s = engine_.stats();
  if (!s) return fail("runtime statistics: " + s.err().what());
  const double kv_pct = s->kv_total_blocks ? 100.0 * s->kv_used_blocks / s->kv_total_blocks : 0.0;
  out_ << format_line("runtime: %llu waiting, %llu prefilling, %llu decoding, KV cache %llu/%llu blocks (%.1f%%), "
                      "%llu completed, %llu failed, %llu worker restarts\n",
                      static_cast<unsigned long long>(s->waiting), static_cast<unsigned long long>(s->prefilling),
                      static_cast<unsigned long long>(s->decoding), static_cast<unsigned long long>(s->kv_used_blocks),
                      static_cast<unsigned long long>(s->kv_total_blocks), kv_pct,
                      static_cast<unsigned long long>(s->completed), static_cast<unsigned long long>(s->failed),
                      static_cast<unsigned long long>(s->worker_restarts));
  if (s->prefix_cache_queries > 0 || s->prefix_cache_blocks > 0)
    out_ << format_line("prefix cache: %llu/%llu lookups hit, %llu of %llu prompt tokens reused (miss rate %.1f%%), "
                        "%llu blocks held\n",
                        static_cast<unsigned long long>(s->prefix_cache_hits),
                        static_cast<unsigned long long>(s->prefix_cache_queries),
                        static_cast<unsigned long long>(s->prefix_cache_hit_tokens),
                        static_cast<unsigned long long>(s->prefix_cache_query_tokens),
                        s->prefix_cache_query_tokens
                            ? 100.0 * (1.0 - double(s->prefix_cache_hit_tokens) / s->prefix_cache_query_tokens)
                            : 0.0,
                        static_cast<unsigned long long>(s->prefix_cache_blocks));
  if (s->prefill_chunks > 0)
    out_ << format_line("prefill chunks: %llu prompt tokens in %llu forwards (%.1f tokens each)\n",
                        static_cast<unsigned long long>(s->prefill_chunk_rows),
                        static_cast<unsigned long long>(s->prefill_chunks),
                        double(s->prefill_chunk_rows) / double(s->prefill_chunks));
  if (s->prefill_slices > 0)
    out_ << format_line("prefill order: shortest first, %llu slices, %llu of them before an older prompt\n",
                        static_cast<unsigned long long>(s->prefill_slices),
                        static_cast<unsigned long long>(s->prefill_reordered));
  if (s->physical || s->offload_device) out_ << pd_line(*s);
  if (s->predictor_steps > 0)
    out_ << format_line("decode-time model: t = %.3g s x context tokens + %.3g s x layers per sequence (fitted on %llu "
                        "steps); a 1-sequence step of %u tokens: %.2f ms%s\n",
                        s->predictor_a, s->predictor_b, static_cast<unsigned long long>(s->predictor_steps), 512u,
                        1000 * (s->predictor_a * 512 + s->predictor_b * engine_.get_model().config().n_layer),
                        cfg_.scheduler.admission_tpot_ms > 0
                            ? format_line("; admission held %llu times at %.0f ms",
                                          static_cast<unsigned long long>(s->admission_holds),
                                          cfg_.scheduler.admission_tpot_ms)
                                  .c_str()
                            : "");
  if (options_.draft_name.empty()) {
    std::string kinds;
    for (const auto& [kind, name] : draft_kind_names)
      if (kind != draft_kind::none && kind != draft_kind::plugin) kinds += (kinds.empty() ? "" : "|") + std::string(name);
    out_ << "speculation: off (start with --draft " << kinds << " or [speculative] draft)\n";
  } else {
    auto& reg = engine_.metrics();
    const auto& labels = engine_.metric_labels();
    const double steps = reg.counter(series::spec_decode_num_drafts, labels).value();
    const double drafted = reg.counter(series::spec_decode_num_draft_tokens, labels).value();
    const double accepted = reg.counter(series::spec_decode_num_accepted_tokens, labels).value();
    out_ << format_line("speculation: draft %s, %.0f drafted, %.0f accepted (acceptance %.1f%%), %.2f tokens per step\n",
                        options_.draft_name.c_str(), drafted, accepted, drafted > 0 ? 100.0 * accepted / drafted : 0.0,
                        steps > 0 ? (accepted + steps) / steps : 0.0);
    // The draft actor's time: what the target waited for, and what it drafted ahead while the
    // target verified ([speculative] draft_threads > 0), of which the used part was hidden.
    const double waited = reg.counter(series::spec_decode_draft_seconds, labels).value();
    const double ahead = reg.counter(series::spec_decode_draft_ahead_seconds, labels).value();
    const double hidden = reg.counter(series::spec_decode_draft_hidden_seconds, labels).value();
    const double hits = reg.counter(series::spec_decode_draft_ahead_hits, labels).value();
    out_ << format_line("draft actor: %.0f ms drafting waited for; %.0f ms drafted ahead, %.0f ms "
                        "of it used (%.0f proposals ready when asked)\n",
                        waited * 1000, ahead * 1000, hidden * 1000, hits);
  }
  out_.flush();
  return outcome::ok;
}

console_session::outcome console_session::cmd_plugins(command_id id, std::string_view args) {
  plugin_host* host = options_.plugins;
  if (!host) return fail("plugins: this console has no plugin host");
  const std::string arg(args);
  if (id == command_id::plugins) {
    const auto list = host->list();
    if (list.empty()) out_ << "no plugins loaded ([[plugins.load]] in the config, or :load PATH)\n";
    for (const auto& p : list) out_ << p.to_line() << "\n";
    out_.flush();
    return outcome::ok;
  }
  if (arg.empty() || arg.find_first_of(" \t") != std::string::npos)
    return fail(std::string("usage: ") + (id == command_id::load ? ":load NAME|PATH" : id == command_id::unload ? ":unload NAME" : ":reload NAME"));
  if (id == command_id::load) {
    // A name from [[plugins.load]], or a path typed by the operator at this console.
    const bool configured = std::any_of(cfg_.plugins.load.begin(), cfg_.plugins.load.end(),
                                        [&](const plugin_load& p) { return p.name == arg; });
    expected<plugin_info> r = make_error(errc::internal, "");
    if (configured) {
      r = host->load_configured(cfg_.plugins, arg);
    } else {
      std::string stem = arg.substr(arg.find_last_of('/') + 1);
      if (stem.rfind("lib", 0) == 0) stem = stem.substr(3);
      if (auto dot = stem.find('.'); dot != std::string::npos) stem = stem.substr(0, dot);
      r = host->load(stem, arg);
    }
    if (!r) return fail("plugins: " + r.err().message);
    out_ << "loaded " << r->to_line() << "\n";
  } else if (id == command_id::unload) {
    if (auto r = host->unload(arg); !r) return fail("plugins: " + r.err().message);
    out_ << "unloaded " << arg << " (its library closes when the last request using it ends)\n";
  } else {
    auto r = host->reload(arg);
    if (!r) return fail("plugins: " + r.err().message);
    out_ << "reloaded " << r->to_line() << " (requests in flight finish on the old version)\n";
  }
  out_.flush();
  return outcome::ok;
}

console_session::outcome console_session::cmd_kernels() {
  auto& dev = engine_.device();
  out_ << "kernel paths on the " << dev.name() << " backend:\n";
  for (const auto& k : dev.kernel_paths()) {
    out_ << format_line("  %-5s -> %s", k.weight_type.c_str(), k.path.c_str());
    if (k.fallback) out_ << "  WARNING: " << k.note;
    out_ << "\n";
  }
  out_.flush();
  return outcome::ok;
}

console_session::outcome console_session::cmd_health() {
  auto h = engine_.health();
  if (!h) return fail(h.err().message);
  out_ << format_health(*h);
  out_.flush();
  return outcome::ok;
}

console_session::outcome console_session::cmd_drill(std::string_view args) {
  // FILE [SPEED]: the trace plays at SPEED times its own pace; the console waits for its end.
  std::string file(args), speed_text;
  if (auto sp = args.find_last_of(' '); sp != std::string_view::npos) {
    speed_text = std::string(args.substr(sp + 1));
    char* end = nullptr;
    const double v = std::strtod(speed_text.c_str(), &end);
    if (end && *end == '\0' && v > 0) file = std::string(args.substr(0, sp));
    else speed_text.clear();
  }
  if (file.empty()) return fail("usage: :drill FILE [SPEED] (a CSV of time_s,device,metric,value lines)");
  const double speed = speed_text.empty() ? 1.0 : std::strtod(speed_text.c_str(), nullptr);
  auto trace = read_telemetry_trace(file);
  if (!trace) return fail(trace.err().message);
  const double span = trace->back().t_s - trace->front().t_s;
  const size_t n = trace->size();
  if (auto ok = engine_.drill(std::move(*trace), speed); !ok) return fail(ok.err().message);
  out_ << format_line("drill: %zu samples over %.1f s, played at %gx (%.1f s)\n", n, span, speed, span / speed);
  out_.flush();
  std::this_thread::sleep_for(std::chrono::duration<double>(span / speed + 0.1));
  return cmd_health();
}

console_session::outcome console_session::cmd_devices() {
  out_ << "configured devices ([[devices]] of " << (cfg_.source_path.empty() ? "the built-in defaults" : cfg_.source_path)
       << "):\n";
  for (const auto& d : cfg_.devices) {
    out_ << format_line("  %s:%u  role %s", std::string(enum_name(device_kind_names, d.kind)).c_str(), d.id,
                        std::string(enum_name(device_role_names, d.role)).c_str());
    if (d.kind == device_kind::cpu) out_ << ", threads " << (d.threads ? std::to_string(d.threads) : "from compute.threads");
    if (!d.cores.empty()) {
      out_ << ", cores";
      for (int c : d.cores) out_ << " " << c;
    }
    out_ << ", KV pool " << (d.kv_pool_mib ? std::to_string(d.kv_pool_mib) + " MiB" : "as [kv_cache]");
    if (d.bandwidth_gbs > 0) out_ << format_line(", %.0f GB/s", d.bandwidth_gbs);
    out_ << "\n";
  }
  auto& dev = engine_.device();
  auto& pre = engine_.prefill_device();
  auto pool_line = [&](backend& b) {
    auto& pool = b.kv_pool();
    return format_line(", KV pool %u blocks of %u tokens (%u in use)", pool.total_blocks(), pool.layout().block_tokens,
                       pool.used_blocks());
  };
  if (&dev == &pre) {
    out_ << "in use: " << dev.summary() << pool_line(dev) << "; prefill and decode share this one device ("
         << (cfg_.scheduler.decode_priority ? "decode first: logical separation, prefill in chunks of " +
                                                   std::to_string(cfg_.scheduler.prefill_chunk) + " tokens"
                                             : "first come, first served: co-located")
         << ")\n";
    for (const auto& d : cfg_.devices)
      if (d.role == device_role::prefill)
        out_ << "the prefill device cpu:" << d.id
             << " is configured but not used: the start-time consistency check refused the pair (its warning says why)\n";
  } else {
    out_ << "prefill: " << pre.summary() << pool_line(pre) << "\n";
    out_ << "decode:  " << dev.summary() << pool_line(dev) << "\n";
  }
  if (backend* off = engine_.offload_device())
    out_ << "offload: " << off->summary() << pool_line(*off) << "; sequences past "
         << cfg_.scheduler.offload_after_tokens << " generated tokens finish here"
         << (cfg_.scheduler.offload_tpot_ms > 0
                 ? format_line(" (also while the predicted decode step exceeds %g ms)", cfg_.scheduler.offload_tpot_ms)
                 : std::string())
         << "\n";
  if (&dev != &pre || engine_.offload_device())
    if (auto s = engine_.stats()) out_ << pd_line(*s);
  const auto peers = engine_.peers();
  if (!peers.empty()) out_ << format_peers(peers, engine_.local_prefills());
  out_.flush();
  return outcome::ok;
}

std::string console_session::pd_line(const actors::scheduler_stats& s) {
  std::string out;
  if (s.offload_device)
    out += format_line("offload: %llu sequences moved mid-generation, %llu decoding there now, %llu moves refused; pool "
                       "%llu/%llu blocks\n",
                       static_cast<unsigned long long>(s.offloaded), static_cast<unsigned long long>(s.offload_active),
                       static_cast<unsigned long long>(s.offload_refused),
                       static_cast<unsigned long long>(s.offload_kv_used_blocks),
                       static_cast<unsigned long long>(s.offload_kv_total_blocks));
  if (!s.physical) return out;
  out += format_line(
      "prefill/decode: %llu requests via the prefill device, %llu co-located; %llu KV transfers, %.1f MB (%.2f of "
      "f32), %.1f ms each; %llu streams refused, %llu deadline failovers; prefill queue %llu (%llu tokens, %.0f "
      "tokens/s)\n",
      static_cast<unsigned long long>(s.routed_physical), static_cast<unsigned long long>(s.routed_co_located),
      static_cast<unsigned long long>(s.kv_transfers), s.kv_transfer_bytes / 1e6,
      s.kv_transfer_f32_bytes ? double(s.kv_transfer_bytes) / s.kv_transfer_f32_bytes : 0.0,
      s.kv_transfers ? 1000.0 * s.kv_transfer_seconds / s.kv_transfers : 0.0,
      static_cast<unsigned long long>(s.kv_transfer_refused), static_cast<unsigned long long>(s.prefill_failovers),
      static_cast<unsigned long long>(s.prefill_queue), static_cast<unsigned long long>(s.prefill_queue_tokens),
      s.prefill_tokens_per_s);
  if (!s.last_route_reason.empty()) out += "  last co-located route: " + s.last_route_reason + "\n";
  return out;
}

}  // namespace fw::console

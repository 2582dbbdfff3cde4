#include "tools/console/console_commands.hpp"

#include "runtime/base/edit_distance.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "runtime/config/config.hpp"

namespace fw::console {
namespace {


std::string_view bare_of(std::string_view key) {
  const size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? key : key.substr(dot + 1);
}

/// Bare name -> qualified key, for bare names that name exactly one key.
const std::map<std::string, std::string, std::less<>>& unique_bare_keys() {
  static const auto table = [] {
    std::map<std::string, std::string, std::less<>> out;
    std::map<std::string, int> count;
    const auto keys = config::keys();
    for (const auto& k : keys) ++count[std::string(bare_of(k))];
    for (const auto& k : keys)
      if (count[std::string(bare_of(k))] == 1) out.emplace(std::string(bare_of(k)), k);
    return out;
  }();
  return table;
}

}  // namespace

const std::vector<console_command>& commands() {
  static const std::vector<console_command> table = {
      {command_id::help, ":help", "", "list the commands"},
      {command_id::reset, ":reset", "", "forget the conversation and start a new one"},
      {command_id::gen, ":gen", "TEXT", "raw completion of TEXT (no chat template, not added to the conversation)"},
      {command_id::set, ":set", "KEY VALUE", "change a sampling or speculative setting, e.g. :set temperature 0"},
      {command_id::get, ":get", "[KEY]", "show a config value, or every sampling and speculative setting", true},
      {command_id::format, ":format", "[off|json|schema S|grammar G|regex R|choice A|B]",
       "shape the answers: a JSON object, JSON of a schema, a GBNF grammar's sentence, a regex match or one of the "
       "choices (S, G: text or @FILE); alone: show it",
       true},
      {command_id::stats, ":stats", "", "last turn's tokens, TTFT, TPOT and tokens/s; totals; runtime queues"},
      {command_id::metrics, ":metrics", "", "the runtime's metrics in Prometheus text format"},
      {command_id::kernels, ":kernels", "", "the kernel path of each weight type, with fallback warnings"},
      {command_id::config, ":config", "", "the effective configuration as TOML (with :set changes)"},
      {command_id::devices, ":devices", "", "the configured devices and the backend in use"},
      {command_id::health, ":health", "", "workers (crashes, restarts), degradation state and transitions, telemetry"},
      {command_id::drill, ":drill", "FILE [SPEED]", "replay a telemetry trace (CSV time_s,device,metric,value) into the supervisor"},
      {command_id::rollout, ":rollout", "", "the staged rollout: stage, share, each stage's P99 and errors, breaker decisions"},
      {command_id::plugins, ":plugins", "", "list loaded plugins"},
      {command_id::load, ":load", "PATH", "load a plugin shared library"},
      {command_id::unload, ":unload", "NAME", "unload a plugin"},
      {command_id::reload, ":reload", "NAME", "reload a plugin from its file"},
      {command_id::quit, ":quit", "", "leave the console (also Ctrl-D)"},
  };
  return table;
}

const console_command* find_command(std::string_view name) {
  if (name == ":q" || name == ":exit") name = ":quit";
  for (const auto& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

std::string_view nearest_command(std::string_view name) {
  std::string_view best;
  size_t best_d = 3;  // at most two edits away
  for (const auto& c : commands()) {
    const size_t d = edit_distance(name, c.name);
    if (d < best_d) {
      best_d = d;
      best = c.name;
    }
  }
  return best;
}

std::string help_text() {
  std::string out = "Type a message to chat (the conversation is kept until :reset). Commands:\n";
  for (const auto& c : commands()) {
    std::string head = std::string(c.name);
    if (!c.args.empty()) head += " " + std::string(c.args);
    head.resize(std::max<size_t>(head.size() + 2, 18), ' ');
    out += "  " + head + std::string(c.help) + "\n";
  }
  out += "Keys: Ctrl-C stops a generation (at the prompt it clears the line), Ctrl-D quits, Tab completes,\n"
         "Up/Down browse the history.\n";
  return out;
}

const std::vector<std::string>& settable_keys() {
  static const auto keys = [] {
    std::vector<std::string> out;
    for (auto& k : config::keys())
      if (k.starts_with("sampling.") || k.starts_with("speculative.")) out.push_back(k);
    return out;
  }();
  return keys;
}

bool is_settable(std::string_view key, std::string* qualified) {
  std::string q(key);
  if (key.find('.') == std::string_view::npos) {
    const auto& bare = unique_bare_keys();
    auto it = bare.find(key);
    if (it == bare.end()) return false;
    q = it->second;
  }
  const auto& keys = settable_keys();
  if (std::find(keys.begin(), keys.end(), q) == keys.end()) return false;
  if (qualified) *qualified = q;
  return true;
}

completion complete_line(std::string_view before) {
  completion out;
  const size_t first_space = before.find(' ');
  std::set<std::string> found;
  if (first_space == std::string_view::npos) {
    // The command word.
    if (!before.starts_with(':') && !before.empty()) return out;
    for (const auto& c : commands())
      if (c.name.starts_with(before)) found.emplace(c.name);
  } else {
    const std::string_view cmd = before.substr(0, first_space);
    std::string_view rest = before.substr(first_space);
    const size_t start = rest.find_first_not_of(' ');
    const size_t word_start = start == std::string_view::npos ? before.size() : first_space + start;
    const std::string_view word = before.substr(word_start);
    if (word.find(' ') != std::string_view::npos) return out;  // past the key
    const auto* c = find_command(cmd);
    if (!c || (c->id != command_id::set && c->id != command_id::get)) return out;
    out.word_start = word_start;
    std::vector<std::string> keys = c->id == command_id::set ? settable_keys() : config::keys();
    for (const auto& k : keys) {
      if (k.starts_with(word)) found.insert(k);
      const std::string_view b = bare_of(k);
      if (b.starts_with(word) && unique_bare_keys().count(b)) found.emplace(b);
    }
  }
  out.candidates.assign(found.begin(), found.end());
  return out;
}

}  // namespace fw::console

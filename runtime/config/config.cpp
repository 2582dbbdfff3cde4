#include "runtime/config/config.hpp"
#include "runtime/config/node_address.hpp"

#include <algorithm>
#include <optional>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include <toml++/toml.h>

#include "runtime/config/config_schema.hpp"

namespace fw {

using namespace config_schema;

namespace {

/// The problems found in one file, reported in file order as "name:line:col: text".
class error_list {
 public:
  explicit error_list(std::string_view name) : name_(name) {}

  void add(const toml::source_region& where, std::string text) {
    items_.push_back({where.begin.line, where.begin.column, std::move(text)});
  }
  /// A problem with no better place than the whole file.
  void add_file(std::string text) { items_.push_back({0, 0, std::move(text)}); }
  [[nodiscard]] bool empty() const { return items_.empty(); }

  [[nodiscard]] error to_error() const {
    auto sorted = items_;
    std::stable_sort(sorted.begin(), sorted.end(), [](const item& a, const item& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    std::string msg;
    for (const auto& it : sorted) {
      if (!msg.empty()) msg += '\n';
      msg += name_;
      if (it.line > 0) msg += ":" + std::to_string(it.line) + ":" + std::to_string(it.column);
      msg += ": " + it.text;
    }
    return make_error(errc::invalid_argument, msg);
  }

 private:
  struct item {
    uint32_t line;
    uint32_t column;
    std::string text;
  };
  std::string name_;
  std::vector<item> items_;
};

std::vector<std::string_view> section_names() {
  std::vector<std::string_view> names;
  for (const auto& s : sections()) names.push_back(s.name);
  names.push_back("devices");
  return names;
}

/// Parses every key of one table into obj using fields; where names the table in messages
/// ("[[devices]]") and prefix qualifies its keys ("devices[1]").
template <class T>
void parse_entry(const toml::table& t, T& obj, const std::vector<field<T>>& fields,
                 const std::string& where, const std::string& prefix, error_list& errs) {
  std::vector<std::string_view> allowed;
  for (const auto& f : fields) allowed.push_back(f.key);
  for (auto&& [k, v] : t) {
    const std::string_view key = k.str();  // (a lambda may not capture a structured binding before clang 16)
    const auto it = std::find_if(fields.begin(), fields.end(), [&](const field<T>& f) { return f.key == key; });
    if (it == fields.end()) {
      errs.add(k.source(), "unknown key '" + std::string(k.str()) + "' in " + where +
                               suggestion(k.str(), allowed) + "; allowed: " + join(allowed));
      continue;
    }
    if (auto e = it->assign(obj, v, prefix + "." + std::string(k.str()))) errs.add(v.source(), *e);
  }
}

/// An array of tables ([[name]] entries) into out; wrong shapes are reported.
template <class T>
void parse_array(const toml::node& n, const std::string& name, std::vector<T>& out,
                 const std::vector<field<T>>& fields, error_list& errs) {
  const auto* arr = n.as_array();
  if (!arr || (!arr->empty() && !arr->is_array_of_tables())) {
    errs.add(n.source(), name + ": expected an array of tables ([[" + name + "]] entries), got " +
                             type_name(n));
    return;
  }
  out.clear();
  for (size_t i = 0; i < arr->size(); ++i) {
    T obj;
    parse_entry(*arr->get(i)->as_table(), obj, fields, "[[" + name + "]]",
                name + "[" + std::to_string(i) + "]", errs);
    out.push_back(std::move(obj));
  }
}

/// The multi-key rules, as (where, message); where is the TOML path of the table at fault
/// ("speculative", "devices[1]") for the error's location.
std::vector<std::pair<std::string, std::string>> check_rules(const config& c) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](std::string where, std::string msg) { out.emplace_back(std::move(where), std::move(msg)); };

  const auto& kv = c.kv_cache;
  if (kv.pool_tokens == 0 && kv.pool_mib == 0)
    add("kv_cache", "kv_cache: one of pool_tokens and pool_mib must be greater than 0");
  if (kv.pool_tokens > 0 && kv.pool_mib > 0)
    add("kv_cache", "kv_cache: set either pool_tokens or pool_mib, not both");
  if (kv.pool_tokens > 0 && kv.pool_tokens < kv.block_tokens)
    add("kv_cache", "kv_cache.pool_tokens = " + std::to_string(kv.pool_tokens) +
                        " is smaller than one block (block_tokens = " +
                        std::to_string(kv.block_tokens) + ")");

  const auto& sv = c.supervisor;
  if (sv.restart_backoff_max_ms < sv.restart_backoff_ms)
    add("supervisor", "supervisor.restart_backoff_max_ms = " + std::to_string(sv.restart_backoff_max_ms) +
                          " is below restart_backoff_ms = " + std::to_string(sv.restart_backoff_ms));
  if (sv.temp_co_located_c < sv.temp_degraded_c)
    add("supervisor", "supervisor.temp_co_located_c must be at least temp_degraded_c (the hotter threshold is the worse state)");

  const auto& ro = c.rollout;
  if (ro.shares_pct.size() != 3) {
    add("rollout", "rollout.shares_pct needs 3 values (percent of traffic on stage 2, 3 and 4 while each rolls out; "
                   "stage 1, quantization, is the model file and serves every request), got " +
                       std::to_string(ro.shares_pct.size()));
  } else {
    for (size_t i = 1; i < 3; ++i)
      if (ro.shares_pct[i] < ro.shares_pct[i - 1])
        add("rollout", "rollout.shares_pct must not decrease from one stage to the next");
    if (ro.shares_pct[2] != 100)
      add("rollout", "rollout.shares_pct: stage 4 is the whole rollout, its share must be 100");
  }

  const auto& nd = c.node;
  if (!nd.listen.empty())
    if (auto a = parse_node_address(nd.listen, true); !a) add("node", "node.listen: " + a.err().message);
  for (const auto& p : nd.peers)
    if (auto a = parse_node_address(p); !a) add("node", "node.peers: " + a.err().message);
  if (nd.role == node_role::prefill && nd.listen.empty())
    add("node", "node.role = \"prefill\" needs node.listen (the HOST:PORT decode nodes connect to)");
  if (nd.role == node_role::prefill && !nd.peers.empty())
    add("node", "node.peers: a prefill node sends prompts nowhere; peers are for role \"decode\"");
  if (c.server.tls_cert.empty() != c.server.tls_key.empty())
    add("server", "server.tls_cert and server.tls_key go together (a PEM certificate chain and its private key)");
  if (nd.role == node_role::decode && nd.peers.empty())
    add("node", "node.role = \"decode\" needs node.peers (the prefill nodes, HOST:PORT each)");
  if (nd.role == node_role::both && (!nd.peers.empty() || !nd.listen.empty()))
    add("node", "node.role = \"both\" serves alone: set role = \"decode\" to use node.peers, \"prefill\" to use node.listen");
  if (nd.role == node_role::decode && !nd.listen.empty())
    add("node", "node.listen: a decode node publishes no prefill service; listen is for role \"prefill\"");
  if (const int n = !nd.tls_cert.empty() + !nd.tls_key.empty() + !nd.tls_ca.empty(); n != 0 && n != 3)
    add("node", "node.tls_cert, node.tls_key and node.tls_ca go together (this node's PEM certificate chain, its "
                "private key, and the CA certificates a peer's certificate must be signed by)");
  if (nd.reconnect_max_ms < nd.reconnect_ms)
    add("node", "node.reconnect_max_ms = " + std::to_string(nd.reconnect_max_ms) + " is below reconnect_ms = " +
                    std::to_string(nd.reconnect_ms));

  if (c.speculative.draft == draft_kind::model && c.speculative.draft_model.empty())
    add("speculative", "speculative.draft = \"model\" needs speculative.draft_model (a GGUF file)");
  // Plugin names a section uses must be [[plugins.load]] entries.
  auto loaded_by_name = [&](const char* section, const char* key, const std::vector<std::string>& names) {
    for (const auto& k : names) {
      const bool listed = std::any_of(c.plugins.load.begin(), c.plugins.load.end(),
                                      [&](const plugin_load& p) { return p.name == k; });
      if (!listed)
        add(section, std::string(section) + "." + key + " names '" + k + "', which no [[plugins.load]] entry loads");
    }
  };
  loaded_by_name("compute", "kernel_plugins", c.compute.kernel_plugins);
  loaded_by_name("supervisor", "telemetry_plugins", c.supervisor.telemetry_plugins);
  if (c.speculative.draft == draft_kind::plugin) {
    const std::string& name = c.speculative.draft_plugin;
    const bool listed = std::any_of(c.plugins.load.begin(), c.plugins.load.end(),
                                    [&](const plugin_load& p) { return p.name == name; });
    if (!listed)
      add("speculative", "speculative.draft = \"" + c.speculative.draft_name() + "\" names no [[plugins.load]] entry '" +
                             name + "'");
  }

  std::set<std::string> names;
  for (size_t i = 0; i < c.plugins.load.size(); ++i) {
    const auto& p = c.plugins.load[i];
    if (p.name.empty()) {
      add("plugins.load[" + std::to_string(i) + "]", "plugins.load[" + std::to_string(i) + "] needs a name");
    } else if (!names.insert(p.name).second) {
      add("plugins.load[" + std::to_string(i) + "]", "plugins.load[" + std::to_string(i) + "]: the name " + quote(p.name) +
                         " is used twice");
    }
  }

  if (c.devices.empty()) {
    add("devices", "devices: at least one [[devices]] entry is needed");
  } else {
    std::set<std::pair<device_kind, uint32_t>> seen;
    bool prefill = false, decode = false;
    for (size_t i = 0; i < c.devices.size(); ++i) {
      const auto& d = c.devices[i];
      if (!seen.insert({d.kind, d.id}).second)
        add("devices[" + std::to_string(i) + "]", "devices[" + std::to_string(i) + "]: " +
                                                      std::string(enum_name(device_kind_names, d.kind)) + " device " +
                           std::to_string(d.id) + " is listed twice (kind and id must be unique)");
      prefill |= d.role == device_role::prefill || d.role == device_role::both;
      decode |= d.role == device_role::decode || d.role == device_role::both;
      if (d.kind == device_kind::cuda && c.kv_cache.type == kv_cache_type::q8_0)
        add("kv_cache", "kv_cache.type = \"q8_0\" is a CPU cache for now; devices[" + std::to_string(i) +
                            "] is a CUDA device, whose attention reads f16 or f32 KV (set type = \"f16\")");
    }
    if (!prefill) add("devices", "devices: no device can prefill (role \"prefill\" or \"both\")");
    if (!decode) add("devices", "devices: no device can decode (role \"decode\" or \"both\")");
  }
  return out;
}

/// A key of set()/get(), resolved to its section and field.
struct resolved_key {
  const section* sec;
  const field<config>* fld;
  std::string qualified;
};

expected<resolved_key> resolve(std::string_view key) {
  auto bad = [](std::string msg) { return make_error(errc::invalid_argument, std::move(msg)); };
  if (const auto dot = key.find('.'); dot != std::string_view::npos) {
    const auto sec_name = key.substr(0, dot), name = key.substr(dot + 1);
    if (sec_name == "devices" || (sec_name == "plugins" && name.rfind("load", 0) == 0))
      return bad("'" + std::string(key) + "' is part of an array of tables; edit the config file");
    const section* s = find_section(sec_name);
    if (!s)
      return bad("unknown section '" + std::string(sec_name) + "' in key '" + std::string(key) + "'" +
                 suggestion(sec_name, section_names()) + "; allowed: " + join(section_names()));
    const field<config>* f = s->find(name);
    if (!f)
      return bad("unknown key '" + std::string(name) + "' in [" + std::string(s->name) + "]" +
                 suggestion(name, s->allowed()) + "; allowed: " + join(s->allowed()));
    return resolved_key{s, f, std::string(key)};
  }
  std::vector<resolved_key> found;
  std::vector<std::string> all;
  for (const auto& s : sections()) {
    for (const auto& f : s.fields) {
      all.push_back(std::string(s.name) + "." + std::string(f.key));
      if (f.key == key) found.push_back({&s, &f, all.back()});
    }
  }
  if (found.size() == 1) return found.front();
  if (found.size() > 1) {
    std::string msg = "ambiguous key '" + std::string(key) + "'; say ";
    for (size_t i = 0; i < found.size(); ++i)
      msg += (i == 0 ? "" : i + 1 == found.size() ? " or " : ", ") + found[i].qualified;
    return bad(msg);
  }
  std::vector<std::string_view> candidates;
  for (const auto& s : sections())
    for (const auto& f : s.fields) candidates.push_back(f.key);
  return bad("unknown key '" + std::string(key) + "'" + suggestion(key, candidates) +
             " (see :config for every key)");
}

/// Parses "v = text" as TOML; nullopt unless that gives exactly the one key v.
std::optional<toml::table> parse_value(std::string_view text) {
  const std::string doc = "v = " + std::string(text);
  try {
    toml::table t = toml::parse(std::string_view(doc), std::string_view("value"));
    if (t.size() == 1 && t.contains("v")) return t;
  } catch (const toml::parse_error&) {
  }
  return std::nullopt;
}

bool quoted(std::string_view s) {
  return s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front();
}

/// Reads text the way f's kind asks and assigns it to c.
expected<void> assign_text(config& c, const resolved_key& r, std::string_view text) {
  const auto& f = *r.fld;
  auto fail = [&](std::string msg) { return make_error(errc::invalid_argument, std::move(msg)); };
  auto run = [&](const toml::node& n) -> expected<void> {
    if (auto e = f.assign(c, n, r.qualified)) return fail(*e);
    return {};
  };
  switch (f.kind) {
    case value_kind::string:
      if (!quoted(text)) return run(toml::value<std::string>(std::string(text)));
      break;
    case value_kind::string_list:
      if (text.empty()) return run(toml::array{});
      if (text.front() != '[') return run(toml::array{std::string(text)});
      break;
    case value_kind::int_or_string:
      if (auto t = parse_value(text); t && t->get("v")->is_integer()) return run(*t->get("v"));
      return run(toml::value<std::string>(std::string(quoted(text) ? text.substr(1, text.size() - 2) : text)));
    case value_kind::integer:
    case value_kind::number:
    case value_kind::boolean:
    case value_kind::integer_list:
      break;
  }
  auto t = parse_value(text);
  if (!t) {
    const char* want = f.kind == value_kind::integer         ? "an integer"
                       : f.kind == value_kind::number        ? "a number"
                       : f.kind == value_kind::string_list   ? "an array of strings like [\"a\", \"b\"]"
                       : f.kind == value_kind::boolean       ? "true or false"
                       : f.kind == value_kind::integer_list  ? "an array of integers like [0, 1]"
                                                             : "a TOML string";
    return fail(r.qualified + ": expected " + want + ", got '" + std::string(text) + "'");
  }
  return run(*t->get("v"));
}

}  // namespace

// -- parsing --

expected<config> config::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return make_error(errc::io_error, "cannot open config file '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return make_error(errc::io_error, "cannot read config file '" + path + "'");
  return from_string(text.str(), path);
}

expected<config> config::from_string(std::string_view text, std::string_view name) {
  toml::table root;
  try {
    root = toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return make_error(errc::malformed_file, std::string(name) + ":" + std::to_string(b.line) + ":" +
                                                std::to_string(b.column) +
                                                ": TOML syntax error: " + std::string(e.description()));
  }

  config c;
  c.source_path = std::string(name);
  error_list errs(name);
  for (auto&& [k, v] : root) {
    const std::string sec_name(k.str());
    if (sec_name == "devices") {
      parse_array(v, "devices", c.devices, device_fields(), errs);
      continue;
    }
    const section* s = find_section(sec_name);
    if (!s) {
      errs.add(k.source(), "unknown section [" + sec_name + "]" + suggestion(sec_name, section_names()) +
                               "; allowed: " + join(section_names()));
      continue;
    }
    const auto* t = v.as_table();
    if (!t) {
      errs.add(v.source(), "[" + sec_name + "] must be a table, got " + type_name(v));
      continue;
    }
    for (auto&& [fk, fv] : *t) {
      const std::string key(fk.str());
      if (sec_name == "plugins" && key == "load") {
        parse_array(fv, "plugins.load", c.plugins.load, plugin_load_fields(), errs);
        continue;
      }
      const field<config>* f = s->find(key);
      if (!f) {
        errs.add(fk.source(), "unknown key '" + key + "' in [" + sec_name + "]" +
                                  suggestion(key, s->allowed()) + "; allowed: " + join(s->allowed()));
        continue;
      }
      if (auto e = f->assign(c, fv, sec_name + "." + key)) errs.add(fv.source(), *e);
    }
    if (sec_name == "kv_cache") {
      // Integers only (the schema has refused anything else above): toml++'s value<int64_t>() would
      // convert a float such as 1.9e26 with an out-of-range cast (found by tests/fuzz/fuzz_config).
      const auto integer = [&](const char* key) -> std::optional<int64_t> {
        if (const auto* i = (*t)[key].as_integer()) return i->get();
        return std::nullopt;
      };
      const auto tokens = integer("pool_tokens"), mib = integer("pool_mib");
      if (tokens && mib && *tokens > 0 && *mib > 0)
        errs.add((*t)["pool_mib"].node()->source(),
                 "kv_cache: set either pool_tokens or pool_mib, not both");
    }
  }

  if (errs.empty()) {
    for (const auto& [where, msg] : check_rules(c)) {
      if (const toml::node* n = root.at_path(where).node()) {
        errs.add(n->source(), msg);
      } else {
        errs.add_file(msg);
      }
    }
  }
  if (!errs.empty()) return errs.to_error();
  return c;
}

expected<void> config::validate() const {
  std::string msg;
  for (const auto& [sec, m] : check_rules(*this)) msg += (msg.empty() ? "" : "\n") + m;
  if (!msg.empty()) return make_error(errc::invalid_argument, msg);
  return {};
}

// -- overrides --

expected<void> config::set(std::string_view key, std::string_view value) {
  auto r = resolve(key);
  if (!r) return r.err();
  config next = *this;
  if (auto ok = assign_text(next, *r, value); !ok) return ok;
  if (auto ok = next.validate(); !ok) return ok;
  *this = std::move(next);
  return {};
}

expected<void> config::set_all(const std::vector<std::pair<std::string, std::string>>& values) {
  config next = *this;
  for (const auto& [key, value] : values) {
    auto r = resolve(key);
    if (!r) return r.err();
    if (auto ok = assign_text(next, *r, value); !ok) return ok;
  }
  if (auto ok = next.validate(); !ok) return ok;
  *this = std::move(next);
  return {};
}

expected<std::string> config::get(std::string_view key) const {
  auto r = resolve(key);
  if (!r) return r.err();
  return r->fld->print(*this);
}

std::vector<std::string> config::keys() {
  std::vector<std::string> out;
  for (const auto& s : sections())
    for (const auto& f : s.fields) out.push_back(std::string(s.name) + "." + std::string(f.key));
  return out;
}

// -- printing --

std::string config::to_toml() const {
  std::string out;
  auto entry = [&out](const auto& obj, const auto& fields) {
    for (const auto& f : fields) out += std::string(f.key) + " = " + f.print(obj) + "\n";
  };
  for (const auto& s : sections()) {
    if (!out.empty()) out += "\n";
    out += "[" + std::string(s.name) + "]\n";
    entry(*this, s.fields);
    if (s.name == "plugins") {
      for (const auto& p : plugins.load) {
        out += "\n[[plugins.load]]\n";
        entry(p, plugin_load_fields());
      }
    }
  }
  for (const auto& d : devices) {
    out += "\n[[devices]]\n";
    entry(d, device_fields());
  }
  return out;
}

std::string config::describe() const {
  return "# effective configuration (" +
         (source_path.empty() ? std::string("built-in defaults") : "from " + source_path) +
         ", with any overrides)\n" + to_toml();
}

}  // namespace fw

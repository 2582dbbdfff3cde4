#include "tools/bench/workload_file.hpp"

#include <fstream>
#include <random>
#include <sstream>

namespace fw::cli {

namespace {

using json = nlohmann::json;

std::string last_user_text(const json& messages) {
  for (auto it = messages.rbegin(); it != messages.rend(); ++it)
    if ((*it).value("role", "") == "user" && (*it).contains("content") && (*it)["content"].is_string())
      return (*it)["content"].get<std::string>();
  return {};
}

}  // namespace

expected<workload_file> workload_file::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(errc::io_error, "workload " + path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

expected<workload_file> workload_file::parse(const std::string& text, const std::string& name) {
  workload_file w;
  w.path = name;
  std::istringstream in(text);
  std::string line;
  size_t n = 0, with_time = 0;
  double last_at = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = name + ":" + std::to_string(n) + ": ";
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return make_error(errc::invalid_argument, where + "not a JSON object");
    workload_line l;
    if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty())
      return make_error(errc::invalid_argument, where + "\"messages\" must be a non-empty array of chat messages");
    for (const auto& m : j["messages"])
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
          !m["content"].is_string())
        return make_error(errc::invalid_argument, where + "each message needs a string \"role\" and \"content\"");
    if (last_user_text(j["messages"]).empty())
      return make_error(errc::invalid_argument, where + "no user message with text");
    l.messages = j["messages"];
    l.cls = j.value("class", "all");
    if (!j.contains("class")) l.cls = "all";
    else if (!j["class"].is_string() || j["class"].get<std::string>().empty())
      return make_error(errc::invalid_argument, where + "\"class\" must be a non-empty string");
    if (l.cls == "all") return make_error(errc::invalid_argument, where + "\"all\" is reserved for the whole workload");
    if (j.contains("max_tokens")) {
      if (!j["max_tokens"].is_number_integer() || j["max_tokens"].get<int64_t>() < 1 || j["max_tokens"].get<int64_t>() > 65536)
        return make_error(errc::invalid_argument, where + "\"max_tokens\" must be an integer in [1, 65536]");
      l.max_tokens = j["max_tokens"].get<int>();
    }
    if (j.contains("at_s")) {
      if (!j["at_s"].is_number() || j["at_s"].get<double>() < last_at)
        return make_error(errc::invalid_argument, where + "\"at_s\" must be a number, not below the line before's");
      l.at_s = last_at = j["at_s"].get<double>();
      ++with_time;
    }
    w.lines.push_back(std::move(l));
  }
  if (w.lines.empty()) return make_error(errc::invalid_argument, "workload " + name + ": no requests");
  if (with_time != 0 && with_time != w.lines.size())
    return make_error(errc::invalid_argument, "workload " + name + ": \"at_s\" on some lines but not all");
  w.timed = with_time == w.lines.size();
  return w;
}

std::vector<traced_request> workload_file::trace(double rate, double duration_s, uint64_t seed, size_t* line,
                                                 bool* wrapped) const {
  std::vector<traced_request> out;
  if (wrapped) *wrapped = false;
  auto add = [&](const workload_line& l, double at) { out.push_back({at, l.cls, l.messages, l.max_tokens}); };
  if (timed) {
    for (const auto& l : lines)
      if (l.at_s <= duration_s) add(l, l.at_s);
    return out;
  }
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  size_t i = line ? *line % lines.size() : 0;
  size_t taken = 0;
  for (double t = gap(rng); t < duration_s; t += gap(rng)) {
    if (i == lines.size()) i = 0;
    if (++taken > lines.size() && wrapped) *wrapped = true;
    add(lines[i++], t);
  }
  if (line) *line = i;
  return out;
}

std::string workload_file::user_queries() const {
  std::string out;
  for (const auto& l : lines) {
    std::string t = last_user_text(l.messages);
    for (char& c : t)
      if (c == '\n' || c == '\r') c = ' ';
    out += t + "\n";
  }
  return out;
}

std::string workload_file::texts_of(const std::string& cls) const {
  std::string out;
  for (const auto& l : lines)
    if (l.cls == cls) out += last_user_text(l.messages) + "\n\n";
  return out;
}

}  // namespace fw::cli

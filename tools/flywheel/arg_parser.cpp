#include "tools/flywheel/arg_parser.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace fw::cli {

arg_parser& arg_parser::option(const std::string& name, const std::string& help, std::string def) {
  specs_[name] = spec{help, std::move(def), true};
  order_.push_back(name);
  return *this;
}

arg_parser& arg_parser::flag(const std::string& name, const std::string& help) {
  specs_[name] = spec{help, "", false};
  order_.push_back(name);
  return *this;
}

expected<void> arg_parser::parse(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h") a = "--help";
    if (a.rfind("--", 0) != 0)
      return make_error(errc::invalid_argument, command_ + ": unexpected argument '" + a + "' (flags start with --)");
    std::string name = a.substr(2), value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (name == "help") {
      values_["help"] = "";
      continue;
    }
    auto it = specs_.find(name);
    if (it == specs_.end())
      return make_error(errc::invalid_argument, command_ + ": unknown flag --" + name + " (see --help)");
    if (it->second.takes_value && !inline_value) {
      if (i + 1 >= argc) return make_error(errc::invalid_argument, command_ + ": --" + name + " needs a value");
      value = argv[++i];
    } else if (!it->second.takes_value && inline_value) {
      return make_error(errc::invalid_argument, command_ + ": --" + name + " takes no value");
    }
    values_[name] = value;
  }
  return {};
}

std::optional<int> arg_parser::parse_or_exit_code(int argc, char** argv) {
  if (auto ok = parse(argc, argv); !ok) {
    std::fprintf(stderr, "%s\n", ok.err().message.c_str());
    return 2;
  }
  if (on("help")) {
    std::fputs(usage().c_str(), stdout);
    return 0;
  }
  return std::nullopt;
}

std::vector<std::string> arg_parser::list(const std::string& name) const {
  std::vector<std::string> out;
  const std::string s = str(name);
  for (size_t pos = 0; pos <= s.size();) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    if (end > pos) out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::string arg_parser::str(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  if (auto it = specs_.find(name); it != specs_.end()) return it->second.default_value;
  return "";
}

expected<int64_t> arg_parser::integer(const std::string& name) const {
  const std::string s = str(name);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0)
    return make_error(errc::invalid_argument, command_ + ": --" + name + " expects an integer, got '" + s + "'");
  return static_cast<int64_t>(v);
}

expected<int64_t> arg_parser::integer(const std::string& name, int64_t min) const {
  auto v = integer(name);
  if (v && *v < min)
    return make_error(errc::invalid_argument, command_ + ": --" + name + " must be at least " + std::to_string(min) +
                                                  ", got " + std::to_string(*v));
  return v;
}

expected<double> arg_parser::number(const std::string& name) const {
  const std::string s = str(name);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno != 0)
    return make_error(errc::invalid_argument, command_ + ": --" + name + " expects a number, got '" + s + "'");
  return v;
}

std::string arg_parser::usage() const {
  std::string u = "usage: flywheel " + command_ + " [flags]\n";
  for (const auto& name : order_) {
    const auto& s = specs_.at(name);
    std::string left = "  --" + name + (s.takes_value ? " VALUE" : "");
    if (left.size() < 26) left.resize(26, ' ');
    u += left + " " + s.help;
    if (!s.default_value.empty()) u += " (default: " + s.default_value + ")";
    u += "\n";
  }
  return u;
}

}  // namespace fw::cli

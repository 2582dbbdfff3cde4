// arg_parser: a small declarative parser for `flywheel SUBCOMMAND --flag value ...`.
// Unknown flags, missing values and malformed numbers are errors with a clear message.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/base/expected.hpp"

namespace fw::cli {

class arg_parser {
 public:
  explicit arg_parser(std::string command) : command_(std::move(command)) {}

  /// Declares a flag taking a value (--name VALUE or --name=VALUE).
  arg_parser& option(const std::string& name, const std::string& help, std::string default_value = "");
  /// Declares a boolean switch (--name).
  arg_parser& flag(const std::string& name, const std::string& help);

  expected<void> parse(int argc, char** argv);  ///< argv[0] is the first flag
  /// parse(), then the common endings: a parse error is printed to stderr (exit code 2),
  /// --help prints the usage to stdout (exit code 0); nullopt means "go on".
  std::optional<int> parse_or_exit_code(int argc, char** argv);

  bool has(const std::string& name) const { return values_.count(name) > 0; }
  bool on(const std::string& name) const { return has(name); }
  std::string str(const std::string& name) const;
  /// A comma list ("a,b,,c" -> a, b, c; empty items dropped).
  std::vector<std::string> list(const std::string& name) const;
  expected<int64_t> integer(const std::string& name) const;
  /// An integer of at least `min` ("--name must be at least min" otherwise).
  expected<int64_t> integer(const std::string& name, int64_t min) const;
  expected<double> number(const std::string& name) const;
  std::string usage() const;

 private:
  struct spec {
    std::string help;
    std::string default_value;
    bool takes_value;
  };
  std::string command_;
  std::map<std::string, spec> specs_;
  std::vector<std::string> order_;
  std::map<std::string, std::string> values_;
};

}  // namespace fw::cli

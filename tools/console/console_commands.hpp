// console_commands: the table of the console's `:` commands (name, argument synopsis, one-line
// help) that :help prints, the session dispatches on and tab completion offers, plus the
// completion of a partly typed line (command names; config keys after :set and :get).
// Thread-safety: the table is immutable; every function is pure.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace fw::console {

enum class command_id {
  help, reset, gen, set, get, format, stats, metrics, kernels, config, devices, health, drill, rollout,
  plugins, load, unload, reload, quit,
};

struct console_command {
  command_id id;
  std::string_view name;  ///< ":set"
  std::string_view args;  ///< "KEY VALUE"; empty: takes no arguments
  std::string_view help;  ///< one line
  bool optional_args = false;  ///< args may be left out (":get [KEY]")
};

/// Every command, in :help order.
const std::vector<console_command>& commands();
/// The command named name (":set"; ":q" is :quit), or nullptr.
const console_command* find_command(std::string_view name);
/// The command name closest to a mistyped one (":sett" -> ":set"), or empty when none is close.
std::string_view nearest_command(std::string_view name);
/// The :help text: one line per command, then the keys that work everywhere.
std::string help_text();

/// Config keys :set accepts (sampling.* and speculative.*), as "section.key".
const std::vector<std::string>& settable_keys();
/// True when key (qualified or bare) names one of settable_keys(); qualified receives the
/// "section.key" form.
bool is_settable(std::string_view key, std::string* qualified = nullptr);

/// Tab completion of the word that ends at the end of before_cursor: candidates replace
/// before_cursor[word_start, end). Offers command names for the first word; after :set the
/// settable keys, after :get every key (qualified, and bare where the bare name is unique).
struct completion {
  size_t word_start = 0;
  std::vector<std::string> candidates;  ///< sorted, unique
};
completion complete_line(std::string_view before_cursor);

}  // namespace fw::console

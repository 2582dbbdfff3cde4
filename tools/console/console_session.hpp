// console_session: the logic of `flywheel console`, one input line at a time, with no terminal:
// plain text is a chat turn (the whole conversation rendered with the model's chat template and
// sent to the engine; tokens are written to `out` as they stream), `:` lines are commands
// (console_commands.hpp). Answers and command output go to `out`; errors go to `err` as one line
// starting with "error:" and count as failed commands; the console carries on.
//
// A generation waits on the engine's stream events while polling options.interrupted(); when that
// reports a Ctrl-C the request is cancelled (engine::cancel) and the session returns to the caller
// with the partial answer kept in the conversation.
//
// Ownership: borrows the engine and the config (both must outlive the session); :set changes the
// config, and each request takes its sampling parameters from it.
// Thread-safety: one thread drives a session; engine callbacks only fill an internal queue.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "actors/engine.hpp"
#include "runtime/text/chat_template.hpp"
#include "runtime/config/config.hpp"
#include "runtime/plugin/plugin_host.hpp"
#include "tools/console/console_commands.hpp"
#include "tools/console/output_format.hpp"
#include "tools/console/turn_stats.hpp"

namespace fw::console {

struct console_options {
  /// A person at a terminal: after each turn a short summary line goes to err.
  bool interactive = false;
  /// Polled while generating; returns true once per interrupt (Ctrl-C). Null: never interrupted.
  std::function<bool()> interrupted;
  /// The plugin host behind :plugins, :load, :unload, :reload (null: none).
  plugin_host* plugins = nullptr;
  /// The runtime's speculative draft, for :stats ("" = plain decoding).
  std::string draft_name;
};

class console_session {
 public:
  enum class outcome { ok, failed, quit };

  console_session(actors::engine& engine, config& cfg, std::ostream& out, std::ostream& err,
                  console_options options = {});

  /// Runs one input line; blocks while a generation streams. Empty lines do nothing.
  outcome execute(std::string_view line);

  /// Commands (and turns) that failed so far.
  [[nodiscard]] size_t failed_count() const { return failed_; }
  [[nodiscard]] const turn_stats& stats() const { return stats_; }
  /// The conversation so far (user and assistant messages).
  [[nodiscard]] const std::vector<chat_message>& conversation() const { return conversation_; }

 private:
  struct stream_result {
    bool ok = false;         ///< finished with done
    bool cancelled = false;  ///< stopped by an interrupt
    std::string text;        ///< what was streamed
    std::string error;       ///< !ok && !cancelled: the engine's message
  };

  outcome run_command(std::string_view name, std::string_view args);
  outcome chat_turn(std::string_view text);
  outcome cmd_gen(std::string_view text);
  outcome cmd_set(std::string_view args);
  outcome cmd_get(std::string_view args);
  outcome cmd_format(std::string_view args);
  outcome cmd_stats();
  outcome cmd_kernels();
  outcome cmd_devices();
  outcome cmd_health();
  outcome cmd_drill(std::string_view args);
  static std::string pd_line(const actors::scheduler_stats& s);
  outcome cmd_plugins(command_id id, std::string_view args);
  /// Encodes text, streams the answer to out_ and records the turn's statistics.
  stream_result generate(std::vector<int32_t> prompt);
  outcome fail(const std::string& message);

  actors::engine& engine_;
  config& cfg_;
  std::ostream& out_;
  std::ostream& err_;
  console_options options_;
  std::vector<chat_message> conversation_;
  output_format format_;  ///< :format, applied to every turn
  turn_stats stats_;
  size_t failed_ = 0;
};

}  // namespace fw::console

// line_reader: where the console's input lines come from. At a terminal: libedit with a prompt,
// emacs-style editing, history (Up/Down, optionally kept in a file) and Tab completion of command
// names and config keys (console_commands.hpp). Otherwise (a pipe, a file): plain lines, no
// prompt, no echo. A Ctrl-C while waiting for input (interrupt.hpp): at a terminal the typed line
// is dropped and a fresh prompt starts (read() goes on); the plain reader returns `interrupted`
// (the console stops). End of input (Ctrl-D, EOF) is `end`.
// Thread-safety: one thread reads; a reader owns its libedit state.
#pragma once

#include <memory>
#include <string>

namespace fw::console {

class line_reader {
 public:
  enum class status { line, interrupted, end };

  virtual ~line_reader() = default;
  /// Reads the next line (without its newline) into line.
  virtual status read(std::string& line) = 0;

  /// A libedit reader on the terminal (stdin/stdout) that loads and saves history_file when it is
  /// not empty.
  static std::unique_ptr<line_reader> terminal(const std::string& history_file);
  /// A plain reader of standard input.
  static std::unique_ptr<line_reader> plain();
};

}  // namespace fw::console

// flywheel console: the interactive REPL on the actor runtime. Loads the config's model (with
// progress), starts the engine, prints a banner and hands each input line to a console_session
// (tools/console/). At a terminal: libedit prompt, history and completion, exit code 0. Otherwise:
// one command per line, no prompt, exit code 1 when any command failed (130 when a Ctrl-C came
// while it waited for input). Ctrl-C during a generation stops only that generation.
#include <unistd.h>

#include <clocale>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>

#include "actors/engine.hpp"
#include "runtime/setup/runtime_parts.hpp"
#include "tools/console/console_session.hpp"
#include "tools/console/interrupt.hpp"
#include "tools/console/line_reader.hpp"
#include "tools/console/progress_line.hpp"
#include "runtime/setup/lever_summary.hpp"
#include "tools/flywheel/arg_parser.hpp"
#include "tools/flywheel/commands.hpp"
#include "tools/flywheel/model_session.hpp"

namespace fw::cli {
namespace {

std::string history_file(const arg_parser& args) {
  if (args.has("history")) return args.str("history");
  const char* home = std::getenv("HOME");
  return home && *home ? std::string(home) + "/.flywheel_history" : std::string();
}

std::string banner(const runtime_parts& parts, const backend& be) {
  const config& cfg = parts.cfg;
  const auto& mc = parts.m->config();
  std::ostringstream b;
  b << "flywheel console: " << cfg.model.path;
  if (!mc.name.empty()) b << " (" << mc.name << ")";
  b << "\n  " << parts.m->describe() << "\n  " << mc.n_layer << " layers, width " << mc.n_embd << ", context " << parts.n_ctx << " tokens; "
    << be.summary() << ", KV pool " << parts.kv_tokens << " tokens\n";
  b << "  kernels: ";
  std::string warnings;
  const auto kernels = be.kernel_paths();
  for (size_t i = 0; i < kernels.size(); ++i) {
    const auto& k = kernels[i];
    b << (i ? ", " : "") << k.weight_type << " -> " << k.path << (k.fallback ? " (fallback)" : "");
    if (k.fallback) warnings += "  WARNING: " + k.weight_type + ": " + k.note + "\n";
  }
  b << "\n" << warnings;
  b << "  " << lever_summary(parts) << "\n";
  const auto& s = cfg.sampling;
  b << "  sampling: temperature " << s.temperature << ", top_k " << s.top_k << ", top_p " << s.top_p
    << ", max_tokens " << s.max_tokens << " (:set KEY VALUE changes them)\n";
  b << "Type a message to chat. :help lists the commands, Ctrl-C stops a generation, Ctrl-D quits.\n";
  return b.str();
}

}  // namespace

int cmd_console(int argc, char** argv) {
  arg_parser args("console");
  model_session::declare_flags(args);
  args.option("history", "history file at a terminal (default: $HOME/.flywheel_history; \"\": none)");
  if (auto ok = args.parse(argc, argv); !ok) {
    std::fprintf(stderr, "%s\n", ok.err().message.c_str());
    return 2;
  }
  if (args.on("help")) {
    std::fputs(args.usage().c_str(), stdout);
    std::fputs("\nInside the console:\n", stdout);
    std::fputs(console::help_text().c_str(), stdout);
    return 0;
  }
  const bool terminal = ::isatty(STDIN_FILENO) != 0;
  if (terminal && (!std::setlocale(LC_CTYPE, "") || MB_CUR_MAX == 1)) std::setlocale(LC_CTYPE, "C.UTF-8");

  auto cfg = model_session::load_config(args);
  if (!cfg) {
    std::fprintf(stderr, "console: %s\n", cfg.err().message.c_str());
    return 2;
  }
  if (auto ok = check_devices(*cfg); !ok) {  // before the model loads: refuse what cannot run
    std::fprintf(stderr, "console: %s\n", ok.err().message.c_str());
    return 2;
  }
  // Model load: Ctrl-C still ends the process here.
  expected<std::shared_ptr<const model>> m = make_error(errc::internal, "not loaded");
  {
    console::progress_line p(stderr, "loading model " + cfg->model.path);
    m = model::load(cfg->model.path);
    p.finish(m ? "done" : "failed");
  }
  if (!m) {
    std::fprintf(stderr, "console: %s\n", m.err().what().c_str());
    return 1;
  }
  // Threads started from here on (kernel pool, CAF) never take SIGINT: the console's thread does.
  console::block_interrupts_in_this_thread();
  // The composition root builds plugins, backend and draft; they outlive the engine.
  expected<runtime_parts> parts = make_error(errc::internal, "not built");
  std::unique_ptr<actors::engine> engine;
  backend* be = nullptr;
  {
    console::progress_line p(stderr, "starting the runtime");
    build_options bo;
    bo.preloaded = *m;
    parts = build_runtime(std::move(*cfg), bo);
    if (!parts) {
      p.finish("failed");
      std::fprintf(stderr, "console: %s\n", parts.err().what().c_str());
      return 1;
    }
    be = parts->device();
    auto e = actors::engine::start(*parts);
    p.finish(e ? "done" : "failed");
    if (!e) {
      std::fprintf(stderr, "console: %s\n", e.err().what().c_str());
      return 1;
    }
    engine = std::move(*e);
  }
  console::install_interrupt_handler();
  console::unblock_interrupts_in_this_thread();
  if (console::take_interrupt()) {  // Ctrl-C while the runtime started
    engine->shutdown();
    return 130;
  }

  const std::string text = banner(*parts, *be);
  std::fputs(text.c_str(), terminal ? stdout : stderr);
  std::fflush(terminal ? stdout : stderr);

  console::console_options opts;
  opts.interactive = terminal;
  opts.interrupted = console::take_interrupt;
  opts.plugins = parts->plugins.get();
  if (parts->draft) opts.draft_name = parts->draft->name();
  console::console_session session(*engine, parts->cfg, std::cout, std::cerr, opts);
  auto reader = terminal ? console::line_reader::terminal(history_file(args)) : console::line_reader::plain();
  std::string line;
  bool stopped = false;
  for (;;) {
    const auto st = reader->read(line);
    if (st == console::line_reader::status::end) break;
    if (st == console::line_reader::status::interrupted) {
      if (terminal) continue;  // the line is cleared; prompt again
      stopped = true;          // a script stopped by Ctrl-C
      break;
    }
    (void)console::take_interrupt();  // a Ctrl-C from before this line does not cancel it
    if (session.execute(line) == console::console_session::outcome::quit) break;
  }
  reader.reset();  // saves the history
  engine->shutdown();
  if (stopped) return 130;
  return !terminal && session.failed_count() > 0 ? 1 : 0;
}

}  // namespace fw::cli

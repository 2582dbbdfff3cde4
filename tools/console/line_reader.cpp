#include "tools/console/line_reader.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>

#include <histedit.h>
#include <poll.h>
#include <unistd.h>

#include "tools/console/console_commands.hpp"
#include "tools/console/interrupt.hpp"

namespace fw::console {
namespace {

/// Waits until fd has input (true) or a Ctrl-C came (false), whichever is first.
bool wait_input(int fd) {
  for (;;) {
    pollfd p[2] = {{fd, POLLIN, 0}, {interrupt_fd(), POLLIN, 0}};
    const int n = ::poll(p, p[1].fd >= 0 ? 2 : 1, -1);
    if (n < 0) {
      if (errno != EINTR) return true;  // let the read report the problem
      if (p[1].fd < 0 && take_interrupt()) return false;
      continue;  // the handler also wrote to the pipe: the next poll sees it
    }
    if (p[1].fd >= 0 && (p[1].revents & POLLIN) && take_interrupt()) return false;
    if (p[0].revents) return true;
  }
}

// -- plain input --

class plain_reader final : public line_reader {
 public:
  status read(std::string& line) override {
    line.clear();
    for (;;) {
      if (pos_ == len_) {
        if (!wait_input(STDIN_FILENO)) return status::interrupted;
        const ssize_t n = ::read(STDIN_FILENO, buf_, sizeof buf_);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return line.empty() ? status::end : status::line;
        pos_ = 0;
        len_ = static_cast<size_t>(n);
      }
      const char* start = buf_ + pos_;
      const char* nl = static_cast<const char*>(std::memchr(start, '\n', len_ - pos_));
      const size_t take = nl ? static_cast<size_t>(nl - start) : len_ - pos_;
      line.append(start, take);
      pos_ += take + (nl ? 1 : 0);
      if (nl) return status::line;
    }
  }

 private:
  char buf_[4096];
  size_t pos_ = 0, len_ = 0;
};

// -- libedit --

class editline_reader final : public line_reader {
 public:
  explicit editline_reader(std::string history_file) : history_file_(std::move(history_file)) {
    el_ = el_init("flywheel", stdin, stdout, stderr);
    hist_ = history_init();
    history(hist_, &ev_, H_SETSIZE, 1000);
    history(hist_, &ev_, H_SETUNIQUE, 1);
    if (!history_file_.empty()) history(hist_, &ev_, H_LOAD, history_file_.c_str());
    el_set(el_, EL_EDITOR, "emacs");
    el_set(el_, EL_SIGNAL, 0);  // libedit's own handlers re-raise SIGINT to the process group
    el_set(el_, EL_PROMPT, &editline_reader::prompt);
    el_set(el_, EL_HIST, history, hist_);
    el_set(el_, EL_GETCFN, &editline_reader::get_char);
    el_set(el_, EL_ADDFN, "fw-complete", "complete a command or config key", &editline_reader::complete);
    el_set(el_, EL_BIND, "^I", "fw-complete", nullptr);
    // get_char turns a Ctrl-C (SIGINT) into the character ^C, which clears the line.
    el_set(el_, EL_ADDFN, "fw-interrupt", "drop the line and prompt again", &editline_reader::interrupt_line);
    el_set(el_, EL_BIND, "^C", "fw-interrupt", nullptr);
    el_source(el_, nullptr);  // the user's ~/.editrc, if any
  }

  ~editline_reader() override {
    if (!history_file_.empty()) history(hist_, &ev_, H_SAVE, history_file_.c_str());
    history_end(hist_);
    el_end(el_);
  }

  status read(std::string& line) override {
    int count = 0;
    const char* s = el_gets(el_, &count);
    if (!s || count <= 0) {
      std::fputs("\n", stdout);  // Ctrl-D leaves the cursor after the prompt
      std::fflush(stdout);
      return status::end;
    }
    line.assign(s, static_cast<size_t>(count));
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) history(hist_, &ev_, H_ENTER, line.c_str());
    return status::line;
  }

 private:
  static char* prompt(EditLine*) {
    static char text[] = "> ";
    return text;
  }

  // Reads one character; a Ctrl-C becomes the character ^C (bound to interrupt_line). A Ctrl-D on
  // an empty line is end of input, decided here rather than by libedit's key map: under load the
  // console tests saw libedit take a Ctrl-D at an empty prompt and keep reading.
  static int get_char(EditLine* el, wchar_t* out) {
    std::mbstate_t state{};
    char bytes[MB_LEN_MAX];
    size_t n = 0;
    for (;;) {
      if (!wait_input(STDIN_FILENO)) {
        *out = L'\x03';
        return 1;
      }
      char c;
      const ssize_t r = ::read(STDIN_FILENO, &c, 1);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return r == 0 ? 0 : -1;
      bytes[n++] = c;
      wchar_t wc;
      const size_t k = std::mbrtowc(&wc, bytes, n, &state);
      if (k == static_cast<size_t>(-2) && n < sizeof bytes) continue;  // incomplete UTF-8 sequence
      if (k == static_cast<size_t>(-1) || k == static_cast<size_t>(-2)) {
        state = {};
        wc = static_cast<unsigned char>(bytes[0]);
      }
      if (wc == L'\x04') {
        const LineInfo* li = el_line(el);
        if (li->buffer == li->lastchar) return 0;  // end of input
      }
      *out = wc;
      return 1;
    }
  }

  // Ctrl-C at the prompt: the typed text is dropped and a fresh prompt starts on the next line.
  static unsigned char interrupt_line(EditLine* el, int) {
    const LineInfo* li = el_line(el);
    el_cursor(el, static_cast<int>(li->lastchar - li->cursor));  // to the end of the line
    li = el_line(el);
    el_deletestr(el, static_cast<int>(li->cursor - li->buffer));
    std::fputs("^C\n", stdout);
    std::fflush(stdout);
    return CC_REDISPLAY;
  }

  static unsigned char complete(EditLine* el, int) {
    const LineInfo* li = el_line(el);
    const std::string before(li->buffer, li->cursor);
    const completion c = complete_line(before);
    if (c.candidates.empty()) return CC_REFRESH_BEEP;
    const std::string_view typed = std::string_view(before).substr(c.word_start);
    // The longest common prefix of the candidates.
    std::string common = c.candidates.front();
    for (const auto& cand : c.candidates) {
      size_t i = 0;
      while (i < common.size() && i < cand.size() && common[i] == cand[i]) ++i;
      common.resize(i);
    }
    if (common.size() > typed.size() && common.starts_with(typed)) {
      std::string insert = common.substr(typed.size());
      if (c.candidates.size() == 1) insert += ' ';
      el_insertstr(el, insert.c_str());
      return CC_REFRESH;
    }
    if (c.candidates.size() == 1) {
      el_insertstr(el, " ");
      return CC_REFRESH;
    }
    std::fputs("\n", stdout);
    for (const auto& cand : c.candidates) std::fprintf(stdout, "%s  ", cand.c_str());
    std::fputs("\n", stdout);
    std::fflush(stdout);
    return CC_REDISPLAY;
  }

  std::string history_file_;
  EditLine* el_ = nullptr;
  History* hist_ = nullptr;
  HistEvent ev_{};
};

}  // namespace

std::unique_ptr<line_reader> line_reader::terminal(const std::string& history_file) {
  return std::make_unique<editline_reader>(history_file);
}

std::unique_ptr<line_reader> line_reader::plain() { return std::make_unique<plain_reader>(); }

}  // namespace fw::console

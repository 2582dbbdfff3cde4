#include "runtime/sample/json_recognizer.hpp"

namespace fw {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

bool json_recognizer::open(char c) {
  if (depth_ >= max_depth) return false;
  stack_[depth_++] = c;
  mode_ = c == '{' ? mode::key_or_close : mode::value_or_close;
  return true;
}

bool json_recognizer::close(char c) {
  if (depth_ == 0 || stack_[depth_ - 1] != (c == '}' ? '{' : '[')) return false;
  --depth_;
  return after_value();
}

bool json_recognizer::after_value() {
  mode_ = depth_ == 0 ? mode::done : mode::comma_or_close;
  return true;
}

bool json_recognizer::value_start(char c) {
  switch (c) {
    case '{':
    case '[': return open(c);
    case '"': key_ = false, mode_ = mode::string; return true;
    case '-': mode_ = mode::num_minus; return true;
    case '0': mode_ = mode::num_zero; return true;
    case 't': literal_ = "true", lit_pos_ = 1, mode_ = mode::literal; return true;
    case 'f': literal_ = "false", lit_pos_ = 1, mode_ = mode::literal; return true;
    case 'n': literal_ = "null", lit_pos_ = 1, mode_ = mode::literal; return true;
    default:
      if (is_digit(c)) return mode_ = mode::num_int, true;
      return false;
  }
}

bool json_recognizer::feed(char c) {
  const json_recognizer before = *this;
  bool ok = false;
  switch (mode_) {
    case mode::root: ok = is_ws(c) || (c == '{' && open(c)); break;
    case mode::value: ok = is_ws(c) || value_start(c); break;
    case mode::value_or_close: ok = is_ws(c) || (c == ']' ? close(c) : value_start(c)); break;
    case mode::key_or_close:
      if (is_ws(c)) ok = true;
      else if (c == '"') ok = true, key_ = true, mode_ = mode::string;
      else if (c == '}') ok = close(c);
      break;
    case mode::key:
      if (is_ws(c)) ok = true;
      else if (c == '"') ok = true, key_ = true, mode_ = mode::string;
      break;
    case mode::colon:
      if (is_ws(c)) ok = true;
      else if (c == ':') ok = true, mode_ = mode::value;
      break;
    case mode::comma_or_close:
      if (is_ws(c)) ok = true;
      else if (c == ',') ok = true, mode_ = stack_[depth_ - 1] == '{' ? mode::key : mode::value;
      else if (c == '}' || c == ']') ok = close(c);
      break;
    case mode::string:
      if (c == '"') {
        ok = true;
        if (key_) mode_ = mode::colon;
        else after_value();
      } else if (c == '\\') ok = true, mode_ = mode::escape;
      else ok = static_cast<unsigned char>(c) >= 0x20;
      break;
    case mode::escape:
      if (c == 'u') ok = true, hex_left_ = 4, mode_ = mode::unicode;
      else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't')
        ok = true, mode_ = mode::string;
      break;
    case mode::unicode:
      if (is_hex(c)) ok = true, mode_ = --hex_left_ == 0 ? mode::string : mode::unicode;
      break;
    case mode::num_minus:
      if (c == '0') ok = true, mode_ = mode::num_zero;
      else if (is_digit(c)) ok = true, mode_ = mode::num_int;
      break;
    case mode::num_zero:
    case mode::num_int:
    case mode::num_frac:
    case mode::num_exp_digits:
      if (is_digit(c) && mode_ != mode::num_zero) ok = true;
      else if (c == '.' && (mode_ == mode::num_zero || mode_ == mode::num_int)) ok = true, mode_ = mode::num_dot;
      else if ((c == 'e' || c == 'E') && mode_ != mode::num_exp_digits) ok = true, mode_ = mode::num_exp;
      else {
        // The number ended: c is read after it, as after any value.
        after_value();
        ok = feed(c);
      }
      break;
    case mode::num_dot:
      if (is_digit(c)) ok = true, mode_ = mode::num_frac;
      break;
    case mode::num_exp:
      if (c == '+' || c == '-') ok = true, mode_ = mode::num_exp_sign;
      else if (is_digit(c)) ok = true, mode_ = mode::num_exp_digits;
      break;
    case mode::num_exp_sign:
      if (is_digit(c)) ok = true, mode_ = mode::num_exp_digits;
      break;
    case mode::literal:
      if (c == literal_[lit_pos_]) {
        ok = true;
        if (literal_[++lit_pos_] == '\0') after_value();
      }
      break;
    case mode::done: ok = is_ws(c); break;
  }
  if (!ok) *this = before;
  return ok;
}

}  // namespace fw

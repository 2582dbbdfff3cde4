// libFuzzer target: a JSON schema (the bytes before the first NUL; a regex when they start with
// "re:", a GBNF grammar when they start with "gbnf:") compiled to its grammar, then a text (the bytes after the NUL) fed to the grammar's
// recognizer a byte at a time, asking what can come next every 16 bytes. Every schema gets a
// grammar or an error naming where it is wrong, every byte an accept or a refusal; never a
// crash, an exception or a runaway.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/sample/gbnf_grammar.hpp"
#include "runtime/sample/grammar_recognizer.hpp"
#include "runtime/sample/json_schema.hpp"
#include "runtime/sample/regex_grammar.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const size_t cut = all.find('\0');
  const std::string_view schema = all.substr(0, cut);
  const std::string_view text = cut == std::string_view::npos ? std::string_view() : all.substr(cut + 1);
  auto g = schema.substr(0, 3) == "re:"     ? fw::regex_grammar(schema.substr(3))
           : schema.substr(0, 5) == "gbnf:" ? fw::gbnf_grammar(schema.substr(5))
                                             : fw::json_schema_grammar(schema);
  if (!g) return g.err().message.empty() ? 1 : 0;
  fw::grammar_recognizer r(*g);
  size_t accepted = 0;
  size_t i = 0;
  for (char c : text.substr(0, 512)) {
    if (i++ % 16 == 0) {  // what can come next (256 transitions): now and then, it costs
      fw::byte_set ok, same;
      r.next_bytes(&ok, &same);
      const bool fed = r.feed(c);
      if (fed != ok.has(static_cast<uint8_t>(c))) __builtin_trap();  // the two must agree
      accepted += fed;
    } else {
      accepted += r.feed(c);
    }
  }
  return accepted == 0xdeadbeef && r.done() ? 1 : 0;
}

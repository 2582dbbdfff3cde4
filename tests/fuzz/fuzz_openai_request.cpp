// libFuzzer target: the OpenAI request body (chat completions and completions) on arbitrary bytes.
// The first byte picks the endpoint; the rest is the body. Every body gets a request or an
// api_error, never a crash or an exception. A chat request with tools also reads its own body as
// a model's answer (tool_calls.hpp), whole and through the stream filter in pieces: the filter
// passes on or holds every byte, in order.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tools/server/openai_request.hpp"
#include "tools/server/tool_calls.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = data[0] & 1;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const fw::sampling_params defaults{};
  auto r = fw::server::parse_generation_request(body, chat, defaults);
  if (auto* req = std::get_if<fw::server::generation_request>(&r)) {
    size_t sink = req->messages.size() + req->n;
    for (const auto& p : req->prompts) sink += p.text.size() + p.ids.size();
    if (req->tools.active()) {
      const auto answer = fw::server::read_tool_answer(req->tools, body);
      for (const auto& c : answer.calls) sink += c.name.size() + c.arguments.size();
      fw::server::tool_stream_filter f;
      std::string passed;
      for (size_t at = 0; at < body.size(); at += 1 + at % 7) passed += f.feed(body.substr(at, 1 + at % 7));
      if (passed + f.held() != body) std::abort();
    }
    return sink == 0xdeadbeef ? 1 : 0;
  }
  return 0;
}

// libFuzzer target: the OpenAI request body (chat completions and completions) on arbitrary bytes.
// The first byte picks the endpoint; the rest is the body. Every body gets a request or an
// api_error, never a crash or an exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tools/server/openai_request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool chat = data[0] & 1;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  const fw::sampling_params defaults{};
  auto r = fw::server::parse_generation_request(body, chat, defaults);
  if (auto* req = std::get_if<fw::server::generation_request>(&r)) {
    size_t sink = req->messages.size() + req->n;
    for (const auto& p : req->prompts) sink += p.text.size() + p.ids.size();
    return sink == 0xdeadbeef ? 1 : 0;
  }
  return 0;
}

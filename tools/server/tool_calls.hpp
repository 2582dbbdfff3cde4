// tool_calls: OpenAI's function calling on /v1/chat/completions (tools, tool_choice,
// parallel_tool_calls, assistant messages with tool_calls, role "tool"). Pure: text in, text out.
//
// How a request with tools is answered (the approach vLLM takes for models whose template has no
// tool syntax of its own; none of the four chat families here has one):
// - The prompt: a system text lists the functions (one JSON object a line inside <tools> ...
//   </tools>) and shows the call syntax, a JSON object {"name", "arguments"} inside <tool_call> ...
//   </tool_call>. It is appended to the conversation's first system message, or is one.
//   Earlier calls (an assistant message's tool_calls) are written in that syntax; a tool's result
//   (role "tool") is a user turn holding <tool_response> ... </tool_response>.
// - tool_choice {"type": "function", "function": {"name": F}}: the answer is constrained to F's
//   parameters schema (json_schema.hpp); the whole answer is the call's arguments.
// - tool_choice "required": the answer is constrained to a JSON array of one or more calls
//   [{"name": ..., "arguments": {...}}] (one at most with parallel_tool_calls = false), each
//   call's arguments to its function's schema.
// - tool_choice "auto" (the default with tools): the answer is free; each well-formed
//   <tool_call> block naming a listed function becomes a call (the first only with
//   parallel_tool_calls = false), the text around them the content.
// - tool_choice "none" (the default without tools): tools are neither shown nor called.
// Thread-safety: pure functions; a tool_stream_filter belongs to one choice.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fw::server {

struct tool_function {
  std::string name;         ///< [A-Za-z0-9_-], 1 to 64 characters, unique in the request
  std::string description;  ///< may be empty
  std::string parameters;   ///< its parameters' JSON schema, as the client wrote it (property order kept)
};

enum class tool_choice { none, automatic, required, named };

struct tool_spec {
  std::vector<tool_function> functions;
  tool_choice choice = tool_choice::none;
  std::string named;     ///< tool_choice named: the function
  bool parallel = true;  ///< parallel_tool_calls
  [[nodiscard]] bool active() const { return choice != tool_choice::none && !functions.empty(); }
};

struct tool_call {
  std::string name;
  std::string arguments;  ///< a JSON object's text
};

/// What an answer says: its text outside calls, and its calls.
struct tool_answer {
  std::string content;
  std::vector<tool_call> calls;
};

/// The parameters schema of a function that gives none: an object with no properties.
inline constexpr std::string_view no_parameters_schema = R"({"type":"object","properties":{},"additionalProperties":false})";

/// The system text that lists the functions and shows the call syntax.
[[nodiscard]] std::string tool_prompt(const tool_spec& spec);

/// The JSON schema the answer must satisfy: named: the function's parameters; required: an array
/// of calls. Empty for automatic and none (the answer is free).
[[nodiscard]] std::string tool_answer_schema(const tool_spec& spec);

/// Reads a finished answer by the request's tool_choice. named: the whole text is the arguments
/// (one call, none when the text is empty); required: the JSON array of calls (those before the
/// cut when max_tokens cut it; none, the text as content, when not one call is whole); automatic: the <tool_call>
/// blocks that hold a JSON object naming a listed function (arguments an object; "parameters"
/// is read as "arguments"), the rest (blocks that are not calls included) as content, trimmed.
[[nodiscard]] tool_answer read_tool_answer(const tool_spec& spec, std::string_view text);

/// An earlier call as the prompt shows it (arguments: JSON text; anything else is quoted).
[[nodiscard]] std::string tool_call_text(std::string_view name, std::string_view arguments);
/// A tool's result as the prompt shows it.
[[nodiscard]] std::string tool_result_text(std::string_view content);

/// Streaming with tool_choice automatic: passes text through until a call may begin, then holds
/// it (read_tool_answer on held() at the end says what it was). A suffix that could still become
/// "<tool_call>" is held until the next text decides.
class tool_stream_filter {
 public:
  /// The part of `text` (with what was held) that is content for sure.
  [[nodiscard]] std::string feed(std::string_view text);
  [[nodiscard]] const std::string& held() const { return held_; }

 private:
  std::string held_;
  bool in_call_ = false;
};

}  // namespace fw::server

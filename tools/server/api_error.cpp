#include "tools/server/api_error.hpp"

#include <nlohmann/json.hpp>

namespace fw::server {

std::string api_error::body() const {
  nlohmann::json e = {{"message", message},
                      {"type", type},
                      {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
                      {"code", code.empty() ? nlohmann::json() : nlohmann::json(code)}};
  return nlohmann::json{{"error", std::move(e)}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

api_error bad_request(std::string message, std::string param, std::string code) {
  api_error e;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

api_error from_engine_error(const fw::error& e, unsigned retry_after_s) {
  api_error out;
  out.message = e.message;
  switch (e.code) {
    case errc::invalid_argument:
    case errc::unsupported:
      out.status = 400;
      break;
    case errc::context_overflow:
      out.status = 400;
      out.code = "context_length_exceeded";
      break;
    case errc::out_of_memory:
      out.status = 400;
      out.code = "request_too_large";
      break;
    case errc::overloaded:
      out.status = 429;
      out.type = "rate_limit_error";
      out.code = "overloaded";
      out.retry_after_s = retry_after_s;
      break;
    case errc::timed_out:
      out.status = 504;
      out.type = "timeout_error";
      out.code = "timed_out";
      break;
    case errc::worker_failed:
      out.status = 503;
      out.type = "server_error";
      out.code = "worker_failed";
      out.retry_after_s = retry_after_s;
      break;
    case errc::cancelled:
      out.status = 499;  // the client's own cancellation (nginx's convention); rarely seen
      out.type = "cancelled";
      break;
    default:
      out.status = 500;
      out.type = "server_error";
      out.code = to_string(e.code);
      break;
  }
  return out;
}

}  // namespace fw::server

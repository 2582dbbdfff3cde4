#include "actors/protocol/errc_error.hpp"

#include <caf/all.hpp>

namespace fw::actors {

caf::error to_caf_error(const error& e) {
  return caf::error(static_cast<uint8_t>(e.code), errc_category, caf::make_message(e.message));
}

error from_caf_error(const caf::error& e) {
  if (!e) return make_error(errc::worker_failed, "an empty error");
  if (e.category() == errc_category) {
    std::string msg;
    if (e.context().match_elements<std::string>()) msg = e.context().get_as<std::string>(0);
    return make_error(static_cast<errc>(e.code()), std::move(msg));
  }
  if (e == caf::sec::request_timeout) return make_error(errc::timed_out, "the worker did not answer in time");
  return make_error(errc::worker_failed, caf::to_string(e));
}

void add_errc_category(caf::actor_system_config& cfg) {
  cfg.add_error_category(errc_category, [](uint8_t code, caf::atom_value, const caf::message& ctx) {
    std::string msg;
    if (ctx.match_elements<std::string>()) msg = ctx.get_as<std::string>(0);
    return std::string("flywheel: ") + to_string(static_cast<errc>(code)) + (msg.empty() ? "" : ": " + msg);
  });
}

}  // namespace fw::actors

#include "runtime/config/node_address.hpp"

#include <charconv>

namespace fw {

std::string node_address::text() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

expected<node_address> parse_node_address(std::string_view text, bool allow_any_port) {
  auto bad = [&](const std::string& why) {
    return make_error(errc::invalid_argument, "'" + std::string(text) + "' is not HOST:PORT: " + why);
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("no ':PORT'");
  std::string_view host = text.substr(0, colon), port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  else if (host.find(':') != std::string_view::npos) return bad("an IPv6 host goes in brackets ([::1]:7700)");
  if (host.empty()) return bad("empty host");
  for (char c : host)
    if (c <= ' ' || c == '/' || c == '[' || c == ']') return bad("the host has a character hosts do not have");
  unsigned value = 0;
  const auto r = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || r.ec != std::errc{} || r.ptr != port.data() + port.size() || value > 65535)
    return bad("the port must be a number from " + std::string(allow_any_port ? "0" : "1") + " to 65535");
  if (value == 0 && !allow_any_port) return bad("port 0 names no peer");
  return node_address{std::string(host), static_cast<uint16_t>(value)};
}

}  // namespace fw

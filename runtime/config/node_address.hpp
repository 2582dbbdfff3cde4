// node_address: "HOST:PORT" of a flywheel node ([node] listen and peers, serve --listen/--peer),
// parsed with a message that names the text. IPv6 hosts go in brackets ("[::1]:7700").
// Thread-safety: values and a free function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/base/expected.hpp"

namespace fw {

struct node_address {
  std::string host;
  uint16_t port = 0;
  std::string text() const;  ///< "host:port" again
  bool operator==(const node_address&) const = default;
};

/// Parses "HOST:PORT"; port 0 only when allow_any_port (a listen address).
expected<node_address> parse_node_address(std::string_view text, bool allow_any_port = false);

}  // namespace fw

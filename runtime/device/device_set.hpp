// device_set: an engine's devices as one list, each [[devices]] entry a backend with its role
// (both, prefill, decode, offload). Roles are looked up, never stored as fields: the decoder is
// the entry with role decode or both, the prefiller the entry with role prefill (else the
// decoder), the offloader the entry with role offload. runtime/setup fills it from the config,
// the engine owns it, the scheduler's pools and the workers' devices are read from it.
// Ownership: the set owns its backends. Thread-safety: build on one thread; afterwards
// read-only (each backend follows its own contract).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/config/sections/device_section.hpp"
#include "runtime/device/backend.hpp"

namespace fw {

struct placed_device {
  std::string name;  ///< "cpu:0", "cuda:0" (logs, :devices)
  device_role role = device_role::both;
  std::unique_ptr<backend> be;
};

class device_set {
 public:
  device_set() = default;
  /// One device that prefills and decodes (role both).
  explicit device_set(std::unique_ptr<backend> both, std::string name = "device");

  void add(std::string name, device_role role, std::unique_ptr<backend> be);
  /// Removes the entries of this role (a prefill device whose pair check failed).
  void drop(device_role role);
  /// Removes the entry find(role) names and hands its backend over (null when none).
  [[nodiscard]] std::unique_ptr<backend> take(device_role role);

  /// The device that decodes (role decode or both); null when the set has none.
  [[nodiscard]] backend* decoder() const;
  /// The device that prefills: role prefill, else the decoder.
  [[nodiscard]] backend* prefiller() const;
  /// The device that finishes long-tail sequences (role offload); null: none.
  [[nodiscard]] backend* offloader() const;
  /// Prefill and decode on separate devices.
  [[nodiscard]] bool separate() const { return prefiller() != decoder(); }
  /// The entry of this role (decode also finds both); null when none.
  [[nodiscard]] const placed_device* find(device_role role) const;
  /// The pool of this id among the devices; null when none has it.
  [[nodiscard]] kv_block_pool* pool_by_id(uint32_t id) const;

  [[nodiscard]] const std::vector<placed_device>& all() const { return devices_; }
  [[nodiscard]] bool empty() const { return devices_.empty(); }

 private:
  std::vector<placed_device> devices_;
};

}  // namespace fw

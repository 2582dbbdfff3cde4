#include "runtime/device/device_set.hpp"

#include <algorithm>

namespace fw {

device_set::device_set(std::unique_ptr<backend> both, std::string name) {
  if (both) add(std::move(name), device_role::both, std::move(both));
}

void device_set::add(std::string name, device_role role, std::unique_ptr<backend> be) {
  devices_.push_back(placed_device{std::move(name), role, std::move(be)});
}

void device_set::drop(device_role role) {
  devices_.erase(std::remove_if(devices_.begin(), devices_.end(), [&](const placed_device& d) { return d.role == role; }),
                 devices_.end());
}

std::unique_ptr<backend> device_set::take(device_role role) {
  const placed_device* d = find(role);
  if (!d) return nullptr;
  auto it = devices_.begin() + (d - devices_.data());
  std::unique_ptr<backend> out = std::move(it->be);
  devices_.erase(it);
  return out;
}

const placed_device* device_set::find(device_role role) const {
  for (const auto& d : devices_)
    if (d.be && (d.role == role || (role == device_role::decode && d.role == device_role::both))) return &d;
  return nullptr;
}

backend* device_set::decoder() const {
  const placed_device* d = find(device_role::decode);
  return d ? d->be.get() : nullptr;
}

backend* device_set::prefiller() const {
  const placed_device* d = find(device_role::prefill);
  return d ? d->be.get() : decoder();
}

backend* device_set::offloader() const {
  const placed_device* d = find(device_role::offload);
  return d ? d->be.get() : nullptr;
}

kv_block_pool* device_set::pool_by_id(uint32_t id) const {
  for (const auto& d : devices_)
    if (d.be && d.be->kv_pool().pool_id() == id) return &d.be->kv_pool();
  return nullptr;
}

}  // namespace fw

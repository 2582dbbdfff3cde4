// device_section: one [[devices]] entry, a compute device and its role in prefill/decode
// separation. Read by runtime/setup, which refuses what this build cannot do (a CUDA device
// without the CUDA backend, the offload role, role sets other than one "both" device or a
// prefill + decode pair) with a message naming the entry. Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/config/sections/enum_names.hpp"

namespace fw {

enum class device_kind { cpu, cuda };
inline constexpr enum_table<device_kind, 2> device_kind_names = {{
    {device_kind::cpu, "cpu"}, {device_kind::cuda, "cuda"}}};

enum class device_role { prefill, decode, both, offload };
inline constexpr enum_table<device_role, 4> device_role_names = {{
    {device_role::prefill, "prefill"}, {device_role::decode, "decode"},
    {device_role::both, "both"}, {device_role::offload, "offload"}}};

struct device_section {
  device_kind kind = device_kind::cpu;
  uint32_t id = 0;             ///< index among devices of its kind; (kind, id) is unique
  int threads = 0;             ///< cpu: kernel threads; 0: compute.threads (or cores' count)
  std::vector<int> cores;      ///< cpu: pin the kernel threads to these CPUs; empty: no pinning
  uint32_t kv_pool_mib = 0;    ///< KV pool size on this device; 0: as [kv_cache] says
  device_role role = device_role::both;
  double bandwidth_gbs = 0.0;  ///< memory bandwidth in GB/s for the k policy; 0: unknown
  bool operator==(const device_section&) const = default;
};

}  // namespace fw

// kv_cache_section: [kv_cache], the KV block pool of each device. Exactly one of pool_tokens and
// pool_mib is non-zero (setting one to a non-zero value zeroes the other). Read by runtime/setup.
// Thread-safety: plain value.
#pragma once

#include <cstdint>

#include "runtime/config/sections/enum_names.hpp"

namespace fw {

/// Element type of the cached K and V (q8_0: int8 with a scale per token and head, CPU devices).
enum class kv_cache_type { f16, f32, q8_0 };
inline constexpr enum_table<kv_cache_type, 3> kv_cache_type_names = {{
    {kv_cache_type::f16, "f16"}, {kv_cache_type::f32, "f32"}, {kv_cache_type::q8_0, "q8_0"}}};

/// How KV moves between two devices' pools (runtime/kv/kv_codec): auto = the cache's own type
/// (lossless), or f32 / f16 / int8 (per-token scale; a quarter of f32, adds a small error).
enum class kv_transfer_type { automatic, f32, f16, int8 };
inline constexpr enum_table<kv_transfer_type, 4> kv_transfer_type_names = {{
    {kv_transfer_type::automatic, "auto"}, {kv_transfer_type::f32, "f32"},
    {kv_transfer_type::f16, "f16"}, {kv_transfer_type::int8, "int8"}}};

struct kv_cache_section {
  uint32_t block_tokens = 16;   ///< tokens per block
  uint32_t pool_tokens = 16384; ///< pool size in tokens (all sequences together); 0: use pool_mib
  uint32_t pool_mib = 0;        ///< pool size in MiB; 0: use pool_tokens
  kv_cache_type type = kv_cache_type::f16;
  /// Prefix cache: at most this share of the pool keeps earlier prompts' KV blocks for requests
  /// that start with the same tokens (a chat's next turn); 0: off.
  double prefix_cache_share = 0.25;
  kv_transfer_type transfer = kv_transfer_type::automatic;  ///< KV between devices
  bool operator==(const kv_cache_section&) const = default;
};

}  // namespace fw

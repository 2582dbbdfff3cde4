#include "runtime/setup/device_identity_of.hpp"

#include <algorithm>
#include <cstdio>
#include <span>

#include "runtime/kv/kv_codec.hpp"
#ifdef FW_HAVE_CUDA
#include "runtime/device/cuda/cuda_backend.hpp"
#endif

namespace fw {

std::string model_fingerprint(const gguf_file& f) {
  uint32_t crc = 0;
  auto add = [&](const void* p, size_t n) { crc = crc32c(std::span(static_cast<const std::byte*>(p), n), crc); };
  constexpr size_t edge = 4096;
  for (const auto& t : f.tensors()) {
    add(t.name.data(), t.name.size());
    const auto type = static_cast<uint32_t>(t.type);
    add(&type, sizeof type);
    add(t.ne.data(), t.ne.size() * sizeof(uint64_t));
    if (t.data && t.n_bytes > 0) {
      const size_t head = std::min<uint64_t>(edge, t.n_bytes);
      add(t.data, head);
      if (t.n_bytes > head) {
        const size_t tail = std::min<uint64_t>(edge, t.n_bytes - head);
        add(t.data + t.n_bytes - tail, tail);
      }
    }
  }
  const uint64_t size = f.file_size();
  add(&size, sizeof size);
  char buf[64];
  std::snprintf(buf, sizeof buf, "crc32c:%08x, %.0f MB", crc, static_cast<double>(size) / 1e6);
  return buf;
}

device_identity device_identity_of(const std::string& name, backend& b, const std::string& fingerprint) {
  device_identity d;
  d.name = name;
  d.kind = "cpu";
#ifdef FW_HAVE_CUDA
  if (auto* g = dynamic_cast<cuda_backend*>(&b)) {
    d.kind = "cuda";
    d.cuda_runtime = g->info().runtime;
    d.cuda_driver = g->info().driver;
    d.compute_capability = std::to_string(g->info().cc_major) + "." + std::to_string(g->info().cc_minor);
  }
#endif
  d.model_fingerprint = fingerprint;
  d.kv_format_version = kv_stream_version;
  const kv_layout& l = b.kv_pool().layout();
  d.kv_layers = l.n_layer;
  d.kv_heads = l.n_head_kv;
  d.kv_head_dim = l.head_dim;
  return d;
}

}  // namespace fw

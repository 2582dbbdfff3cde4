// The engine tests' shared pieces (tests/actors/*): a CPU backend on a tiny model with the sizes
// those tests use, and an engine started on it whose failure to start fails the test.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "actors/engine.hpp"
#include "runtime/device/cpu/cpu_backend.hpp"
#include "runtime/device/device_set.hpp"

namespace fw::test {

/// A CPU backend for m: `threads` kernel threads, a KV pool of kv_tokens tokens in blocks of 16.
inline std::unique_ptr<backend> tiny_device(const model& m, uint32_t kv_tokens = 4096, int threads = 2,
                                            bool decode_priority = true, kv_dtype dtype = kv_dtype::f32) {
  cpu_backend_options o;
  o.threads = threads;
  o.kv_tokens = kv_tokens;
  o.kv_block_tokens = 16;
  o.kv_type = dtype;
  o.decode_priority = decode_priority;
  return std::make_unique<cpu_backend>(m.config(), m.weights(), o);
}

/// An engine on these devices (a test failure, and null, when it does not start).
inline std::unique_ptr<actors::engine> start_engine(std::shared_ptr<const model> m, device_set devices,
                                                    engine_limits lim, actors::engine_options o = {}) {
  auto e = actors::engine::start(std::move(m), std::move(devices), std::move(lim), std::move(o));
  EXPECT_TRUE(e) << (e ? "" : e.err().what());
  return e ? std::move(*e) : nullptr;
}

/// The same on one device that prefills and decodes.
inline std::unique_ptr<actors::engine> start_engine(std::shared_ptr<const model> m, std::unique_ptr<backend> device,
                                                    engine_limits lim, actors::engine_options o = {}) {
  return start_engine(std::move(m), device_set(std::move(device)), std::move(lim), std::move(o));
}

}  // namespace fw::test

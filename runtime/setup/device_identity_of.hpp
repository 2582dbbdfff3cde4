// device_identity_of: describes a real device for runtime/supervise/pair_check: its kind, the
// fingerprint of the model it serves and the KV stream version and shape of its pool. A CPU
// device has no CUDA fields; the CUDA backend will fill them from the runtime and driver.
// Thread-safety: free functions over values that are not modified.
#pragma once

#include <string>

#include "runtime/device/backend.hpp"
#include "runtime/gguf/gguf_file.hpp"
#include "runtime/supervise/pair_check.hpp"

namespace fw {

/// "crc32c:1a2b3c4d, 105 MB": a checksum of every tensor's name, type, shape and first and last
/// 4 KiB (cheap for a 40 GB file, and any other file of the same name differs), plus the size.
std::string model_fingerprint(const gguf_file& f);

/// `name` is what messages call it ("prefill cpu:0").
device_identity device_identity_of(const std::string& name, backend& b, const std::string& model_fingerprint);

}  // namespace fw

#include "runtime/kv/kv_block_pool.hpp"

#include <atomic>

#include "kernels/cpu/ops.hpp"
#include "kernels/format/kv_q8.hpp"
#include "kernels/format/quant_ref.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>


namespace fw {

namespace {

std::string describe(const kv_handle& h) { return kv_block_table::describe(h); }

}  // namespace

uint32_t kv_block_pool::next_pool_id() {
  static std::atomic<uint32_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

namespace {

std::unique_ptr<kv_storage> host_storage_or_throw(uint32_t n_blocks, size_t block_bytes) {
  auto st = host_kv_storage::create(n_blocks, block_bytes);
  if (!st) throw std::bad_alloc();
  return std::move(*st);
}

}  // namespace

kv_block_pool::kv_block_pool(uint32_t pool_id, kv_layout layout, uint32_t n_blocks)
    : kv_block_pool(pool_id, layout, host_storage_or_throw(n_blocks, layout.block_bytes())) {}

kv_block_pool::kv_block_pool(uint32_t pool_id, kv_layout layout, std::unique_ptr<kv_storage> storage)
    : pool_id_(pool_id),
      layout_(layout),
      n_blocks_(storage->n_blocks()),
      tile_bytes_(layout.tile_bytes()),
      v_offset_(size_t{layout.n_layer} * layout.n_head_kv * layout.tile_bytes()),
      storage_(std::move(storage)),
      book_(pool_id, layout.block_tokens, n_blocks_) {
  assert(layout.n_layer > 0 && layout.n_head_kv > 0 && layout.head_dim > 0 && layout.block_tokens > 0);
  assert(layout.dtype != kv_dtype::q8 || (size_t{layout.block_tokens} * layout.head_dim) % 4 == 0);
  assert(storage_->block_bytes() == layout.block_bytes());
}

kv_block_pool::~kv_block_pool() = default;

expected<std::unique_ptr<kv_block_pool>> kv_block_pool::create(uint32_t pool_id, kv_layout layout,
                                                                uint32_t n_blocks) {
  if (layout.n_layer == 0 || layout.n_head_kv == 0 || layout.head_dim == 0 ||
      layout.block_tokens == 0) {
    return make_error(errc::invalid_argument,
                      "kv layout needs n_layer, n_head_kv, head_dim and block_tokens > 0, got " +
                          std::to_string(layout.n_layer) + ", " +
                          std::to_string(layout.n_head_kv) + ", " +
                          std::to_string(layout.head_dim) + ", " +
                          std::to_string(layout.block_tokens));
  }
  if (layout.dtype == kv_dtype::q8 && (size_t{layout.block_tokens} * layout.head_dim) % 4 != 0)
    return make_error(errc::invalid_argument, "a q8 kv cache needs block_tokens * head_dim to be a multiple of 4 (its "
                                              "float scales follow the int8 elements), got " +
                                                  std::to_string(layout.block_tokens) + " * " +
                                                  std::to_string(layout.head_dim));
  const size_t max_blocks = std::numeric_limits<size_t>::max() / layout.block_bytes();
  if (n_blocks > max_blocks) {
    return make_error(errc::out_of_memory, "kv pool of " + std::to_string(n_blocks) +
                                               " blocks does not fit the address space");
  }
  try {
    return std::make_unique<kv_block_pool>(pool_id, layout, n_blocks);
  } catch (const std::bad_alloc&) {
    return make_error(errc::out_of_memory,
                      "cannot allocate a kv pool of " + std::to_string(n_blocks) + " blocks (" +
                          std::to_string(n_blocks * layout.block_bytes() >> 20) + " MiB)");
  }
}

uint32_t kv_block_pool::blocks_for_bytes(kv_layout layout, size_t bytes) {
  const size_t per_block = layout.block_bytes();
  if (per_block == 0) return 0;
  return static_cast<uint32_t>(
      std::min<size_t>(bytes / per_block, std::numeric_limits<uint32_t>::max()));
}

// -- allocation: the book (kv_block_table) under the pool's mutex --

std::optional<kv_handle> kv_block_pool::allocate(uint32_t n_tokens) {
  std::lock_guard lock(mutex_);
  return book_.allocate(n_tokens);
}

bool kv_block_pool::reserve(kv_handle& h, uint32_t n_tokens) {
  std::lock_guard lock(mutex_);
  return book_.grow(h, n_tokens).has_value();
}

expected<void> kv_block_pool::truncate(kv_handle& h, uint32_t n_tokens) {
  std::lock_guard lock(mutex_);
  return book_.truncate(h, n_tokens);
}

expected<void> kv_block_pool::release(kv_handle& h) {
  std::lock_guard lock(mutex_);
  return book_.release(h);
}

uint32_t kv_block_pool::release_epoch(uint32_t epoch) {
  std::lock_guard lock(mutex_);
  return book_.release_epoch(epoch);
}

void kv_block_pool::reset() {
  std::lock_guard lock(mutex_);
  book_.reset();
}

bool kv_block_pool::owns(const kv_handle& h) const {
  std::lock_guard lock(mutex_);
  return book_.check(h).has_value();
}

uint32_t kv_block_pool::free_blocks() const {
  std::lock_guard lock(mutex_);
  return book_.free_blocks();
}

uint32_t kv_block_pool::used_blocks() const { return n_blocks_ - free_blocks(); }

double kv_block_pool::usage() const {
  if (n_blocks_ == 0) return 0.0;
  return static_cast<double>(used_blocks()) / n_blocks_;
}

// -- owner-side operations --

expected<void> kv_block_pool::set_length(kv_handle& h, uint32_t n_tokens) const {
  if (h.pool_id != pool_id_) {
    return make_error(errc::invalid_argument,
                      describe(h) + " does not belong to pool " + std::to_string(pool_id_));
  }
  if (n_tokens > capacity(h)) {
    return make_error(errc::invalid_argument,
                      "length " + std::to_string(n_tokens) + " exceeds the capacity " +
                          std::to_string(capacity(h)) + " of " + describe(h));
  }
  h.n_tokens = n_tokens;
  return {};
}

uint32_t kv_block_pool::capacity(const kv_handle& h) const {
  return static_cast<uint32_t>(h.blocks.size() * layout_.block_tokens);
}

expected<void> kv_block_pool::copy_tokens(const kv_block_pool& src, const kv_handle& from,
                                          kv_handle& to, uint32_t count) {
  if (!layout_.same_token_shape(src.layout_)) {
    return make_error(errc::invalid_argument,
                      "cannot copy kv tokens between pools " + std::to_string(src.pool_id_) +
                          " and " + std::to_string(pool_id_) + ": layouts differ");
  }
  {
    std::lock_guard lock(src.mutex_);
    if (auto ok = src.book_.check(from); !ok) return ok;
  }
  if (from.n_tokens > src.capacity(from)) {
    return make_error(errc::invalid_argument, describe(from) + " claims " +
                                                  std::to_string(from.n_tokens) +
                                                  " tokens, more than its capacity");
  }
  if (&src == this && to.epoch == from.epoch && to.epoch != 0) {
    return make_error(errc::invalid_argument, "cannot copy " + describe(from) + " onto itself");
  }
  {
    std::lock_guard lock(mutex_);
    kv_handle grown = to;
    if (auto ok = book_.grow(grown, std::min(count, from.n_tokens)); !ok) return ok;
    to = std::move(grown);
  }

  const uint32_t n = std::min(count, from.n_tokens);
  const uint32_t src_bt = src.layout_.block_tokens;
  const uint32_t dst_bt = layout_.block_tokens;
  const size_t hd = layout_.head_dim;
  const bool same_tiles = src_bt == dst_bt && src.layout_.dtype == layout_.dtype;
  if (!same_tiles && (!host_addressable() || !src.host_addressable()))
    return make_error(errc::unsupported, "cannot convert kv tokens between pools " + std::to_string(src.pool_id_) +
                                             " and " + std::to_string(pool_id_) + " on a device (block size or type differ)");
  // A device's storage copies in any direction; between host pools, memcpy.
  const kv_storage& via = host_addressable() ? *src.storage_ : *storage_;
  for (uint32_t l = 0; l < layout_.n_layer; ++l) {
    for (uint32_t hh = 0; hh < layout_.n_head_kv; ++hh) {
      if (same_tiles) {
        // Whole tiles at a time (a K tile is transposed: copy all of it).
        const size_t eb = layout_.elem_bytes();
        for (uint32_t t = 0; t < n; t += dst_bt) {
          const uint32_t i = t / dst_bt;
          auto* dk = static_cast<std::byte*>(k_data(to.blocks[i], l, hh));
          auto* dv = static_cast<std::byte*>(v_data(to.blocks[i], l, hh));
          if (auto ok = via.copy(dk, static_cast<const std::byte*>(src.k_data(from.blocks[i], l, hh)), tile_bytes_); !ok) return ok;
          // V rows of the tokens in use (a q8 tile's scales follow its rows: all of it).
          const size_t v_bytes = layout_.dtype == kv_dtype::q8 ? tile_bytes_ : std::min(dst_bt, n - t) * hd * eb;
          if (auto ok = via.copy(dv, static_cast<const std::byte*>(src.v_data(from.blocks[i], l, hh)), v_bytes); !ok)
            return ok;
        }
      } else {  // token by token, converting the element type if it differs
        std::vector<float> kt(hd), vt(hd);
        for (uint32_t t = 0; t < n; ++t) {
          src.read_token(from, t, l, hh, kt.data(), vt.data());
          write_token(to, t, l, hh, kt.data(), vt.data());
        }
      }
    }
  }
  to.n_tokens = n;
  return {};
}

// -- memory --

void* kv_block_pool::k_data(uint32_t block, uint32_t layer, uint32_t head) {
  assert(layer < layout_.n_layer && head < layout_.n_head_kv);
  assert(block < n_blocks_);
  return storage_->block(block) + (size_t{layer} * layout_.n_head_kv + head) * tile_bytes_;
}

const void* kv_block_pool::k_data(uint32_t block, uint32_t layer, uint32_t head) const {
  return const_cast<kv_block_pool*>(this)->k_data(block, layer, head);
}

void* kv_block_pool::v_data(uint32_t block, uint32_t layer, uint32_t head) {
  return static_cast<std::byte*>(k_data(block, layer, head)) + v_offset_;
}

const void* kv_block_pool::v_data(uint32_t block, uint32_t layer, uint32_t head) const {
  return const_cast<kv_block_pool*>(this)->v_data(block, layer, head);
}

float* kv_block_pool::k(uint32_t block, uint32_t layer, uint32_t head) {
  assert(layout_.dtype == kv_dtype::f32);
  return static_cast<float*>(k_data(block, layer, head));
}

const float* kv_block_pool::k(uint32_t block, uint32_t layer, uint32_t head) const {
  return const_cast<kv_block_pool*>(this)->k(block, layer, head);
}

float* kv_block_pool::v(uint32_t block, uint32_t layer, uint32_t head) {
  assert(layout_.dtype == kv_dtype::f32);
  return static_cast<float*>(v_data(block, layer, head));
}

const float* kv_block_pool::v(uint32_t block, uint32_t layer, uint32_t head) const {
  return const_cast<kv_block_pool*>(this)->v(block, layer, head);
}

void kv_block_pool::write_token(const kv_handle& h, uint32_t pos, uint32_t layer, uint32_t head,
                                const float* kv_k, const float* kv_v) {
  const uint32_t bt = layout_.block_tokens, hd = layout_.head_dim;
  assert(pos / bt < h.blocks.size());
  const uint32_t b = h.blocks[pos / bt], t = pos % bt;
  if (layout_.dtype == kv_dtype::q8) {
    auto* kt = static_cast<int8_t*>(k_data(b, layer, head));
    auto* vt = static_cast<int8_t*>(v_data(b, layer, head));
    int8_t kq[1024];
    assert(hd <= 1024);
    q8_tile_scales(kt, bt, hd)[t] = quantize_kv_row(kv_k, hd, kq);
    for (uint32_t e = 0; e < hd; ++e) kt[size_t{e} * bt + t] = kq[e];
    q8_tile_scales(vt, bt, hd)[t] = quantize_kv_row(kv_v, hd, vt + size_t{t} * hd);
    return;
  }
  if (layout_.dtype == kv_dtype::f16) {
    auto* kt = static_cast<uint16_t*>(k_data(b, layer, head)) + t;
    auto* vt = static_cast<uint16_t*>(v_data(b, layer, head)) + size_t{t} * hd;
    cpu::fp32_to_fp16_row(kv_v, vt, hd);  // F16C when the host has it
    uint16_t stack[256];
    std::vector<uint16_t> heap;
    uint16_t* kh = stack;
    if (hd > 256) heap.resize(hd), kh = heap.data();
    cpu::fp32_to_fp16_row(kv_k, kh, hd);
    for (uint32_t e = 0; e < hd; ++e) kt[size_t{e} * bt] = kh[e];
    return;
  }
  float* kt = k(b, layer, head) + t;
  for (uint32_t e = 0; e < hd; ++e) kt[size_t{e} * bt] = kv_k[e];
  std::memcpy(v(b, layer, head) + size_t{t} * hd, kv_v, hd * sizeof(float));
}

void kv_block_pool::read_token(const kv_handle& h, uint32_t pos, uint32_t layer, uint32_t head,
                               float* kv_k, float* kv_v) const {
  const uint32_t bt = layout_.block_tokens, hd = layout_.head_dim;
  assert(pos / bt < h.blocks.size());
  const uint32_t b = h.blocks[pos / bt], t = pos % bt;
  if (layout_.dtype == kv_dtype::q8) {
    const auto* kt = static_cast<const int8_t*>(k_data(b, layer, head));
    const auto* vt = static_cast<const int8_t*>(v_data(b, layer, head));
    const float ks = q8_tile_scales(kt, bt, hd)[t], vs = q8_tile_scales(vt, bt, hd)[t];
    for (uint32_t e = 0; e < hd; ++e) kv_k[e] = ks * kt[size_t{e} * bt + t];
    for (uint32_t e = 0; e < hd; ++e) kv_v[e] = vs * vt[size_t{t} * hd + e];
    return;
  }
  if (layout_.dtype == kv_dtype::f16) {
    const auto* kt = static_cast<const uint16_t*>(k_data(b, layer, head)) + t;
    const auto* vt = static_cast<const uint16_t*>(v_data(b, layer, head)) + size_t{t} * hd;
    for (uint32_t e = 0; e < hd; ++e) kv_k[e] = fp16_to_fp32(kt[size_t{e} * bt]);
    for (uint32_t e = 0; e < hd; ++e) kv_v[e] = fp16_to_fp32(vt[e]);
    return;
  }
  const float* kt = k(b, layer, head) + t;
  for (uint32_t e = 0; e < hd; ++e) kv_k[e] = kt[size_t{e} * bt];
  std::memcpy(kv_v, v(b, layer, head) + size_t{t} * hd, hd * sizeof(float));
}

float* kv_block_pool::v_row(const kv_handle& h, uint32_t pos, uint32_t layer, uint32_t head) {
  const uint32_t bt = layout_.block_tokens;
  assert(pos / bt < h.blocks.size());
  return v(h.blocks[pos / bt], layer, head) + size_t{pos % bt} * layout_.head_dim;
}

const float* kv_block_pool::v_row(const kv_handle& h, uint32_t pos, uint32_t layer,
                                  uint32_t head) const {
  return const_cast<kv_block_pool*>(this)->v_row(h, pos, layer, head);
}

std::span<std::byte> kv_block_pool::block_data(uint32_t block) {
  assert(block < n_blocks_);
  return {storage_->block(block), layout_.block_bytes()};
}

std::span<const std::byte> kv_block_pool::block_data(uint32_t block) const {
  return const_cast<kv_block_pool*>(this)->block_data(block);
}

}  // namespace fw

#include "runtime/kv/kv_stream_writer.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/kv/kv_codec_detail.hpp"

namespace fw {

expected<kv_stream_writer> kv_stream_writer::open(const kv_block_pool& pool, const kv_handle& h, kv_wire wire,
                                                  uint32_t count) {
  if (!pool.owns(h) && !h.empty()) return kv_detail::bad("the handle is not a live allocation of the source pool");
  if (!pool.host_addressable())
    return make_error(errc::unsupported, std::string("kv_codec encodes host pools only; this pool is on ") + pool.where());
  const kv_layout& l = pool.layout();
  if (l.head_dim > 1024) return kv_detail::bad("head_dim above 1024 is not supported");
  kv_stream_writer w;
  w.pool_ = &pool;
  w.blocks_ = h.blocks;
  w.info_.version = kv_stream_version;
  w.info_.wire = wire;
  w.info_.n_layer = l.n_layer;
  w.info_.n_head_kv = l.n_head_kv;
  w.info_.head_dim = l.head_dim;
  w.info_.n_tokens = std::min(count, h.n_tokens);
  w.info_.payload_bytes = kv_detail::payload_for(wire, l.n_layer, l.n_head_kv, l.head_dim, w.info_.n_tokens);
  if (w.info_.payload_bytes == 0 && w.info_.n_tokens > 0) return kv_detail::bad("the sequence is too large to encode");
  w.rb_ = kv_detail::row_bytes(wire, l.head_dim);
  w.size_ = kv_stream_header_bytes + w.info_.payload_bytes;
  return w;
}

size_t kv_stream_writer::next_unit_bytes() const {
  if (!header_done_) return kv_stream_header_bytes;
  return size_t{at_.rows(pool_->layout().block_tokens, info_.n_tokens)} * rb_;
}

void kv_stream_writer::emit_unit(std::byte* out) {
  if (!header_done_) {
    kv_detail::write_header(out, info_, 0);  // the payload checksum comes at the end
    header_done_ = true;
    return;
  }
  const uint32_t bt = pool_->layout().block_tokens;
  const uint32_t cnt = at_.rows(bt, info_.n_tokens);
  kv_detail::tile_rows(*pool_, blocks_[at_.t0 / bt], at_.layer, at_.head, at_.v, cnt, info_.wire, out);
  crc_ = crc32c(std::span<const std::byte>(out, size_t{cnt} * rb_), crc_);
  at_.advance(bt, info_.n_tokens, info_.n_head_kv);
}

size_t kv_stream_writer::read(std::byte* out, size_t max_bytes) {
  size_t n = 0;
  while (n < max_bytes && written_ < size_) {
    if (unit_at_ == unit_.size()) {
      const size_t need = next_unit_bytes();
      if (need <= max_bytes - n) {  // whole: encoded straight into out
        emit_unit(out + n);
        n += need;
        written_ += need;
        continue;
      }
      unit_.resize(need);  // split across reads: through the unit buffer
      emit_unit(unit_.data());
      unit_at_ = 0;
    }
    const size_t k = std::min(max_bytes - n, unit_.size() - unit_at_);
    std::memcpy(out + n, unit_.data() + unit_at_, k);
    unit_at_ += k;
    n += k;
    written_ += k;
  }
  return n;
}

}  // namespace fw

#include "runtime/kv/kv_stream_reader.hpp"

#include <algorithm>
#include <cstring>

#include "runtime/kv/kv_codec_detail.hpp"

namespace fw {

size_t kv_stream_reader::unit_bytes() const {
  if (!header_done_) return kv_stream_header_bytes;
  const uint32_t bt = dst_->layout().block_tokens;
  return size_t{at_.rows(bt, info_.n_tokens)} * rb_;
}

expected<void> kv_stream_reader::consume(const std::byte* unit) {
  if (!header_done_) {
    auto info = kv_detail::read_header(std::span<const std::byte>(unit, kv_stream_header_bytes));
    if (!info) return info.err();
    if (auto ok = kv_detail::check_shape(*info, dst_->layout()); !ok) return ok;
    kv_handle grown = to_;
    if (!dst_->reserve(grown, info->n_tokens))
      return make_error(errc::out_of_memory, "kv stream: the destination pool has too few free blocks for " +
                                                 std::to_string(info->n_tokens) + " tokens");
    to_ = std::move(grown);
    info_ = *info;
    header_crc_ = kv_detail::header_payload_crc(unit);
    rb_ = kv_detail::row_bytes(info_.wire, info_.head_dim);
    payload_left_ = info_.payload_bytes;
    header_done_ = true;
    return {};
  }
  const uint32_t bt = dst_->layout().block_tokens;
  const uint32_t cnt = at_.rows(bt, info_.n_tokens);
  const size_t bytes = size_t{cnt} * rb_;
  // A sender can forge checksums: a row scale that is not a number is refused before it is stored.
  if (!checked_) {
    if (info_.wire == kv_wire::int8 && !kv_detail::int8_scales_ok(unit, cnt, rb_))
      return kv_detail::bad("an int8 row scale is not a finite non-negative number");
    crc_ = crc32c(std::span<const std::byte>(unit, bytes), crc_);
  }
  kv_detail::store_rows(*dst_, to_.blocks[at_.t0 / bt], at_.layer, at_.head, at_.v, cnt, info_.wire, unit);
  payload_left_ -= bytes;
  at_.advance(bt, info_.n_tokens, info_.n_head_kv);
  return {};
}

expected<void> kv_stream_reader::feed(std::span<const std::byte> bytes) {
  if (failed_) return *failed_;
  received_ += bytes.size();
  auto fail = [this](error e) -> expected<void> {
    failed_ = e;
    return e;
  };
  while (!bytes.empty()) {
    if (header_done_ && payload_left_ == 0)
      return fail(kv_detail::bad("trailing bytes: more than the header's " + std::to_string(info_.payload_bytes) +
                                 "-byte payload"));
    const size_t need = unit_bytes();
    if (pending_.empty() && bytes.size() >= need) {
      if (auto ok = consume(bytes.data()); !ok) return fail(ok.err());
      bytes = bytes.subspan(need);
      continue;
    }
    const size_t k = std::min(need - pending_.size(), bytes.size());
    pending_.insert(pending_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(k));
    bytes = bytes.subspan(k);
    if (pending_.size() == need) {
      auto ok = consume(pending_.data());
      pending_.clear();
      if (!ok) return fail(ok.err());
    }
  }
  return {};
}

expected<void> kv_stream_reader::finish(std::optional<uint32_t> payload_crc) {
  if (failed_) return *failed_;
  if (!header_done_)
    return kv_detail::bad("truncated: " + std::to_string(received_) + " bytes, shorter than the " +
                          std::to_string(kv_stream_header_bytes) + "-byte header");
  if (payload_left_ != 0)
    return kv_detail::bad("truncated: payload is " + std::to_string(info_.payload_bytes - payload_left_) +
                          " bytes, the header says " + std::to_string(info_.payload_bytes));
  if (!checked_ && crc_ != payload_crc.value_or(header_crc_)) return kv_detail::bad("payload checksum mismatch (corrupted data)");
  if (auto ok = dst_->set_length(to_, info_.n_tokens); !ok) return ok;
  return {};
}

}  // namespace fw

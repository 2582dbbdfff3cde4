#include "runtime/kv/kv_codec.hpp"
#include "runtime/kv/kv_codec_detail.hpp"
#include "runtime/kv/kv_stream_reader.hpp"
#include "runtime/kv/kv_stream_writer.hpp"

#include <nmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "kernels/cpu/ops.hpp"
#include "kernels/format/kv_q8.hpp"
#include "kernels/format/quant_ref.hpp"

namespace fw {
namespace {

constexpr char magic[4] = {'F', 'W', 'K', 'V'};
// A stream larger than this is refused before anything is allocated (hostile headers).
constexpr uint64_t max_payload = uint64_t{1} << 40;

template <class T>
void put(std::byte* p, T v) { std::memcpy(p, &v, sizeof v); }
template <class T>
T get(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void encode_row(kv_wire w, const float* x, uint32_t hd, std::byte* out) {
  switch (w) {
    case kv_wire::f32: std::memcpy(out, x, size_t{hd} * 4); return;
    case kv_wire::f16: cpu::fp32_to_fp16_row(x, reinterpret_cast<uint16_t*>(out), hd); return;
    case kv_wire::int8: {
      float amax = 0;
      for (uint32_t e = 0; e < hd; ++e) amax = std::max(amax, std::fabs(x[e]));
      const float scale = amax / 127.0f;
      put(out, scale);
      const float inv = scale > 0 ? 1.0f / scale : 0.0f;
      auto* q = reinterpret_cast<int8_t*>(out + 4);
      for (uint32_t e = 0; e < hd; ++e) q[e] = static_cast<int8_t>(std::clamp(std::nearbyint(x[e] * inv), -127.0f, 127.0f));
      return;
    }
  }
}

void decode_row(kv_wire w, const std::byte* in, uint32_t hd, float* x) {
  switch (w) {
    case kv_wire::f32: std::memcpy(x, in, size_t{hd} * 4); return;
    case kv_wire::f16:
      for (uint32_t e = 0; e < hd; ++e) x[e] = fp16_to_fp32(get<uint16_t>(in + 2 * size_t{e}));
      return;
    case kv_wire::int8: {
      const float scale = get<float>(in);
      const auto* q = reinterpret_cast<const int8_t*>(in + 4);
      for (uint32_t e = 0; e < hd; ++e) x[e] = scale * q[e];
      return;
    }
  }
}

/// The wire element type that is the pool's own (rows then copy without conversion).
bool native(kv_wire w, kv_dtype d) {
  return (w == kv_wire::f32 && d == kv_dtype::f32) || (w == kv_wire::f16 && d == kv_dtype::f16);
}

/// K rows [cnt][hd] <-> a K tile [hd][bt] (to_tile: rows into the tile), elements of ES bytes
/// copied as bytes: the rows' side is a stream's bytes, which arrive at any offset (a typed load
/// there is misaligned: undefined behaviour, found by tests/fuzz/fuzz_kv_stream).
template <size_t ES>
void transpose_k(std::byte* tile, std::byte* rows, uint32_t bt, uint32_t hd, uint32_t cnt, bool to_tile) {
  for (uint32_t e = 0; e < hd; ++e)
    for (uint32_t t = 0; t < cnt; ++t) {
      std::byte* in_tile = tile + (size_t{e} * bt + t) * ES;
      std::byte* in_rows = rows + (size_t{t} * hd + e) * ES;
      if (to_tile) std::memcpy(in_tile, in_rows, ES);
      else std::memcpy(in_rows, in_tile, ES);
    }
}

/// Token t's K (transposed in its tile: element e at e * block_tokens + t) or V row as floats.
void row_to_float(const void* tile, kv_dtype d, bool transposed, uint32_t bt, uint32_t hd, uint32_t t, float* x) {
  const size_t stride = transposed ? bt : 1, start = transposed ? t : size_t{t} * hd;
  if (d == kv_dtype::q8) {
    const auto* q = static_cast<const int8_t*>(tile) + start;
    const float s = q8_tile_scales(tile, bt, hd)[t];
    for (uint32_t e = 0; e < hd; ++e) x[e] = s * q[e * stride];
  } else if (d == kv_dtype::f32) {
    const auto* f = static_cast<const float*>(tile) + start;
    for (uint32_t e = 0; e < hd; ++e) x[e] = f[e * stride];
  } else {
    const auto* f = static_cast<const uint16_t*>(tile) + start;
    for (uint32_t e = 0; e < hd; ++e) x[e] = fp16_to_fp32(f[e * stride]);
  }
}

}  // namespace

namespace kv_detail {

error bad(std::string msg) { return make_error(errc::invalid_argument, "kv stream: " + std::move(msg)); }

size_t row_bytes(kv_wire w, uint32_t hd) {
  switch (w) {
    case kv_wire::f32: return size_t{hd} * 4;
    case kv_wire::f16: return size_t{hd} * 2;
    case kv_wire::int8: return 4 + size_t{hd};
  }
  return 0;
}

uint64_t payload_for(kv_wire w, uint32_t layers, uint32_t heads, uint32_t hd, uint32_t n) {
  const unsigned __int128 b = static_cast<unsigned __int128>(layers) * heads * 2 * n * row_bytes(w, hd);
  return b > max_payload ? 0 : static_cast<uint64_t>(b);
}

void tile_rows(const kv_block_pool& pool, uint32_t b, uint32_t layer, uint32_t head, bool v, uint32_t cnt, kv_wire w,
               std::byte* out) {
  const kv_layout& l = pool.layout();
  const uint32_t bt = l.block_tokens, hd = l.head_dim;
  const size_t es = l.elem_bytes(), rb = row_bytes(w, hd);
  const auto* tile = static_cast<const std::byte*>(v ? pool.v_data(b, layer, head) : pool.k_data(b, layer, head));
  if (native(w, l.dtype)) {
    if (v) std::memcpy(out, tile, size_t{cnt} * hd * es);
    else if (es == 2) transpose_k<2>(const_cast<std::byte*>(tile), out, bt, hd, cnt, false);
    else transpose_k<4>(const_cast<std::byte*>(tile), out, bt, hd, cnt, false);
    return;
  }
  float x[1024];
  for (uint32_t t = 0; t < cnt; ++t) {
    row_to_float(tile, l.dtype, !v, bt, hd, t, x);
    encode_row(w, x, hd, out + t * rb);
  }
}

void store_rows(kv_block_pool& pool, uint32_t b, uint32_t layer, uint32_t head, bool v, uint32_t cnt, kv_wire w,
                const std::byte* in) {
  const kv_layout& l = pool.layout();
  const uint32_t bt = l.block_tokens, hd = l.head_dim;
  const size_t es = l.elem_bytes(), rb = row_bytes(w, hd);
  auto* tile = static_cast<std::byte*>(v ? pool.v_data(b, layer, head) : pool.k_data(b, layer, head));
  if (native(w, l.dtype)) {
    if (v) std::memcpy(tile, in, size_t{cnt} * hd * es);
    else if (es == 2) transpose_k<2>(tile, const_cast<std::byte*>(in), bt, hd, cnt, true);
    else transpose_k<4>(tile, const_cast<std::byte*>(in), bt, hd, cnt, true);
    return;
  }
  float x[1024];
  uint16_t h[1024];
  for (uint32_t t = 0; t < cnt; ++t) {
    decode_row(w, in + t * rb, hd, x);
    if (l.dtype == kv_dtype::q8) {
      if (v) {
        q8_tile_scales(tile, bt, hd)[t] = quantize_kv_row(x, hd, reinterpret_cast<int8_t*>(tile) + size_t{t} * hd);
      } else {
        int8_t q[1024];
        q8_tile_scales(tile, bt, hd)[t] = quantize_kv_row(x, hd, q);
        auto* kq = reinterpret_cast<int8_t*>(tile);
        for (uint32_t e = 0; e < hd; ++e) kq[size_t{e} * bt + t] = q[e];
      }
    } else if (l.dtype == kv_dtype::f32) {
      if (v) {
        std::memcpy(tile + size_t{t} * hd * 4, x, size_t{hd} * 4);
      } else {
        auto* kf = reinterpret_cast<float*>(tile);
        for (uint32_t e = 0; e < hd; ++e) kf[size_t{e} * bt + t] = x[e];
      }
    } else if (v) {
      cpu::fp32_to_fp16_row(x, reinterpret_cast<uint16_t*>(tile + size_t{t} * hd * 2), hd);
    } else {
      cpu::fp32_to_fp16_row(x, h, hd);
      auto* kh = reinterpret_cast<uint16_t*>(tile);
      for (uint32_t e = 0; e < hd; ++e) kh[size_t{e} * bt + t] = h[e];
    }
  }
}

bool int8_scales_ok(const std::byte* rows, size_t n_rows, size_t rb) {
  for (size_t r = 0; r < n_rows; ++r) {
    const float sc = get<float>(rows + r * rb);
    if (!std::isfinite(sc) || sc < 0 || !std::isfinite(sc * 127.0f)) return false;
  }
  return true;
}

void write_header(std::byte* hd, const kv_stream_info& in, uint32_t payload_crc) {
  std::memcpy(hd, magic, 4);
  put<uint16_t>(hd + 4, kv_stream_version);
  put<uint8_t>(hd + 6, static_cast<uint8_t>(in.wire));
  put<uint8_t>(hd + 7, 0);
  put<uint32_t>(hd + 8, in.n_layer);
  put<uint32_t>(hd + 12, in.n_head_kv);
  put<uint32_t>(hd + 16, in.head_dim);
  put<uint32_t>(hd + 20, in.n_tokens);
  put<uint64_t>(hd + 24, in.payload_bytes);
  put<uint32_t>(hd + 32, payload_crc);
  put<uint32_t>(hd + 36, crc32c(std::span<const std::byte>(hd, 36)));
}

uint32_t header_payload_crc(const std::byte* hd) { return get<uint32_t>(hd + 32); }

expected<kv_stream_info> read_header(std::span<const std::byte> bytes) {
  if (bytes.size() < kv_stream_header_bytes)
    return bad("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
               std::to_string(kv_stream_header_bytes) + "-byte header");
  const std::byte* h = bytes.data();
  if (std::memcmp(h, magic, 4) != 0) return bad("not a KV stream (bad magic)");
  kv_stream_info in;
  in.version = get<uint16_t>(h + 4);
  if (in.version != kv_stream_version)
    return bad("version " + std::to_string(in.version) + " is not supported (this build reads version " +
               std::to_string(kv_stream_version) + ")");
  if (get<uint32_t>(h + 36) != crc32c(bytes.first(36))) return bad("header checksum mismatch (corrupted header)");
  const auto w = get<uint8_t>(h + 6);
  if (w > static_cast<uint8_t>(kv_wire::int8)) return bad("unknown element format " + std::to_string(w));
  in.wire = static_cast<kv_wire>(w);
  if (get<uint8_t>(h + 7) != 0) return bad("reserved header byte is not 0");
  in.n_layer = get<uint32_t>(h + 8);
  in.n_head_kv = get<uint32_t>(h + 12);
  in.head_dim = get<uint32_t>(h + 16);
  in.n_tokens = get<uint32_t>(h + 20);
  in.payload_bytes = get<uint64_t>(h + 24);
  const uint64_t want = payload_for(in.wire, in.n_layer, in.n_head_kv, in.head_dim, in.n_tokens);
  if ((want == 0 && in.n_tokens > 0 && in.n_layer > 0 && in.n_head_kv > 0 && in.head_dim > 0) ||
      in.payload_bytes != want)
    return bad("the header's payload size " + std::to_string(in.payload_bytes) + " does not match its shape");
  return in;
}

expected<void> check_shape(const kv_stream_info& info, const kv_layout& l) {
  if (info.n_layer != l.n_layer || info.n_head_kv != l.n_head_kv || info.head_dim != l.head_dim)
    return bad("shape " + std::to_string(info.n_layer) + " layers x " + std::to_string(info.n_head_kv) + " KV heads x " +
               std::to_string(info.head_dim) + " does not match the destination pool's " + std::to_string(l.n_layer) +
               " x " + std::to_string(l.n_head_kv) + " x " + std::to_string(l.head_dim));
  if (l.head_dim > 1024) return bad("head_dim above 1024 is not supported");
  return {};
}

}  // namespace kv_detail

namespace {

__attribute__((target("sse4.2"))) uint32_t crc32c_hw(const std::byte* p, size_t n, uint32_t crc) {
  uint64_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) c = _mm_crc32_u64(c, get<uint64_t>(p));
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = _mm_crc32_u8(c32, static_cast<uint8_t>(*p));
  return ~c32;
}

uint32_t crc32c_sw(const std::byte* p, size_t n, uint32_t crc) {
  uint32_t c = ~crc;
  for (size_t i = 0; i < n; ++i) {
    c ^= static_cast<uint8_t>(p[i]);
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

}  // namespace

const char* to_string(kv_wire w) {
  switch (w) {
    case kv_wire::f32: return "f32";
    case kv_wire::f16: return "f16";
    case kv_wire::int8: return "int8";
  }
  return "?";
}

uint32_t crc32c(std::span<const std::byte> bytes, uint32_t crc) {
  static const bool hw = __builtin_cpu_supports("sse4.2");
  return hw ? crc32c_hw(bytes.data(), bytes.size(), crc) : crc32c_sw(bytes.data(), bytes.size(), crc);
}

uint64_t kv_f32_bytes(const kv_layout& l, uint32_t n) {
  return uint64_t{l.n_layer} * l.n_head_kv * 2 * n * l.head_dim * 4;
}

expected<std::vector<std::byte>> kv_encode(const kv_block_pool& pool, const kv_handle& h, kv_wire wire, uint32_t count) {
  auto w = kv_stream_writer::open(pool, h, wire, count);
  if (!w) return w.err();
  std::vector<std::byte> out(w->size());
  w->read(out.data(), out.size());
  kv_stream_info in;
  in.wire = wire;
  in.n_layer = pool.layout().n_layer;
  in.n_head_kv = pool.layout().n_head_kv;
  in.head_dim = pool.layout().head_dim;
  in.n_tokens = w->tokens();
  in.payload_bytes = w->size() - kv_stream_header_bytes;
  kv_detail::write_header(out.data(), in, w->payload_crc());  // whole: the checksum in its header
  return out;
}

expected<kv_stream_info> kv_peek(std::span<const std::byte> bytes) {
  auto in = kv_detail::read_header(bytes);
  if (!in) return in;
  const uint64_t want = in->payload_bytes, got = bytes.size() - kv_stream_header_bytes;
  if (got != want)
    return kv_detail::bad(std::string(got < want ? "truncated" : "trailing bytes") + ": payload is " + std::to_string(got) +
                          " bytes, the header says " + std::to_string(want));
  return in;
}

expected<void> kv_decode(std::span<const std::byte> bytes, kv_block_pool& dst, kv_handle& to) {
  auto info = kv_peek(bytes);
  if (!info) return info.err();
  if (auto ok = kv_detail::check_shape(*info, dst.layout()); !ok) return ok;
  if (!dst.host_addressable())
    return make_error(errc::unsupported, std::string("kv_codec decodes into host pools only; this pool is on ") + dst.where());
  const auto payload = bytes.subspan(kv_stream_header_bytes);
  if (kv_detail::header_payload_crc(bytes.data()) != crc32c(payload))
    return kv_detail::bad("payload checksum mismatch (corrupted data)");
  // A sender can forge checksums: every int8 row scale is checked before anything is written.
  if (info->wire == kv_wire::int8) {
    const size_t rb = kv_detail::row_bytes(kv_wire::int8, info->head_dim);
    if (!kv_detail::int8_scales_ok(payload.data(), payload.size() / rb, rb))
      return kv_detail::bad("an int8 row scale is not a finite non-negative number");
  }
  kv_stream_reader r(dst, to, /*payload_checked=*/true);
  if (auto ok = r.feed(bytes); !ok) return ok;
  if (auto ok = r.finish(); !ok) return ok;
  to = r.take();
  return {};
}

}  // namespace fw

// fw_dot_ref: the scalar reference kernels of flywheel's own formats (kernels/format/fw_formats):
// the activation quantizers (int8 per token for W8A8, int16 per token for W4A16) and the dot
// products. Integer sums are exact; the float steps are fixed here, so the SIMD paths (which
// keep the same steps) match them bit for bit. Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace fw::cpu::ref {

/// k floats -> one int8 activation row (act_i8_row_bytes(k) bytes), one scale per group of
/// act_i8_group(k) channels. fixed_scale > 0: a static per-tensor scale from calibration for
/// every group (values beyond it saturate); otherwise each group's max |x| / 127.
void quantize_act_i8(const float* x, void* y, int64_t k, float fixed_scale);
/// k floats (k % 32 == 0) -> one int16 activation row with its 32-element chunk sums.
void quantize_act_i16(const float* x, void* y, int64_t k, float fixed_scale);

/// fw_w8a8 row . int8 activation row: per group, in order, acc = fma(d_group, (float)
/// sum(qw * qx), acc); the result is acc * dw.
float dot_w8a8(int64_t k, const void* w, const void* x);
/// fw_w4a16 row (groups of G) . int16 activation row: per group, in order,
/// acc += fma(d, (float) sum(q * qx), m * (float) sum(qx)); the result is acc * dx.
template <int G> float dot_w4a16(int64_t k, const void* w, const void* x);

}  // namespace fw::cpu::ref

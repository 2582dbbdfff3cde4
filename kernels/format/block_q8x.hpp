// block_q8x: the activation format of the integer dot products: 32 activations quantized to int8
// with one float scale and their sum (llama.cpp's q8_1 idea), made on the fly from f32 rows.
// Thread-safety: plain value.
#pragma once

#include <cstdint>

namespace fw::cpu {

/// 32 activations quantized to int8 with one scale: x ~= d * qs[i]; sum = sum of qs.
struct block_q8x {
  float d;
  int32_t sum;
  int8_t qs[32];
};
static_assert(sizeof(block_q8x) == 40);

}  // namespace fw::cpu

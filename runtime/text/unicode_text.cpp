#include "runtime/text/unicode_text.hpp"

#include <utf8proc.h>

#include <array>

namespace fw {
namespace {

constexpr uint32_t max_codepoint = 0x10FFFF;

bool is_white_space(uint32_t cpt) {
  // The Unicode White_Space property; the same set as llama.cpp's unicode_set_whitespace.
  switch (cpt) {
    case 0x0009: case 0x000A: case 0x000B: case 0x000C: case 0x000D: case 0x0020:
    case 0x0085: case 0x00A0: case 0x1680: case 0x2028: case 0x2029: case 0x202F:
    case 0x205F: case 0x3000:
      return true;
    default:
      return cpt >= 0x2000 && cpt <= 0x200A;
  }
}

uint16_t category_bits(uint32_t cpt) {
  if (cpt > max_codepoint) return codepoint_flags::undefined;
  uint16_t bits = 0;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cpt))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
      bits = codepoint_flags::letter; break;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
      bits = codepoint_flags::mark; break;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      bits = codepoint_flags::number; break;
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      bits = codepoint_flags::punctuation; break;
    case UTF8PROC_CATEGORY_SM: case UTF8PROC_CATEGORY_SC: case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
      bits = codepoint_flags::symbol; break;
    case UTF8PROC_CATEGORY_ZS: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
      bits = codepoint_flags::separator; break;
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
      bits = codepoint_flags::control; break;
    default:
      bits = codepoint_flags::undefined; break;
  }
  if (bits == codepoint_flags::undefined) {
    // Assigned in Unicode 15.1, which llama.cpp's tables know and utf8proc 2.6 does not.
    if ((cpt >= 0x2FFC && cpt <= 0x2FFF) || cpt == 0x31EF) bits = codepoint_flags::symbol;
    else if (cpt >= 0x2EBF0 && cpt <= 0x2EE5D) bits = codepoint_flags::letter;  // CJK Ext. I
  }
  if (is_white_space(cpt)) bits |= codepoint_flags::whitespace;
  return bits;
}

struct byte_tables {
  std::array<std::string, 256> byte_to_text;
  std::array<int16_t, 512> cpt_to_byte;  // every bytes_to_unicode image is below U+0200

  byte_tables() {
    cpt_to_byte.fill(-1);
    auto printable = [](int b) {
      return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      uint32_t cpt = printable(b) ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + next++);
      byte_to_text[b] = codepoint_to_utf8(cpt);
      cpt_to_byte[cpt] = static_cast<int16_t>(b);
    }
  }
};

const byte_tables& tables() {
  static const byte_tables t;
  return t;
}

}  // namespace

codepoint_flags codepoint_category(uint32_t cpt) {
  static const auto ascii = [] {
    std::array<uint16_t, 128> a{};
    for (uint32_t c = 0; c < 128; ++c) a[c] = category_bits(c);
    return a;
  }();
  if (cpt < 128) return codepoint_flags{ascii[cpt]};
  return codepoint_flags{category_bits(cpt)};
}

uint32_t codepoint_to_lower(uint32_t cpt) {
  if (cpt > max_codepoint) return cpt;
  return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cpt)));
}

uint32_t utf8_decode_one(std::string_view text, size_t& offset) {
  auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  auto cont = [&](size_t i) { return i < text.size() && (byte(i) & 0xC0) == 0x80; };
  const uint8_t b0 = byte(offset);
  if (b0 < 0x80) {
    offset += 1;
    return b0;
  }
  if ((b0 & 0xE0) == 0xC0) {
    if (cont(offset + 1)) {
      uint32_t cpt = ((b0 & 0x1Fu) << 6) | (byte(offset + 1) & 0x3Fu);
      offset += 2;
      return cpt;
    }
  } else if ((b0 & 0xF0) == 0xE0) {
    if (cont(offset + 1) && cont(offset + 2)) {
      uint32_t cpt = ((b0 & 0x0Fu) << 12) | ((byte(offset + 1) & 0x3Fu) << 6) |
                     (byte(offset + 2) & 0x3Fu);
      offset += 3;
      return cpt;
    }
  } else if ((b0 & 0xF8) == 0xF0) {
    if (cont(offset + 1) && cont(offset + 2) && cont(offset + 3)) {
      uint32_t cpt = ((b0 & 0x07u) << 18) | ((byte(offset + 1) & 0x3Fu) << 12) |
                     ((byte(offset + 2) & 0x3Fu) << 6) | (byte(offset + 3) & 0x3Fu);
      if (cpt <= max_codepoint) {
        offset += 4;
        return cpt;
      }
    }
  }
  offset += 1;  // a stray continuation byte, 0xF8..0xFF, or a truncated/broken sequence
  return replacement_codepoint;
}

std::vector<uint32_t> utf8_to_codepoints(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  size_t offset = 0;
  while (offset < text.size()) out.push_back(utf8_decode_one(text, offset));
  return out;
}

void append_utf8(std::string& out, uint32_t cpt) {
  if (cpt <= 0x7F) {
    out.push_back(static_cast<char>(cpt));
  } else if (cpt <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (cpt >> 6)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else if (cpt <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (cpt >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | ((cpt >> 18) & 0x07)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cpt >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cpt & 0x3F)));
  }
}

std::string codepoint_to_utf8(uint32_t cpt) {
  std::string s;
  append_utf8(s, cpt);
  return s;
}

size_t utf8_sequence_length(uint8_t lead) {
  static constexpr size_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lookup[lead >> 4];
}

size_t utf8_incomplete_tail(std::string_view text) {
  // Walk back over at most three continuation bytes to the lead byte of the last sequence.
  const size_t n = text.size();
  for (size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto b = static_cast<uint8_t>(text[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t need = 0;
    if ((b & 0xE0) == 0xC0) need = 2;
    else if ((b & 0xF0) == 0xE0) need = 3;
    else if ((b & 0xF8) == 0xF0) need = 4;
    return (need > back) ? back : 0;  // truncated sequence -> hold it; else complete/invalid
  }
  return 0;
}

const std::string& byte_to_unicode_text(uint8_t byte) { return tables().byte_to_text[byte]; }

std::optional<uint8_t> unicode_to_byte(uint32_t cpt) {
  if (cpt >= 512) return std::nullopt;
  int16_t b = tables().cpt_to_byte[cpt];
  if (b < 0) return std::nullopt;
  return static_cast<uint8_t>(b);
}

}  // namespace fw

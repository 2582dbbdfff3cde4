#include "runtime/quant/calibration_set.hpp"

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

namespace fw {
namespace {

bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (int j = 1; j < n; ++j)
      if ((static_cast<unsigned char>(s[i + j]) & 0xc0) != 0x80) return false;
    i += n;
  }
  return true;
}

std::string unescape(const std::string& line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == 'n') {
      out += '\n';
      ++i;
    } else {
      out += line[i];
    }
  }
  return out;
}

}  // namespace

expected<std::vector<std::string>> parse_calibration_text(const std::string& text, const std::string& path,
                                                          const calibration_options& o) {
  if (text.empty()) return make_error(errc::invalid_argument, "calibration file " + path + " is empty");
  if (text.find('\0') != std::string::npos)
    return make_error(errc::invalid_argument, "calibration file " + path +
                                                  " is binary (it holds NUL bytes); give a text file with one query per line");
  std::vector<std::string> queries;
  std::istringstream in(text);
  std::string line;
  size_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    if (!valid_utf8(line))
      return make_error(errc::invalid_argument, "calibration file " + path + ", line " + std::to_string(line_no) +
                                                    ": not valid UTF-8 (is this a text file?)");
    queries.push_back(unescape(line));
  }
  if (queries.size() < o.min_queries)
    return make_error(errc::invalid_argument,
                      "calibration file " + path + " holds " + std::to_string(queries.size()) + " quer" +
                          (queries.size() == 1 ? "y" : "ies") + "; calibration needs at least " +
                          std::to_string(o.min_queries) + " (one per line, like the queries you serve)");
  // The longest N; ties keep file order, so the choice is deterministic.
  std::vector<size_t> idx(queries.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  if (o.longest_first)
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return queries[a].size() > queries[b].size(); });
  if (idx.size() > o.max_queries) idx.resize(o.max_queries);
  std::vector<std::string> out;
  for (size_t i : idx) out.push_back(queries[i]);
  if (o.noise > 0) {
    const size_t n_noisy = static_cast<size_t>(o.noise * static_cast<double>(out.size()) + 0.5);
    for (size_t i = 0; i < n_noisy && i < idx.size(); ++i) out.push_back(perturb_text(out[i], o.seed + i));
  }
  return out;
}

expected<std::vector<std::string>> read_calibration_file(const std::string& path, const calibration_options& o) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error(errc::io_error, "calibration file " + path + " cannot be opened");
  std::ostringstream ss;
  ss << f.rdbuf();
  return parse_calibration_text(ss.str(), path, o);
}

std::string perturb_text(const std::string& text, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out;
  out.reserve(text.size() + 8);
  std::uniform_int_distribution<int> every(0, 11), kind(0, 3), letter(0, 25);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool ascii_letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!ascii_letter || every(rng) != 0) {
      out += c;
      continue;
    }
    switch (kind(rng)) {
      case 0:  // swap with the next letter
        if (i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0x80) {
          out += text[i + 1];
          out += c;
          ++i;
        } else {
          out += c;
        }
        break;
      case 1: break;  // drop
      case 2: out += c, out += c; break;
      default: out += static_cast<char>('a' + letter(rng)); break;
    }
  }
  return out;
}

}  // namespace fw

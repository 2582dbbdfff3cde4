#include "runtime/text/stop_matcher.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace fw {
namespace {

// Feeds chunks; returns everything emitted (plus flush when no stop) and the stop index or -1.
struct outcome {
  std::string text;
  int stop = -1;
  bool operator==(const outcome&) const = default;
};

outcome feed_all(stop_matcher& m, const std::vector<std::string>& chunks) {
  outcome out;
  for (const std::string& c : chunks) {
    auto r = m.feed(c);
    out.text += r.emit;
    if (r.stopped) {
      out.stop = static_cast<int>(r.stop_index);
      return out;
    }
  }
  out.text += m.flush();
  return out;
}

TEST(stop_matcher_test, no_stops_passes_text_through) {
  stop_matcher m({});
  EXPECT_EQ(m.feed("hello").emit, "hello");
  EXPECT_EQ(m.feed(" world").emit, " world");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.flush(), "");
}

TEST(stop_matcher_test, stop_in_one_chunk) {
  stop_matcher m({"</s>", "END"});
  auto r = m.feed("Hello END world");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "Hello ");
  EXPECT_EQ(r.stop_index, 1u);
  EXPECT_TRUE(m.stopped());
  r = m.feed("more");  // dropped after the stop
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.emit, "");
  EXPECT_EQ(m.flush(), "");
}

TEST(stop_matcher_test, stop_across_chunk_boundaries) {
  stop_matcher m({"END"});
  auto r = m.feed("Hel");
  EXPECT_EQ(r.emit, "Hel");
  r = m.feed("lo E");
  EXPECT_EQ(r.emit, "lo ");  // "E" held back
  EXPECT_EQ(m.held_bytes(), 1u);
  r = m.feed("N");
  EXPECT_EQ(r.emit, "");
  EXPECT_FALSE(r.stopped);
  r = m.feed("D and more");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
}

TEST(stop_matcher_test, held_prefix_is_released_when_it_diverges) {
  stop_matcher m({"END"});
  EXPECT_EQ(m.feed("a E").emit, "a ");
  EXPECT_EQ(m.feed("N").emit, "");
  EXPECT_EQ(m.feed("x").emit, "ENx");
  EXPECT_EQ(m.feed("EN").emit, "");
  EXPECT_EQ(m.flush(), "EN");  // the end of generation releases the held text
}

TEST(stop_matcher_test, held_text_may_restart_a_match) {
  stop_matcher m({"abab"});
  EXPECT_EQ(m.feed("aba").emit, "");
  auto r = m.feed("b");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
  m.reset();
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.feed("abaab").emit, "aba");  // "ab" may still start "abab"
  r = m.feed("ab!");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emit, "");
}

TEST(stop_matcher_test, first_completed_stop_wins) {
  stop_matcher m({"abcd", "bc"});
  auto r = m.feed("xabcd");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.stop_index, 1u);
  EXPECT_EQ(r.emit, "xa");

  stop_matcher same_end({"c", "abc"});
  r = same_end.feed("xabc");
  EXPECT_EQ(r.stop_index, 1u);  // both end at the same byte: the longer one
  EXPECT_EQ(r.emit, "x");
}

TEST(stop_matcher_test, multibyte_stop_strings) {
  stop_matcher m({"\xE3\x80\x82"});  // U+3002 ideographic full stop
  std::string text = "\xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x82\xE5\x86\x8D";
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  const outcome o = feed_all(m, bytes);
  EXPECT_EQ(o.stop, 0);
  EXPECT_EQ(o.text, "\xE4\xBD\xA0\xE5\xA5\xBD");
}

TEST(stop_matcher_test, chunking_does_not_change_the_result) {
  const std::vector<std::string> stops = {"abc", "bca", "cc", "aaaa"};
  std::mt19937 rng(11);
  for (int trial = 0; trial < 500; ++trial) {
    std::string text;
    const int len = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < len; ++i) text += "abcx"[rng() % 4];

    std::vector<std::string> bytes;
    for (char c : text) bytes.emplace_back(1, c);
    stop_matcher by_byte(stops);
    const outcome expect = feed_all(by_byte, bytes);

    std::vector<std::string> chunks;
    for (size_t pos = 0; pos < text.size();) {
      const size_t n = 1 + rng() % 6;
      chunks.push_back(text.substr(pos, n));
      pos += n;
    }
    stop_matcher by_chunk(stops);
    EXPECT_EQ(feed_all(by_chunk, chunks), expect) << text;

    stop_matcher whole(stops);
    EXPECT_EQ(feed_all(whole, {text}), expect) << text;

    // The result is the text up to the first completed stop (or all of it).
    size_t cut = std::string::npos;
    for (size_t end = 1; end <= text.size() && cut == std::string::npos; ++end)
      for (const std::string& s : stops)
        if (end >= s.size() && text.compare(end - s.size(), s.size(), s) == 0) {
          cut = end - s.size();
          break;
        }
    EXPECT_EQ(expect.text, text.substr(0, cut)) << text;
  }
}

TEST(stop_matcher_test, never_streams_a_partial_stop_string) {
  const std::vector<std::string> stops = {"<|end|>", "\n\nUser:"};
  const std::string text = "Sure. <|en then \n\nUse more <|end";
  stop_matcher m(stops);
  std::string streamed;
  for (size_t i = 0; i < text.size(); ++i) {
    auto r = m.feed(text.substr(i, 1));
    streamed += r.emit;
    ASSERT_FALSE(r.stopped);
    // streamed + held is what came in, and what is held is a proper prefix of a stop string.
    const std::string consumed = text.substr(0, i + 1);
    ASSERT_EQ(streamed.size() + m.held_bytes(), consumed.size());
    ASSERT_EQ(streamed, consumed.substr(0, streamed.size()));
    const std::string held = consumed.substr(streamed.size());
    bool prefix = held.empty();
    for (const std::string& s : stops) prefix |= held.size() < s.size() && s.starts_with(held);
    EXPECT_TRUE(prefix) << "held: " << held;
  }
  EXPECT_EQ(streamed, "Sure. <|en then \n\nUse more ");
  EXPECT_EQ(m.flush(), "<|end");
}

}  // namespace
}  // namespace fw

#include "runtime/supervise/rollout_breaker.hpp"

#include <algorithm>
#include <cstdio>

namespace fw {
namespace {

std::string pct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", v * 100);
  return b;
}

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f ms", s * 1000);
  return b;
}

}  // namespace

const char* rollout_stage_name(uint32_t stage) {
  switch (stage) {
    case 1: return "quantization";
    case 2: return "+ speculation";
    case 3: return "+ logical PD";
    case 4: return "+ physical PD and offload";
  }
  return "?";
}

rollout_breaker::rollout_breaker(rollout_limits limits) : limits_(limits) {
  stage_ = std::clamp<uint32_t>(limits_.start_stage, 1, 4);
}

uint32_t rollout_breaker::assign(uint64_t id) const {
  if (stage_ == 1) return 1;
  // A stable spread of ids over [0, 1): splitmix64's finalizer.
  uint64_t x = id + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  const double u = static_cast<double>(x >> 11) / static_cast<double>(1ull << 53);
  return u < limits_.shares[stage_ - 1] ? stage_ : stage_ - 1;
}

rollout_stage_stats rollout_breaker::stats(uint32_t stage) const {
  rollout_stage_stats s;
  if (stage < 1 || stage > 4) return s;
  const auto& w = outcomes_[stage];
  s.requests = w.size();
  if (w.empty()) return s;
  std::vector<double> lat;
  uint64_t errors = 0, proposals = 0, failures = 0;
  for (const auto& o : w) {
    if (!o.error) lat.push_back(o.per_token_s);
    errors += o.error;
    proposals += o.proposals;
    failures += o.draft_failures;
  }
  if (!lat.empty()) {
    const size_t k = std::min(lat.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(lat.size())));
    std::nth_element(lat.begin(), lat.begin() + k, lat.end());
    s.p99_per_token_s = lat[k];
  }
  s.error_rate = static_cast<double>(errors) / static_cast<double>(w.size());
  s.draft_failure = proposals ? static_cast<double>(failures) / static_cast<double>(proposals) : 0.0;
  return s;
}

void rollout_breaker::move_to(uint32_t to, double now_s, std::string why) {
  decisions_.push_back({now_s, stage_, to, std::move(why)});
  stage_ = to;
  healthy_run_ = 0;
  outcomes_[to].clear();  // the new mix is judged afresh
}

bool rollout_breaker::record(uint32_t stage, const rollout_outcome& o, double now_s) {
  if (stage < 1 || stage > 4) return false;
  auto& w = outcomes_[stage];
  w.push_back(o);
  while (w.size() > limits_.window) w.pop_front();
  if (stage != stage_) return false;  // only the stage rolling out is judged
  const rollout_stage_stats now = stats(stage_);
  if (now.requests < limits_.min_requests) return false;
  const rollout_stage_stats prev = stats(stage_ - 1);
  std::string why;
  if (now.error_rate > limits_.max_error_rate) {
    why = "errors " + pct(now.error_rate) + " > " + pct(limits_.max_error_rate);
  } else if (now.draft_failure > limits_.max_draft_failure) {
    why = "draft failures " + pct(now.draft_failure) + " > " + pct(limits_.max_draft_failure);
  } else if (prev.requests >= limits_.min_requests && prev.p99_per_token_s > 0 &&
             now.p99_per_token_s > limits_.p99_ratio * prev.p99_per_token_s) {
    why = "P99 " + ms(now.p99_per_token_s) + "/token > " + pct(limits_.p99_ratio) + " of stage " +
          std::to_string(stage_ - 1) + "'s " + ms(prev.p99_per_token_s);
  }
  if (!why.empty()) {
    cooldown_until_ = now_s + limits_.cooldown_s;
    if (stage_ == 1) {  // nothing to fall back to: it stays, and waits out the cool-down
      healthy_run_ = 0;
      return false;
    }
    move_to(stage_ - 1, now_s, "breaker: stage " + std::to_string(stage_) + " " + why);
    return true;
  }
  if (++healthy_run_ >= limits_.advance_after && stage_ < 4 && now_s >= cooldown_until_) {
    move_to(stage_ + 1, now_s, "stage " + std::to_string(stage_) + " healthy for " +
                                   std::to_string(limits_.advance_after) + " requests");
    return true;
  }
  return false;
}

}  // namespace fw

#include "runtime/metrics/metrics_registry.hpp"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>

namespace fw {

// -- bucket sets --

namespace metric_buckets {

const std::vector<double>& time_to_first_token() {
  static const std::vector<double> b = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,   0.75,
                                        1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
  return b;
}

const std::vector<double>& inter_token_latency() {
  static const std::vector<double> b = {0.001, 0.0025, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.075,
                                        0.1,   0.15,   0.2,   0.3,    0.4,  0.5,   0.75, 1.0,
                                        2.5,   5.0,    7.5,   10.0,   20.0, 40.0,  80.0};
  return b;
}

const std::vector<double>& e2e_request_latency() {
  static const std::vector<double> b = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                        30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
  return b;
}

const std::vector<double>& prefill_to_decode_latency() {
  static const std::vector<double> b = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                        0.025,  0.05,    0.1,    0.25,  0.5,    1.0,  2.5};
  return b;
}

}  // namespace metric_buckets

// -- metrics --

void counter_metric::inc(double v) {
  if (!(v >= 0.0)) return;
  value_.fetch_add(v, std::memory_order_relaxed);
}

void counter_metric::advance_to(double v) {
  double cur = value_.load(std::memory_order_relaxed);
  while (v > cur && !value_.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

void gauge_metric::add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }

histogram_metric::histogram_metric(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void histogram_metric::observe(double v) {
  if (std::isnan(v)) return;
  const size_t bucket = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[bucket];
  ++count_;
  sum_ += v;
}

histogram_metric::snapshot histogram_metric::read() const {
  snapshot s;
  s.bounds = bounds_;
  s.cumulative.resize(bounds_.size());
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t running = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) s.cumulative[i] = running += counts_[i];
  s.count = count_;
  s.sum = sum_;
  return s;
}

// -- registry --

struct metrics_registry::child {
  metric_labels labels;
  std::unique_ptr<counter_metric> c;
  std::unique_ptr<gauge_metric> g;
  std::unique_ptr<histogram_metric> h;
};

struct metrics_registry::family {
  std::string name;
  std::string help;
  metric_type type;
  std::vector<double> bounds;
  std::vector<std::unique_ptr<child>> children;
};

namespace {

bool name_char(char c, bool first, bool colon) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
  return alpha || (!first && c >= '0' && c <= '9');
}

bool valid_name(std::string_view name, bool colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (!name_char(name[i], i == 0, colon)) return false;
  return true;
}

bool valid_bounds(const std::vector<double>& bounds) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) return false;
    if (i > 0 && !(bounds[i] > bounds[i - 1])) return false;
  }
  return true;
}

const char* type_name(metrics_registry::metric_type t) {
  switch (t) {
    case metrics_registry::metric_type::counter: return "counter";
    case metrics_registry::metric_type::gauge: return "gauge";
    case metrics_registry::metric_type::histogram: return "histogram";
  }
  return "untyped";
}

void append_escaped(std::string& out, std::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (quote && c == '"') out += "\\\"";
    else out += c;
  }
}

// {a="x",b="y"} plus an optional le label; nothing when there are no labels.
void append_labels(std::string& out, const metric_labels& labels, const std::string* le) {
  if (labels.empty() && !le) return;
  out += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ',';
    first = false;
    out += k;
    out += "=\"";
    append_escaped(out, v, true);
    out += '"';
  }
  if (le) {
    if (!first) out += ',';
    out += "le=\"";
    out += *le;
    out += '"';
  }
  out += '}';
}

void append_sample(std::string& out, const std::string& name, std::string_view suffix, const metric_labels& labels,
                   const std::string* le, double v) {
  out += name;
  out += suffix;
  append_labels(out, labels, le);
  out += ' ';
  out += metrics_registry::format_value(v);
  out += '\n';
}

}  // namespace

metrics_registry::metrics_registry() = default;
metrics_registry::~metrics_registry() = default;

bool metrics_registry::valid_metric_name(std::string_view name) { return valid_name(name, true); }

bool metrics_registry::valid_label_name(std::string_view name) {
  return valid_name(name, false) && name != "le" && name.substr(0, 2) != "__";
}

std::string metrics_registry::format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

metrics_registry::child* metrics_registry::find_or_add(std::string_view name, std::string_view help,
                                                       metric_type type, const std::vector<double>* bounds,
                                                       const metric_labels& labels) {
  bool ok = valid_metric_name(name) && (!bounds || valid_bounds(*bounds));
  for (size_t i = 0; ok && i < labels.size(); ++i) {
    ok = valid_label_name(labels[i].first);
    for (size_t j = 0; ok && j < i; ++j) ok = labels[j].first != labels[i].first;
  }
  assert(ok && "metrics_registry: invalid metric name, label name or buckets");
  if (!ok) return nullptr;

  family* fam = nullptr;
  for (auto& f : families_)
    if (f->name == name) fam = f.get();
  if (!fam) {
    auto f = std::make_unique<family>();
    f->name = std::string(name);
    f->help = std::string(help);
    f->type = type;
    if (bounds) f->bounds = *bounds;
    fam = f.get();
    families_.push_back(std::move(f));
  } else {
    const bool same = fam->type == type && fam->help == help && (!bounds || fam->bounds == *bounds);
    assert(same && "metrics_registry: a metric name registered again with another type, help or buckets");
    if (!same) return nullptr;
  }
  for (auto& c : fam->children)
    if (c->labels == labels) return c.get();
  auto c = std::make_unique<child>();
  c->labels = labels;
  switch (type) {
    case metric_type::counter: c->c = std::make_unique<counter_metric>(); break;
    case metric_type::gauge: c->g = std::make_unique<gauge_metric>(); break;
    case metric_type::histogram: c->h = std::make_unique<histogram_metric>(fam->bounds); break;
  }
  fam->children.push_back(std::move(c));
  return fam->children.back().get();
}

counter_metric& metrics_registry::counter(std::string_view name, std::string_view help, const metric_labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (child* c = find_or_add(name, help, metric_type::counter, nullptr, labels)) return *c->c;
  detached_counters_.push_back(std::make_unique<counter_metric>());
  return *detached_counters_.back();
}

gauge_metric& metrics_registry::gauge(std::string_view name, std::string_view help, const metric_labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (child* c = find_or_add(name, help, metric_type::gauge, nullptr, labels)) return *c->g;
  detached_gauges_.push_back(std::make_unique<gauge_metric>());
  return *detached_gauges_.back();
}

histogram_metric& metrics_registry::histogram(std::string_view name, std::string_view help,
                                              const std::vector<double>& bounds, const metric_labels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (child* c = find_or_add(name, help, metric_type::histogram, &bounds, labels)) return *c->h;
  detached_histograms_.push_back(std::make_unique<histogram_metric>(bounds));
  return *detached_histograms_.back();
}

counter_metric& metrics_registry::counter(const metric_series& s, const metric_labels& labels) {
  assert(s.type == series_type::counter);
  return counter(s.name, s.help, labels);
}

gauge_metric& metrics_registry::gauge(const metric_series& s, const metric_labels& labels) {
  assert(s.type == series_type::gauge);
  return gauge(s.name, s.help, labels);
}

histogram_metric& metrics_registry::histogram(const metric_series& s, const metric_labels& labels) {
  assert(s.type == series_type::histogram && s.buckets);
  return histogram(s.name, s.help, s.buckets(), labels);
}

std::string metrics_registry::render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const auto& f : families_) {
    out += "# HELP ";
    out += f->name;
    out += ' ';
    append_escaped(out, f->help, false);
    out += "\n# TYPE ";
    out += f->name;
    out += ' ';
    out += type_name(f->type);
    out += '\n';
    for (const auto& c : f->children) {
      switch (f->type) {
        case metric_type::counter: append_sample(out, f->name, "", c->labels, nullptr, c->c->value()); break;
        case metric_type::gauge: append_sample(out, f->name, "", c->labels, nullptr, c->g->value()); break;
        case metric_type::histogram: {
          const auto s = c->h->read();
          for (size_t i = 0; i < s.bounds.size(); ++i) {
            const std::string le = format_value(s.bounds[i]);
            append_sample(out, f->name, "_bucket", c->labels, &le, static_cast<double>(s.cumulative[i]));
          }
          const std::string inf = "+Inf";
          append_sample(out, f->name, "_bucket", c->labels, &inf, static_cast<double>(s.count));
          append_sample(out, f->name, "_sum", c->labels, nullptr, s.sum);
          append_sample(out, f->name, "_count", c->labels, nullptr, static_cast<double>(s.count));
          break;
        }
      }
    }
  }
  return out;
}

}  // namespace fw

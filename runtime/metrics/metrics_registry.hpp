// metrics_registry: the runtime's counters, gauges and histograms, rendered in the Prometheus text
// exposition format (version 0.0.4) for the console's :metrics and the server's /metrics.
//
// A metric family is a name (e.g. flywheel:time_to_first_token_seconds), a help text and a type;
// its children differ by label values. counter(), gauge() and histogram() find or create a child
// and return a reference that stays valid for the registry's lifetime: callers look a child up
// once and keep the reference on hot paths. Names follow vLLM's where one exists, with the
// "flywheel:" prefix; every series is an entry of metric_series.hpp, and the overloads taking one
// register it with its name, type, help and buckets from there; counters carry the "_total" suffix in their name.
//
// Contract: a name must match [a-zA-Z_:][a-zA-Z0-9_:]*, a label name [a-zA-Z_][a-zA-Z0-9_]* (not
// "le", not starting with "__"); one name keeps one type, one help text and (histograms) one set
// of bucket bounds. Breaking it is a programming error: asserted in debug builds; in release builds
// the call returns a detached metric that is never rendered (a bug loses a metric, not the process).
//
// render() lists families in registration order and children in creation order:
//   # HELP name help            (help with \ and newline escaped)
//   # TYPE name counter|gauge|histogram
//   name{label="value",...} 3   (label values with \, " and newline escaped)
//   name_bucket{...,le="0.1"} 2 ... name_bucket{...,le="+Inf"} 5, name_sum{...} 1.25, name_count{...} 5
// Numbers are printed in their shortest round-trip form ("2", "0.005", "1e-06", "+Inf", "NaN").
//
// Thread-safety: every member may be called from any thread. Counters and gauges are lock-free
// atomics; a histogram locks its own mutex per observation; the registry's mutex guards the family
// table (lookups and render()). render() reads each metric atomically, not the whole registry.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/metrics/metric_series.hpp"

namespace fw {

/// Label name/value pairs of one child, in the order they are rendered.
using metric_labels = std::vector<std::pair<std::string, std::string>>;


/// A monotonically increasing value.
class counter_metric {
 public:
  /// Adds v; v < 0 or NaN is ignored (counters never go down).
  void inc(double v = 1.0);
  /// Raises the value to v when v is larger: mirrors a count kept elsewhere (e.g. worker restarts).
  void advance_to(double v);
  [[nodiscard]] double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

/// A value that goes up and down.
class gauge_metric {
 public:
  void set(double v) { value_.store(v, std::memory_order_relaxed); }
  void add(double v);
  [[nodiscard]] double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

/// Observations counted in fixed buckets, with their sum and count.
class histogram_metric {
 public:
  /// bounds: strictly increasing finite upper bounds; the +Inf bucket is implicit.
  explicit histogram_metric(std::vector<double> bounds);

  /// Counts v in the first bucket whose bound is >= v (and in +Inf). NaN is ignored.
  void observe(double v);

  struct snapshot {
    std::vector<double> bounds;        ///< as constructed
    std::vector<uint64_t> cumulative;  ///< per bound, observations <= bound; size bounds.size()
    uint64_t count = 0;                ///< all observations (the +Inf bucket)
    double sum = 0.0;
  };
  [[nodiscard]] snapshot read() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is (bounds_.back(), +Inf)
  uint64_t count_ = 0;
  double sum_ = 0.0;
};

class metrics_registry {
 public:
  enum class metric_type { counter, gauge, histogram };

  metrics_registry();
  ~metrics_registry();
  metrics_registry(const metrics_registry&) = delete;
  metrics_registry& operator=(const metrics_registry&) = delete;

  /// The child of family `name` with these labels, created at zero on first use.
  counter_metric& counter(std::string_view name, std::string_view help, const metric_labels& labels = {});
  gauge_metric& gauge(std::string_view name, std::string_view help, const metric_labels& labels = {});
  /// bounds: strictly increasing finite upper bounds, the same for every child of the family.
  histogram_metric& histogram(std::string_view name, std::string_view help, const std::vector<double>& bounds,
                              const metric_labels& labels = {});
  /// The same for an entry of the series table (metric_series.hpp): its name, help and buckets.
  counter_metric& counter(const metric_series& s, const metric_labels& labels = {});
  gauge_metric& gauge(const metric_series& s, const metric_labels& labels = {});
  histogram_metric& histogram(const metric_series& s, const metric_labels& labels = {});

  /// Every family in the Prometheus text exposition format; empty when nothing is registered.
  [[nodiscard]] std::string render() const;

  /// A metric or label name as the contract above allows it.
  [[nodiscard]] static bool valid_metric_name(std::string_view name);
  [[nodiscard]] static bool valid_label_name(std::string_view name);
  /// v as rendered: shortest round-trip decimal, "+Inf", "-Inf" or "NaN".
  [[nodiscard]] static std::string format_value(double v);

 private:
  struct family;
  struct child;

  /// The child (created when new) or nullptr when the contract is broken.
  child* find_or_add(std::string_view name, std::string_view help, metric_type type,
                     const std::vector<double>* bounds, const metric_labels& labels);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<family>> families_;  // GUARDED_BY(mutex_), registration order
  // Returned for broken contracts; never rendered.
  std::vector<std::unique_ptr<counter_metric>> detached_counters_;      // GUARDED_BY(mutex_)
  std::vector<std::unique_ptr<gauge_metric>> detached_gauges_;          // GUARDED_BY(mutex_)
  std::vector<std::unique_ptr<histogram_metric>> detached_histograms_;  // GUARDED_BY(mutex_)
};

}  // namespace fw

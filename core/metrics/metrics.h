// A small Prometheus registry: counter, gauge and histogram families with labels, exposed in the
// text format 0.0.4. Values either accumulate here (inc/observe) or mirror cumulative numbers kept
// elsewhere (set_total/load), because the controllers already count for themselves and a
// collector copies their numbers in just before a scrape.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace unitrain::metrics {

using LabelValues = std::vector<std::string>;

// Text-format escaping: label values escape \, " and newline; HELP escapes \ and newline.
std::string escape_label_value(std::string_view v);
std::string escape_help(std::string_view v);
// Integers without a fraction, +Inf/-Inf/NaN spelled as Prometheus does, else shortest round-trip.
std::string format_value(double v);
// Metric and label names: [a-zA-Z_:][a-zA-Z0-9_:]* (labels: no ':').
bool valid_metric_name(std::string_view name);
bool valid_label_name(std::string_view name);

enum class Type { counter, gauge, histogram };

struct HistogramData {
  std::vector<uint64_t> cumulative;  // one per bound, observations <= bound
  uint64_t count = 0;
  double sum = 0;
};

class Family {
 public:
  Family(std::string name, std::string help, Type type, std::vector<std::string> label_names,
         std::vector<double> bounds = {});
  Family(const Family&) = delete;
  Family& operator=(const Family&) = delete;

  const std::string& name() const { return name_; }
  Type type() const { return type_; }

  // Counter/gauge operations on the child with these label values (created on first use).
  // A wrong number of label values is a programming error and is ignored (nothing recorded).
  void inc(const LabelValues& labels, double by = 1);
  void set(const LabelValues& labels, double value);  // gauges, and counters mirroring a total
  double value(const LabelValues& labels) const;       // 0 when the child does not exist
  // Histogram operations.
  void observe(const LabelValues& labels, double v);
  // inc and observe for label values given as views, for what runs per request: an existing
  // child is found without building its key (only a new child's is).
  void inc(std::span<const std::string_view> labels, double by = 1);
  void observe(std::span<const std::string_view> labels, double v);
  // Replaces a child's data with cumulative counts over this family's bounds.
  void load(const LabelValues& labels, const HistogramData& data);
  HistogramData histogram(const LabelValues& labels) const;
  // Drops every child (for gauges whose label sets come and go).
  void clear();

  void write(std::string& out) const;

 private:
  struct Child {
    double value = 0;
    HistogramData hist;
  };
  // Orders keys and finds them from views as well (std::map's heterogeneous lookup).
  struct LabelsLess {
    using is_transparent = void;
    bool operator()(const LabelValues& a, const LabelValues& b) const { return a < b; }
    bool operator()(const LabelValues& a, std::span<const std::string_view> b) const;
    bool operator()(std::span<const std::string_view> a, const LabelValues& b) const;
  };
  Child* child(const LabelValues& labels);                   // requires mu_
  Child* child(std::span<const std::string_view> labels);    // requires mu_
  Child* added(Child& c);                                    // a new child's histogram buckets
  void record(Child& c, double v);                           // one histogram observation

  std::string name_, help_;
  Type type_;
  std::vector<std::string> label_names_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<LabelValues, Child, LabelsLess> children_;
};

class Registry {
 public:
  // Fails on an invalid or duplicate name, an invalid label name, or (histograms) bounds that are
  // empty or not strictly increasing; the message names the metric.
  Result<Family*> counter(std::string name, std::string help, std::vector<std::string> label_names = {});
  Result<Family*> gauge(std::string name, std::string help, std::vector<std::string> label_names = {});
  Result<Family*> histogram(std::string name, std::string help, std::vector<std::string> label_names,
                            std::vector<double> bounds);

  // Runs before every exposition, on the scraping thread, to copy numbers kept elsewhere.
  void add_collector(std::function<void()> collect);

  // The whole registry in text format 0.0.4, families in registration order.
  std::string expose() const;

 private:
  Result<Family*> add(std::string name, std::string help, Type type, std::vector<std::string> label_names,
                      std::vector<double> bounds);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
  std::vector<std::function<void()>> collectors_;
};

inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace unitrain::metrics

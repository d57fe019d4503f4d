#include "core/metrics/metrics.h"

#include <algorithm>

#include <charconv>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace unitrain::metrics {

std::string escape_label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string escape_help(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<int64_t>(v));
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

namespace {
bool name_chars(std::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    bool digit = c >= '0' && c <= '9';
    if (!(alpha || (i > 0 && digit))) return false;
  }
  return true;
}

const char* type_name(Type t) {
  switch (t) {
    case Type::counter: return "counter";
    case Type::gauge: return "gauge";
    case Type::histogram: return "histogram";
  }
  return "untyped";
}

void write_labels(std::string& out, const std::vector<std::string>& names, const LabelValues& values,
                  std::string_view extra_name = {}, std::string_view extra_value = {}) {
  if (names.empty() && extra_name.empty()) return;
  out += '{';
  bool first = true;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!first) out += ',';
    first = false;
    out += names[i];
    out += "=\"";
    out += escape_label_value(values[i]);
    out += '"';
  }
  if (!extra_name.empty()) {
    if (!first) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}
}  // namespace

bool valid_metric_name(std::string_view name) { return name_chars(name, true); }
bool valid_label_name(std::string_view name) { return name_chars(name, false); }

Family::Family(std::string name, std::string help, Type type, std::vector<std::string> label_names,
               std::vector<double> bounds)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)),
      bounds_(std::move(bounds)) {}

bool Family::LabelsLess::operator()(const LabelValues& a, std::span<const std::string_view> b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [](std::string_view x, std::string_view y) { return x < y; });
}

bool Family::LabelsLess::operator()(std::span<const std::string_view> a, const LabelValues& b) const {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [](std::string_view x, std::string_view y) { return x < y; });
}

Family::Child* Family::added(Child& c) {
  if (type_ == Type::histogram) c.hist.cumulative.assign(bounds_.size(), 0);
  return &c;
}

Family::Child* Family::child(const LabelValues& labels) {
  if (labels.size() != label_names_.size()) return nullptr;
  auto [it, inserted] = children_.try_emplace(labels);
  return inserted ? added(it->second) : &it->second;
}

Family::Child* Family::child(std::span<const std::string_view> labels) {
  if (labels.size() != label_names_.size()) return nullptr;
  auto it = children_.lower_bound(labels);
  if (it != children_.end() && !children_.key_comp()(labels, it->first)) return &it->second;
  it = children_.emplace_hint(it, LabelValues(labels.begin(), labels.end()), Child{});
  return added(it->second);
}

void Family::record(Child& c, double v) {
  ++c.hist.count;
  c.hist.sum += v;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (v <= bounds_[i]) ++c.hist.cumulative[i];
  }
}

void Family::inc(const LabelValues& labels, double by) {
  std::lock_guard lock(mu_);
  if (type_ == Type::histogram) return;
  if (auto* c = child(labels)) c->value += by;
}

void Family::inc(std::span<const std::string_view> labels, double by) {
  std::lock_guard lock(mu_);
  if (type_ == Type::histogram) return;
  if (auto* c = child(labels)) c->value += by;
}

void Family::set(const LabelValues& labels, double value) {
  std::lock_guard lock(mu_);
  if (type_ == Type::histogram) return;
  if (auto* c = child(labels)) c->value = value;
}

double Family::value(const LabelValues& labels) const {
  std::lock_guard lock(mu_);
  auto it = children_.find(labels);
  return it == children_.end() ? 0 : it->second.value;
}

void Family::observe(const LabelValues& labels, double v) {
  std::lock_guard lock(mu_);
  if (type_ != Type::histogram) return;
  if (auto* c = child(labels)) record(*c, v);
}

void Family::observe(std::span<const std::string_view> labels, double v) {
  std::lock_guard lock(mu_);
  if (type_ != Type::histogram) return;
  if (auto* c = child(labels)) record(*c, v);
}

void Family::load(const LabelValues& labels, const HistogramData& data) {
  std::lock_guard lock(mu_);
  if (type_ != Type::histogram || data.cumulative.size() != bounds_.size()) return;
  if (auto* c = child(labels)) c->hist = data;
}

HistogramData Family::histogram(const LabelValues& labels) const {
  std::lock_guard lock(mu_);
  auto it = children_.find(labels);
  if (it == children_.end()) return HistogramData{std::vector<uint64_t>(bounds_.size(), 0), 0, 0};
  return it->second.hist;
}

void Family::clear() {
  std::lock_guard lock(mu_);
  children_.clear();
}

void Family::write(std::string& out) const {
  std::lock_guard lock(mu_);
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name_, escape_help(help_), name_, type_name(type_));
  for (const auto& [labels, c] : children_) {
    if (type_ != Type::histogram) {
      out += name_;
      write_labels(out, label_names_, labels);
      out += ' ';
      out += format_value(c.value);
      out += '\n';
      continue;
    }
    for (size_t i = 0; i < bounds_.size(); ++i) {
      out += name_;
      out += "_bucket";
      write_labels(out, label_names_, labels, "le", format_value(bounds_[i]));
      out += fmt::format(" {}\n", c.hist.cumulative[i]);
    }
    out += name_;
    out += "_bucket";
    write_labels(out, label_names_, labels, "le", "+Inf");
    out += fmt::format(" {}\n", c.hist.count);
    out += name_;
    out += "_sum";
    write_labels(out, label_names_, labels);
    out += ' ';
    out += format_value(c.hist.sum);
    out += '\n';
    out += name_;
    out += "_count";
    write_labels(out, label_names_, labels);
    out += fmt::format(" {}\n", c.hist.count);
  }
}

Result<Family*> Registry::add(std::string name, std::string help, Type type, std::vector<std::string> label_names,
                              std::vector<double> bounds) {
  if (!valid_metric_name(name)) return fail(fmt::format("metric name \"{}\" is invalid", name));
  std::set<std::string_view> seen;
  for (const auto& l : label_names) {
    if (!valid_label_name(l) || l.starts_with("__") || (type == Type::histogram && l == "le"))
      return fail(fmt::format("metric {}: label name \"{}\" is invalid", name, l));
    if (!seen.insert(l).second) return fail(fmt::format("metric {}: label \"{}\" is repeated", name, l));
  }
  if (type == Type::histogram) {
    if (bounds.empty()) return fail(fmt::format("metric {}: histogram needs at least one bucket bound", name));
    for (size_t i = 1; i < bounds.size(); ++i) {
      if (!(bounds[i] > bounds[i - 1]))
        return fail(fmt::format("metric {}: bucket bounds must increase strictly (bound {} is {} after {})", name,
                                i, bounds[i], bounds[i - 1]));
    }
  }
  std::lock_guard lock(mu_);
  for (const auto& f : families_) {
    if (f->name() == name) return fail(fmt::format("metric {} is already registered", name));
  }
  families_.push_back(std::make_unique<Family>(std::move(name), std::move(help), type, std::move(label_names),
                                               std::move(bounds)));
  return families_.back().get();
}

Result<Family*> Registry::counter(std::string name, std::string help, std::vector<std::string> label_names) {
  return add(std::move(name), std::move(help), Type::counter, std::move(label_names), {});
}
Result<Family*> Registry::gauge(std::string name, std::string help, std::vector<std::string> label_names) {
  return add(std::move(name), std::move(help), Type::gauge, std::move(label_names), {});
}
Result<Family*> Registry::histogram(std::string name, std::string help, std::vector<std::string> label_names,
                                    std::vector<double> bounds) {
  return add(std::move(name), std::move(help), Type::histogram, std::move(label_names), std::move(bounds));
}

void Registry::add_collector(std::function<void()> collect) {
  std::lock_guard lock(mu_);
  collectors_.push_back(std::move(collect));
}

std::string Registry::expose() const {
  std::vector<std::function<void()>> collectors;
  std::vector<const Family*> families;
  {
    std::lock_guard lock(mu_);
    collectors = collectors_;
    for (const auto& f : families_) families.push_back(f.get());
  }
  for (const auto& c : collectors) c();
  std::string out;
  for (const auto* f : families) f->write(out);
  return out;
}

}  // namespace unitrain::metrics

#include "localcluster/faults.h"

#include <algorithm>
#include <set>

#include "core/json/json.h"
#include "localcluster/api_errors.h"

namespace unitrain::localcluster {
namespace {

using json::Value;

bool is_write(std::string_view verb) {
  return verb == "POST" || verb == "PUT" || verb == "PATCH" || verb == "APPLY" || verb == "DELETE" ||
         verb == "DELETECOLLECTION";
}

bool verb_matches(const FaultRule& rule, std::string_view verb) {
  if (rule.verbs.empty()) return true;
  for (const auto& v : rule.verbs) {
    if (v == "*" || v == verb || (v == "write" && is_write(verb))) return true;
  }
  return false;
}

bool resource_matches(const FaultRule& rule, const ResourceInfo& r, std::string_view subresource) {
  if (rule.resources.empty()) return true;
  for (const auto& want : rule.resources) {
    if (want == "*") return true;
    size_t slash = want.find('/');
    std::string_view res = std::string_view(want).substr(0, slash);
    if (res != r.resource) continue;
    if (slash == std::string::npos || std::string_view(want).substr(slash + 1) == subresource) return true;
  }
  return false;
}

Result<double> probability(const Value& v, const std::string& where) {
  if (!v.IsNumber() || v.GetDouble() < 0 || v.GetDouble() > 1) {
    return fail(where + ": must be a number between 0 and 1");
  }
  return v.GetDouble();
}

Result<int64_t> non_negative(const Value& v, const std::string& where) {
  if (!v.IsInt64() || v.GetInt64() < 0) return fail(where + ": must be a non-negative integer");
  return v.GetInt64();
}

Result<std::vector<std::string>> strings(const Value& v, const std::string& where) {
  std::vector<std::string> out;
  if (v.IsString()) {
    out.emplace_back(v.GetString(), v.GetStringLength());
    return out;
  }
  if (!v.IsArray()) return fail(where + ": must be a string or a list of strings");
  for (const auto& s : v.GetArray()) {
    if (!s.IsString()) return fail(where + ": must be a string or a list of strings");
    out.emplace_back(s.GetString(), s.GetStringLength());
  }
  return out;
}

Result<FaultRule> parse_rule(const Value& v, const std::string& where) {
  if (!v.IsObject()) return fail(where + ": must be an object");
  FaultRule rule;
  for (const auto& m : v.GetObject()) {
    std::string key(m.name.GetString(), m.name.GetStringLength());
    std::string at = where + "." + key;
    auto set_p = [&](double& field) -> Status {
      auto p = probability(m.value, at);
      if (!p) return fail(p.error());
      field = *p;
      return {};
    };
    Status s;
    if (key == "verbs") {
      auto l = strings(m.value, at);
      if (!l) return fail(l.error());
      static const std::set<std::string> known{"*", "write", "GET", "LIST", "WATCH", "POST", "PUT",
                                               "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"};
      for (const auto& verb : *l) {
        if (!known.count(verb)) return fail(at + ": unknown verb \"" + verb + "\"");
      }
      rule.verbs = std::move(*l);
    } else if (key == "resources") {
      auto l = strings(m.value, at);
      if (!l) return fail(l.error());
      rule.resources = std::move(*l);
    } else if (key == "error500") {
      s = set_p(rule.error500);
    } else if (key == "error429") {
      s = set_p(rule.error429);
    } else if (key == "error409") {
      s = set_p(rule.error409);
    } else if (key == "drop") {
      s = set_p(rule.drop);
    } else if (key == "dropAfterCommit") {
      s = set_p(rule.drop_after_commit);
    } else if (key == "malformed") {
      s = set_p(rule.malformed);
    } else if (key == "retryAfterSeconds") {
      auto n = non_negative(m.value, at);
      if (!n) return fail(n.error());
      rule.retry_after_seconds = static_cast<int>(*n);
    } else if (key == "latencyMs") {
      auto n = non_negative(m.value, at);
      if (!n) return fail(n.error());
      rule.latency = std::chrono::milliseconds(*n);
    } else if (key == "times") {
      auto n = non_negative(m.value, at);
      if (!n) return fail(n.error());
      rule.times = *n;
    } else {
      return fail(at + ": unknown key");
    }
    if (!s) return fail(s.error());
  }
  if (rule.error500 + rule.error429 + rule.error409 + rule.drop + rule.drop_after_commit + rule.malformed > 1.0 + 1e-9) {
    return fail(where + ": the probabilities add up to more than 1");
  }
  return rule;
}

void add_strings(Value& obj, const char* key, const std::vector<std::string>& l, json::Allocator& a) {
  if (l.empty()) return;
  Value arr(rapidjson::kArrayType);
  for (const auto& s : l) arr.PushBack(json::str(s, a), a);
  obj.AddMember(rapidjson::StringRef(key), arr, a);
}

void add_number(Value& obj, const char* key, double v, json::Allocator& a) {
  if (v != 0) obj.AddMember(rapidjson::StringRef(key), v, a);
}

Value config_value(const FaultConfig& c, json::Allocator& a) {
  Value root(rapidjson::kObjectType);
  root.AddMember("seed", c.seed, a);
  Value rules(rapidjson::kArrayType);
  for (const auto& r : c.rules) {
    Value o(rapidjson::kObjectType);
    add_strings(o, "verbs", r.verbs, a);
    add_strings(o, "resources", r.resources, a);
    add_number(o, "error500", r.error500, a);
    add_number(o, "error429", r.error429, a);
    add_number(o, "error409", r.error409, a);
    if (r.error429 > 0) o.AddMember("retryAfterSeconds", r.retry_after_seconds, a);
    add_number(o, "drop", r.drop, a);
    add_number(o, "dropAfterCommit", r.drop_after_commit, a);
    add_number(o, "malformed", r.malformed, a);
    if (r.latency.count() > 0) o.AddMember("latencyMs", static_cast<int64_t>(r.latency.count()), a);
    if (r.times > 0) o.AddMember("times", r.times, a);
    rules.PushBack(o, a);
  }
  root.AddMember("rules", rules, a);
  root.AddMember("watchCutAfterEvents", c.watch_cut_after_events, a);
  root.AddMember("watchCutAbort", c.watch_cut_abort, a);
  root.AddMember("watchExpireResumes", c.watch_expire_resumes, a);
  root.AddMember("watchExpireProbability", c.watch_expire_probability, a);
  return root;
}

StatusError too_many_requests(int retry_after) {
  StatusError e;
  e.code = 429;
  e.reason = "TooManyRequests";
  e.message = "Too many requests, please try again later.";
  e.details = json::Document::object();
  e.details.root().AddMember("retryAfterSeconds", retry_after, e.details.alloc());
  return e;
}

}  // namespace

Result<FaultConfig> FaultConfig::parse(std::string_view json_text) {
  auto doc = json::Document::parse(json_text);
  if (!doc) return fail(std::move(doc.error()).prefix("faults"));
  const Value& root = doc->root();
  if (!root.IsObject()) return fail("faults: must be a JSON object");
  FaultConfig c;
  for (const auto& m : root.GetObject()) {
    std::string key(m.name.GetString(), m.name.GetStringLength());
    std::string at = "faults." + key;
    if (key == "seed") {
      if (!m.value.IsUint64()) return fail(at + ": must be a non-negative integer");
      c.seed = m.value.GetUint64();
    } else if (key == "rules") {
      if (!m.value.IsArray()) return fail(at + ": must be a list");
      for (rapidjson::SizeType i = 0; i < m.value.Size(); ++i) {
        auto r = parse_rule(m.value[i], at + "[" + std::to_string(i) + "]");
        if (!r) return fail(r.error());
        c.rules.push_back(std::move(*r));
      }
    } else if (key == "watchCutAfterEvents" || key == "watchExpireResumes") {
      auto n = non_negative(m.value, at);
      if (!n) return fail(n.error());
      (key == "watchCutAfterEvents" ? c.watch_cut_after_events : c.watch_expire_resumes) = *n;
    } else if (key == "watchCutAbort") {
      if (!m.value.IsBool()) return fail(at + ": must be true or false");
      c.watch_cut_abort = m.value.GetBool();
    } else if (key == "watchExpireProbability") {
      auto p = probability(m.value, at);
      if (!p) return fail(p.error());
      c.watch_expire_probability = *p;
    } else {
      return fail(at + ": unknown key");
    }
  }
  return c;
}

std::string FaultConfig::to_json() const {
  json::Document d = json::Document::object();
  d.root() = config_value(*this, d.alloc());
  return d.dump();
}

FaultInjector::FaultInjector(FaultConfig config) { configure(std::move(config)); }

void FaultInjector::configure(FaultConfig config) {
  std::lock_guard lock(mu_);
  rng_.seed(config.seed);
  remaining_.clear();
  for (const auto& r : config.rules) remaining_.push_back(r.times);
  config_ = std::move(config);
}

FaultConfig FaultInjector::config() const {
  std::lock_guard lock(mu_);
  return config_;
}

bool FaultInjector::active() const {
  std::lock_guard lock(mu_);
  return !config_.rules.empty() || config_.watch_cut_after_events > 0 || config_.watch_expire_resumes > 0 ||
         config_.watch_expire_probability > 0;
}

std::string FaultInjector::describe() const {
  std::lock_guard lock(mu_);
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  d.root() = config_value(config_, a);
  Value counts(rapidjson::kObjectType);
  for (const auto& [k, n] : counts_) {
    Value name = json::str(k, a);
    counts.AddMember(name, static_cast<uint64_t>(n), a);
  }
  d.root().AddMember("injected", counts, a);
  return d.pretty();
}

FaultDecision FaultInjector::decide(std::string_view verb, const ResourceInfo& r, std::string_view subresource,
                                    std::string_view name) {
  FaultDecision d;
  std::lock_guard lock(mu_);
  for (size_t i = 0; i < config_.rules.size(); ++i) {
    const FaultRule& rule = config_.rules[i];
    if (!verb_matches(rule, verb) || !resource_matches(rule, r, subresource)) continue;
    if (rule.times > 0 && remaining_[i] <= 0) continue;
    d.latency = rule.latency;
    if (verb == "WATCH" && rule.malformed > 0) {
      d.malformed_watch = true;
      d.malformed_probability = rule.malformed;
    }
    double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    double edge = 0;
    auto hit = [&](double p) {
      edge += p;
      return p > 0 && u < edge;
    };
    std::string kind;
    if (hit(rule.error500)) {
      d.action = FaultDecision::Action::Error;
      d.error = errors::internal("Internal error occurred: injected fault");
      kind = "500";
    } else if (hit(rule.error429)) {
      d.action = FaultDecision::Action::Error;
      d.error = too_many_requests(rule.retry_after_seconds);
      d.retry_after_seconds = rule.retry_after_seconds;
      kind = "429";
    } else if (hit(rule.error409)) {
      d.action = FaultDecision::Action::Error;
      d.error = errors::stale_resource_version(r, name);
      kind = "409";
    } else if (hit(rule.drop)) {
      d.action = FaultDecision::Action::Drop;
      kind = "drop";
    } else if (hit(rule.drop_after_commit)) {
      d.action = FaultDecision::Action::DropAfterCommit;
      kind = "dropAfterCommit";
    } else if (verb != "WATCH" && hit(rule.malformed)) {
      d.action = FaultDecision::Action::Malformed;
      kind = "malformed";
    }
    if (!kind.empty()) {
      ++counts_[kind];
      if (rule.times > 0) --remaining_[i];
    } else if (d.malformed_watch && rule.times > 0) {
      --remaining_[i];
    }
    return d;
  }
  return d;
}

bool FaultInjector::expire_watch(std::string_view resource_version) {
  if (resource_version.empty() || resource_version == "0") return false;
  std::lock_guard lock(mu_);
  bool expire = false;
  if (config_.watch_expire_resumes > 0) {
    --config_.watch_expire_resumes;
    expire = true;
  } else if (config_.watch_expire_probability > 0) {
    expire = std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < config_.watch_expire_probability;
  }
  if (expire) ++counts_["watchExpired"];
  return expire;
}

int64_t FaultInjector::watch_cut_after_events() const {
  std::lock_guard lock(mu_);
  return config_.watch_cut_after_events;
}

bool FaultInjector::watch_cut_abort() const {
  std::lock_guard lock(mu_);
  return config_.watch_cut_abort;
}

bool FaultInjector::roll(double probability) {
  if (probability <= 0) return false;
  std::lock_guard lock(mu_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < probability;
}

void FaultInjector::count(const std::string& kind) {
  std::lock_guard lock(mu_);
  ++counts_[kind];
}

std::map<std::string, uint64_t> FaultInjector::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

}  // namespace unitrain::localcluster

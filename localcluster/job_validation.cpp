#include "localcluster/job_validation.h"

#include <set>
#include <string>

#include <fmt/format.h>

#include "localcluster/completion_indexes.h"
#include "localcluster/object_names.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

constexpr int64_t kMaxParallelismIndexed = 100000;
constexpr int64_t kMaxFailedIndexes = 100000;
constexpr size_t kMaxPodFailurePolicyRules = 20;
constexpr size_t kMaxOnExitCodesValues = 255;
constexpr size_t kMaxOnPodConditionsPatterns = 20;
constexpr size_t kMaxSuccessPolicyRules = 20;
constexpr size_t kMaxSucceededIndexesLength = 64 * 1024;

std::string str_of(const Value& v, std::string_view pointer) {
  const Value* f = json::find(v, pointer);
  return f && f->IsString() ? std::string(json::view(*f)) : std::string();
}

FieldError too_many(std::string field, size_t actual, size_t max) {
  return {"FieldValueTooMany", std::move(field), fmt::format("Too many: {}: must have at most {} items", actual, max)};
}

FieldError duplicate(std::string field, const Value& v) {
  return {"FieldValueDuplicate", std::move(field), "Duplicate value: " + value_repr(v)};
}

// field.Invalid with field.OmitValueType: no value in the message.
FieldError invalid_no_value(std::string field, std::string_view detail) {
  return {"FieldValueInvalid", std::move(field), "Invalid value: " + std::string(detail)};
}

void nonnegative(std::vector<FieldError>& errs, const Value& spec, std::string_view key) {
  const Value* v = json::find(spec, "/" + std::string(key));
  if (v && v->IsNumber() && v->GetDouble() < 0)
    errs.push_back(invalid_value("spec." + std::string(key), *v, "must be greater than or equal to 0"));
}

std::set<std::string> container_names(const Value& spec) {
  std::set<std::string> out;
  for (const char* p : {"/template/spec/containers", "/template/spec/initContainers"})
    if (const Value* cs = json::find(spec, p); cs && cs->IsArray())
      for (const auto& c : cs->GetArray()) out.insert(str_of(c, "/name"));
  return out;
}

void pod_failure_policy_errors(std::vector<FieldError>& errs, const Value& spec, const Value& policy) {
  const Value* rules = json::find(policy, "/rules");
  if (!rules || !rules->IsArray()) return;
  std::string rules_path = "spec.podFailurePolicy.rules";
  if (rules->Size() > kMaxPodFailurePolicyRules) errs.push_back(too_many(rules_path, rules->Size(), kMaxPodFailurePolicyRules));
  const auto names = container_names(spec);
  const bool per_index = json::find(spec, "/backoffLimitPerIndex") != nullptr;
  for (rapidjson::SizeType i = 0; i < rules->Size(); ++i) {
    const Value& rule = (*rules)[i];
    std::string path = fmt::format("{}[{}]", rules_path, i);
    std::string action = str_of(rule, "/action");
    if (action.empty()) {
      errs.push_back(required_value(path + ".action", R"(valid values: ["Count" "FailIndex" "FailJob" "Ignore"])"));
    } else if (action == "FailIndex") {
      if (!per_index)
        errs.push_back(invalid_value_text(path + ".action", "\"FailIndex\"", "requires the backoffLimitPerIndex to be set"));
    } else if (action != "Count" && action != "FailJob" && action != "Ignore") {
      errs.push_back(not_supported(path + ".action", action, {"Count", "FailIndex", "FailJob", "Ignore"}));
    }
    const Value* exit_codes = json::find(rule, "/onExitCodes");
    if (exit_codes && exit_codes->IsNull()) exit_codes = nullptr;
    const Value* conditions = json::find(rule, "/onPodConditions");
    bool has_conditions = conditions && conditions->IsArray() && !conditions->Empty();
    if (exit_codes) {
      std::string ec = path + ".onExitCodes";
      std::string op = str_of(*exit_codes, "/operator");
      if (op.empty())
        errs.push_back(required_value(ec + ".operator", R"(valid values: ["In" "NotIn"])"));
      else if (op != "In" && op != "NotIn")
        errs.push_back(not_supported(ec + ".operator", op, {"In", "NotIn"}));
      if (const Value* cn = json::find(*exit_codes, "/containerName"); cn && cn->IsString() && !names.count(str_of(*exit_codes, "/containerName")))
        errs.push_back(invalid_value(ec + ".containerName", *cn, "must be one of the container or initContainer names in the pod template"));
      const Value* values = json::find(*exit_codes, "/values");
      if (!values || !values->IsArray() || values->Empty()) {
        errs.push_back(invalid_value_text(ec + ".values", "[]int32(nil)", "at least one value is required"));
      } else {
        if (values->Size() > kMaxOnExitCodesValues) errs.push_back(too_many(ec + ".values", values->Size(), kMaxOnExitCodesValues));
        std::set<int64_t> seen;
        bool ordered = true;
        for (rapidjson::SizeType j = 0; j < values->Size(); ++j) {
          const Value& v = (*values)[j];
          if (!v.IsInt64()) continue;
          std::string vp = fmt::format("{}.values[{}]", ec, j);
          if (op == "In" && v.GetInt64() == 0) errs.push_back(invalid_value(vp, v, "must not be 0 for the In operator"));
          if (!seen.insert(v.GetInt64()).second) errs.push_back(duplicate(vp, v));
          if (j > 0 && (*values)[j - 1].IsInt64() && (*values)[j - 1].GetInt64() > v.GetInt64()) ordered = false;
        }
        if (!ordered) {
          std::string list = "[]int32{";
          for (rapidjson::SizeType j = 0; j < values->Size(); ++j) list += (j ? ", " : "") + value_repr((*values)[j]);
          errs.push_back(invalid_value_text(ec + ".values", list + "}", "must be ordered"));
        }
      }
    }
    if (has_conditions) {
      std::string pc = path + ".onPodConditions";
      if (conditions->Size() > kMaxOnPodConditionsPatterns) errs.push_back(too_many(pc, conditions->Size(), kMaxOnPodConditionsPatterns));
      for (rapidjson::SizeType j = 0; j < conditions->Size(); ++j) {
        std::string status = str_of((*conditions)[j], "/status");
        std::string sp = fmt::format("{}[{}].status", pc, j);
        if (status.empty())
          errs.push_back(required_value(sp, R"(valid values: ["False" "True" "Unknown"])"));
        else if (status != "True" && status != "False" && status != "Unknown")
          errs.push_back(not_supported(sp, status, {"False", "True", "Unknown"}));
        if (str_of((*conditions)[j], "/type").empty()) errs.push_back(required_value(fmt::format("{}[{}].type", pc, j), "name part must be non-empty"));
      }
    }
    if (exit_codes && has_conditions)
      errs.push_back(invalid_no_value(path, "specifying both OnExitCodes and OnPodConditions is not supported"));
    if (!exit_codes && !has_conditions)
      errs.push_back(invalid_no_value(path, "specifying one of OnExitCodes and OnPodConditions is required"));
  }
}

void success_policy_errors(std::vector<FieldError>& errs, const Value& spec, const Value& policy) {
  const Value* rules = json::find(policy, "/rules");
  std::string rules_path = "spec.successPolicy.rules";
  if (!rules || !rules->IsArray() || rules->Empty()) {
    errs.push_back(required_value(rules_path, "at least one rules must be specified when the successPolicy is specified"));
    return;
  }
  if (rules->Size() > kMaxSuccessPolicyRules) errs.push_back(too_many(rules_path, rules->Size(), kMaxSuccessPolicyRules));
  int64_t completions = json::get_int(spec, "/completions").value_or(0);
  for (rapidjson::SizeType i = 0; i < rules->Size(); ++i) {
    const Value& rule = (*rules)[i];
    std::string path = fmt::format("{}[{}]", rules_path, i);
    const Value* indexes = json::find(rule, "/succeededIndexes");
    const Value* count = json::find(rule, "/succeededCount");
    if (indexes && indexes->IsNull()) indexes = nullptr;
    if (count && count->IsNull()) count = nullptr;
    if (!indexes && !count) errs.push_back(required_value(path, "at least one of succeededCount or succeededIndexes must be specified"));
    int64_t total = 0;
    if (indexes && indexes->IsString()) {
      std::string text(json::view(*indexes));
      if (text.size() > kMaxSucceededIndexesLength)
        errs.push_back({"FieldValueTooLong", path + ".succeededIndexes",
                        fmt::format("Too long: may not be more than {} bytes", kMaxSucceededIndexesLength)});
      auto parsed = CompletionIndexes::parse_strict(text, completions);
      if (parsed)
        total = parsed->total();
      else
        errs.push_back(invalid_value(path + ".succeededIndexes", *indexes, "error parsing succeededIndexes: " + parsed.error().message));
    }
    if (count && count->IsInt64()) {
      std::string cp = path + ".succeededCount";
      if (count->GetInt64() < 0) errs.push_back(invalid_value(cp, *count, "must be greater than or equal to 0"));
      if (count->GetInt64() > completions)
        errs.push_back(invalid_value(cp, *count, fmt::format("must be less than or equal to {} (the number of specified completions)", completions)));
      if (indexes && count->GetInt64() > total)
        errs.push_back(invalid_value(cp, *count, fmt::format("must be less than or equal to {} (the number of indexes in the specified succeededIndexes field)", total)));
    }
  }
}

std::vector<FieldError> spec_errors(const Value& job) {
  std::vector<FieldError> errs;
  const Value* spec_p = json::find(job, "/spec");
  if (!spec_p || !spec_p->IsObject()) return errs;
  const Value& spec = *spec_p;
  for (std::string_view k : {"parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                             "backoffLimitPerIndex", "maxFailedIndexes"})
    nonnegative(errs, spec, k);
  const Value* per_index = json::find(spec, "/backoffLimitPerIndex");
  const Value* max_failed = json::find(spec, "/maxFailedIndexes");
  if (per_index && per_index->IsNull()) per_index = nullptr;
  if (max_failed && max_failed->IsNull()) max_failed = nullptr;
  if (max_failed && !per_index) errs.push_back(required_value("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified"));
  std::string mode = str_of(spec, "/completionMode");
  auto completions = json::get_int(spec, "/completions");
  auto parallelism = json::get_int(spec, "/parallelism");
  bool indexed = mode == "Indexed";
  if (!mode.empty() && mode != "NonIndexed" && mode != "Indexed")
    errs.push_back(not_supported("spec.completionMode", mode, {"NonIndexed", "Indexed"}));
  if (indexed) {
    if (!completions) errs.push_back(required_value("spec.completions", "when completion mode is Indexed"));
    if (parallelism && *parallelism > kMaxParallelismIndexed)
      errs.push_back(invalid_value("spec.parallelism", *json::find(spec, "/parallelism"),
                                   fmt::format("must be less than or equal to {} when completion mode is Indexed", kMaxParallelismIndexed)));
    if (completions && max_failed && max_failed->IsInt64() && max_failed->GetInt64() > *completions)
      errs.push_back(invalid_value("spec.maxFailedIndexes", *max_failed, "must be less than or equal to completions"));
    if (max_failed && max_failed->IsInt64() && max_failed->GetInt64() > kMaxFailedIndexes)
      errs.push_back(invalid_value("spec.maxFailedIndexes", *max_failed, fmt::format("must be less than or equal to {}", kMaxFailedIndexes)));
    if (completions && *completions > 0) {
      std::string hostname = fmt::format("{}-{}", str_of(job, "/metadata/name"), *completions - 1);
      if (check_dns1123_label(hostname))
        errs.push_back(invalid_value("metadata.name", *json::find(job, "/metadata/name"),
                                     "will not able to create pod with invalid DNS label: " + hostname));
    }
  } else {
    if (per_index) errs.push_back(invalid_value("spec.backoffLimitPerIndex", *per_index, "requires indexed completion mode"));
    if (max_failed) errs.push_back(invalid_value("spec.maxFailedIndexes", *max_failed, "requires indexed completion mode"));
  }
  const Value* pfp = json::find(spec, "/podFailurePolicy");
  if (pfp && pfp->IsNull()) pfp = nullptr;
  if (pfp) pod_failure_policy_errors(errs, spec, *pfp);
  if (const Value* sp = json::find(spec, "/successPolicy"); sp && !sp->IsNull()) {
    if (!indexed)
      errs.push_back(invalid_value("spec.successPolicy", *sp, "requires indexed completion mode"));
    else
      success_policy_errors(errs, spec, *sp);
  }
  if (const Value* rp = json::find(spec, "/podReplacementPolicy"); rp && rp->IsString()) {
    std::string v(json::view(*rp));
    if (pfp && v != "Failed")
      errs.push_back(not_supported("spec.podReplacementPolicy", v, {"Failed"}));
    else if (!pfp && v != "Failed" && v != "TerminatingOrFailed")
      errs.push_back(not_supported("spec.podReplacementPolicy", v, {"Failed", "TerminatingOrFailed"}));
  }
  std::string restart = str_of(spec, "/template/spec/restartPolicy");
  if (restart.empty() || restart == "Always")
    errs.push_back(required_value("spec.template.spec.restartPolicy", R"(valid values: "OnFailure", "Never")"));
  else if (restart != "OnFailure" && restart != "Never")
    errs.push_back(not_supported("spec.template.spec.restartPolicy", restart, {"OnFailure", "Never"}));
  else if (pfp && restart != "Never")
    errs.push_back(invalid_value("spec.template.spec.restartPolicy", *json::find(spec, "/template/spec/restartPolicy"),
                                 "only \"Never\" is supported when podFailurePolicy is specified"));
  return errs;
}

// The template rule of an update (see the header).
std::vector<FieldError> template_update_errors(const Value& old_job, const Value& new_job) {
  const Value* before = json::find(old_job, "/spec/template");
  const Value* after = json::find(new_job, "/spec/template");
  if (before == nullptr || after == nullptr) return {};
  Document comparable = Document::copy_of(*before);
  const bool suspended = json::get_bool(old_job, "/spec/suspend").value_or(false);
  const bool started = json::find(old_job, "/status/startTime") != nullptr;
  if (suspended && !started) {
    auto take = [&](std::string_view pointer) {
      if (const Value* v = json::find(*after, pointer)) (void)json::set(comparable, pointer, Value(*v, comparable.alloc()));
      else json::remove(comparable, pointer);
    };
    for (std::string_view p : {"/metadata/labels", "/metadata/annotations", "/spec/nodeSelector", "/spec/tolerations",
                               "/spec/schedulingGates", "/spec/affinity/nodeAffinity"})
      take(p);
    // An affinity left with nothing but the node affinity may go away entirely.
    if (const Value* aff = json::find(comparable.root(), "/spec/affinity"); aff != nullptr && aff->IsObject() &&
                                                                          aff->ObjectEmpty() &&
                                                                          json::find(*after, "/spec/affinity") == nullptr)
      json::remove(comparable, "/spec/affinity");
  }
  if (json::equal(comparable.root(), *after)) return {};
  return {invalid_value(std::string("spec.template"), *after, "field is immutable")};
}

}  // namespace

std::vector<FieldError> job_create_errors(const Value& job) { return spec_errors(job); }

std::vector<FieldError> job_update_errors(const Value& old_job, const Value& new_job) {
  std::vector<FieldError> errs = spec_errors(new_job);
  auto field = [](const Value& j, std::string_view key) -> const Value* {
    const Value* v = json::find(j, "/spec/" + std::string(key));
    return v && !v->IsNull() ? v : nullptr;
  };
  auto immutable = [&](std::string_view key) {
    const Value* a = field(old_job, key);
    const Value* b = field(new_job, key);
    if ((a == nullptr) != (b == nullptr) || (a && !json::equal(*a, *b))) {
      Value null_value;
      errs.push_back(invalid_value("spec." + std::string(key), b ? *b : null_value, "field is immutable"));
    }
  };
  const bool indexed = str_of(new_job, "/spec/completionMode") == "Indexed";
  const Value* old_completions = field(old_job, "completions");
  const Value* new_completions = field(new_job, "completions");
  bool completions_changed = (old_completions == nullptr) != (new_completions == nullptr) ||
                             (old_completions && !json::equal(*old_completions, *new_completions));
  if (!indexed) {
    immutable("completions");
  } else if (completions_changed && new_completions &&
             json::get_int(new_job, "/spec/completions") != json::get_int(new_job, "/spec/parallelism")) {
    errs.push_back(invalid_value("spec.completions", *new_completions, "can only be modified in tandem with spec.parallelism"));
  }
  immutable("selector");
  auto tmpl = template_update_errors(old_job, new_job);
  errs.insert(errs.end(), tmpl.begin(), tmpl.end());
  for (std::string_view key : {"completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"})
    immutable(key);
  return errs;
}

}  // namespace unitrain::localcluster

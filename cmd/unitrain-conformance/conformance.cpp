#include "cmd/unitrain-conformance/conformance.h"

#include <fmt/format.h>

#include "core/api/meta.h"
#include "core/controller/pod_builder.h"
#include "core/framework/abi/wire.h"

namespace unitrain::conformance {

namespace {

using json::Document;
using json::Value;

std::string compact(const Value& v) { return json::dump(v); }

framework::PluginConfig config_of(const Value& fixture) {
  framework::PluginConfig config;
  if (const Value* options = json::find(fixture, "/config/options"); options != nullptr && options->IsObject())
    for (const auto& m : options->GetObject())
      config.options[std::string(json::view(m.name))] = m.value.IsString() ? std::string(json::view(m.value)) : compact(m.value);
  config.gang_scheduler_name = json::string_at(fixture, "/config/gangSchedulerName");
  config.cluster_domain = json::string_at(fixture, "/config/clusterDomain");
  return config;
}

void check_validation(const framework::FrameworkPlugin& plugin, const Value& job, const Value& expect,
                      std::vector<std::string>& failures) {
  const framework::Validation v = plugin.validate(nullptr, job);
  std::vector<std::string> got;
  for (const auto& e : v.errors) got.push_back(e.to_string());
  if (const Value* valid = json::find(expect, "/valid"); valid != nullptr && valid->IsBool() && valid->GetBool() != got.empty())
    failures.push_back(fmt::format("valid: want {}, got errors [{}]", valid->GetBool(), fmt::join(got, "; ")));
  if (const Value* errors = json::find(expect, "/errors"); errors != nullptr && errors->IsArray()) {
    std::vector<std::string> want;
    for (const auto& e : errors->GetArray()) want.emplace_back(e.IsString() ? json::view(e) : compact(e));
    if (want != got)
      failures.push_back(fmt::format("errors: want [{}], got [{}]", fmt::join(want, "; "), fmt::join(got, "; ")));
  }
}

void check_status(const framework::FrameworkPlugin& plugin, const Value& job, const std::vector<framework::PodSlot>& slots,
                  const Value& cases, std::vector<std::string>& failures) {
  for (rapidjson::SizeType i = 0; i < cases.Size(); ++i) {
    const Value& c = cases[i];
    const std::string where = fmt::format("status[{}]", i);
    const Value* phases = json::find(c, "/pods");
    if (phases == nullptr || !phases->IsArray() || phases->Size() != slots.size()) {
      failures.push_back(fmt::format("{}.pods: want one phase per pod slot ({})", where, slots.size()));
      continue;
    }
    const int exit_code = json::find(c, "/exitCode") != nullptr && json::find(c, "/exitCode")->IsInt()
                              ? json::find(c, "/exitCode")->GetInt()
                              : 1;
    std::vector<Document> pods;
    for (size_t s = 0; s < slots.size(); ++s) {
      const std::string_view phase = json::view((*phases)[static_cast<rapidjson::SizeType>(s)]);
      auto pod = observed_pod(plugin, job, slots[s], phase, phase == "Succeeded" ? 0 : exit_code);
      if (!pod) {
        failures.push_back(fmt::format("{}: {}", where, pod.error().message));
        break;
      }
      pods.push_back(std::move(*pod));
    }
    if (pods.size() != slots.size()) continue;
    framework::Observed observed;
    for (const auto& p : pods) observed.pods.push_back(&p.root());
    const auto proposal = plugin.compute_status(job, observed);
    std::vector<std::string> got;
    for (const auto& cond : proposal.conditions)
      got.push_back(fmt::format("{} {} {}", cond.type, cond.reason, cond.message));
    std::vector<std::string> want;
    if (const Value* conditions = json::find(c, "/conditions"); conditions != nullptr && conditions->IsArray())
      for (const auto& w : conditions->GetArray()) want.emplace_back(json::view(w));
    if (want != got)
      failures.push_back(fmt::format("{}.conditions: want [{}], got [{}]", where, fmt::join(want, "; "), fmt::join(got, "; ")));
  }
}

}  // namespace

std::vector<std::string> containment_failures(const Value& want, const Value& got, const std::string& path) {
  std::vector<std::string> out;
  auto mismatch = [&] { out.push_back(fmt::format("{}: want {}, got {}", path, compact(want), compact(got))); };
  if (want.IsObject()) {
    if (!got.IsObject()) {
      mismatch();
      return out;
    }
    for (const auto& m : want.GetObject()) {
      const std::string key(json::view(m.name));
      auto it = got.FindMember(m.name);
      if (it == got.MemberEnd()) {
        out.push_back(fmt::format("{}.{}: want {}, got nothing", path, key, compact(m.value)));
        continue;
      }
      auto more = containment_failures(m.value, it->value, path + "." + key);
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }
  if (want.IsArray()) {
    if (!got.IsArray() || got.Size() != want.Size()) {
      mismatch();
      return out;
    }
    for (rapidjson::SizeType i = 0; i < want.Size(); ++i) {
      auto more = containment_failures(want[i], got[i], fmt::format("{}[{}]", path, i));
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }
  if (want != got) mismatch();
  return out;
}

Result<Document> observed_pod(const framework::FrameworkPlugin& plugin, const Value& job, const framework::PodSlot& slot,
                              std::string_view phase, int exit_code) {
  auto built = controller::build_pod(plugin.descriptor(), job, slot.replica_type, slot.index);
  if (!built) return fail(built.error());
  Document pod = std::move(built->pod);
  if (!slot.name.empty()) (void)json::set_string(pod, "/metadata/name", slot.name);
  if (auto s = plugin.decorate_pod(job, slot, pod); !s) return fail(s.error());
  const std::string state =
      phase == "Running"   ? std::string(R"({"running": {"startedAt": "2026-01-01T00:00:00Z"}})")
      : phase == "Pending" ? std::string(R"({"waiting": {"reason": "ContainerCreating"}})")
                           : fmt::format(R"({{"terminated": {{"exitCode": {}, "finishedAt": "2026-01-01T00:01:00Z"}}}})",
                                         exit_code);
  auto status = Document::parse(fmt::format(R"({{"phase": "{}", "containerStatuses": [{{"name": "{}", "state": {}}}]}})",
                                            phase, plugin.descriptor().default_container, state));
  if (!status) return fail(status.error());
  auto& a = pod.alloc();
  pod.root().RemoveMember("status");
  pod.root().AddMember("status", Value(status->root(), a), a);
  return pod;
}

Result<std::vector<std::string>> run_fixture(const framework::Registration& registration, const Value& fixture) {
  const Value* job = json::find(fixture, "/job");
  if (job == nullptr || !job->IsObject()) return fail("job: required (the job as a user submits it)");
  const Value* expect = json::find(fixture, "/expect");
  if (expect == nullptr || !expect->IsObject()) return fail("expect: required (what the module must answer)");
  framework::PluginConfig config = config_of(fixture);
  for (const auto& option : registration.options) config.options.try_emplace(option.name, option.default_value);
  auto made = registration.factory(config);
  if (!made) return fail(made.error());
  const framework::FrameworkPlugin& plugin = **made;

  std::vector<std::string> failures;
  check_validation(plugin, *job, *expect, failures);
  Document defaulted = Document::copy_of(*job);
  plugin.set_defaults(defaulted);
  if (const Value* want = json::find(*expect, "/defaults"))
    for (auto& f : containment_failures(*want, defaulted.root(), "defaults")) failures.push_back(std::move(f));

  const auto slots = plugin.pod_slots(defaulted.root());
  if (const Value* pods = json::find(*expect, "/pods"); pods != nullptr && pods->IsObject()) {
    for (const auto& m : pods->GetObject()) {
      const std::string name(json::view(m.name));
      bool found = false;
      for (const auto& slot : slots) {
        auto pod = observed_pod(plugin, defaulted.root(), slot, "Pending", 0);
        if (!pod) {
          failures.push_back(fmt::format("pods.{}: {}", name, pod.error().message));
          found = true;
          break;
        }
        if (api::name_of(pod->root()) != name) continue;
        found = true;
        pod->root().RemoveMember("status");
        for (auto& f : containment_failures(m.value, pod->root(), "pods." + name)) failures.push_back(std::move(f));
      }
      if (!found) failures.push_back(fmt::format("pods.{}: the module keeps no pod of that name", name));
    }
  }

  if (const Value* objects = json::find(*expect, "/objects"); objects != nullptr && objects->IsArray()) {
    auto desired = plugin.desired_objects(defaulted.root(), {});
    if (!desired) {
      failures.push_back(fmt::format("objects: desired_objects failed: {}", desired.error().message));
    } else {
      for (rapidjson::SizeType i = 0; i < objects->Size(); ++i) {
        const Value& want = (*objects)[i];
        const std::string resource = json::string_at(want, "/resource");
        const std::string name = json::string_at(want, "/name");
        const framework::DesiredObject* match = nullptr;
        for (const auto& d : *desired)
          if (d.resource.resource == resource && json::string_at(d.object.root(), "/metadata/name") == name) match = &d;
        if (match == nullptr) {
          failures.push_back(fmt::format("objects[{}]: no desired {} named {}", i, resource, name));
          continue;
        }
        if (const Value* object = json::find(want, "/object"))
          for (auto& f : containment_failures(*object, match->object.root(), fmt::format("objects[{}]", i)))
            failures.push_back(std::move(f));
      }
    }
  }

  if (const Value* status = json::find(*expect, "/status"); status != nullptr && status->IsArray())
    check_status(plugin, defaulted.root(), slots, *status, failures);
  return failures;
}

}  // namespace unitrain::conformance

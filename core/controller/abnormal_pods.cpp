#include "core/controller/abnormal_pods.h"

#include <fmt/format.h>

namespace unitrain::controller {

namespace {

std::string text(const json::Value& v, const char* pointer) {
  return std::string(json::get_string(v, pointer).value_or(""));
}

void container_trouble(const std::string& pod, const json::Value& statuses, std::vector<AbnormalPod>& out) {
  for (const auto& s : statuses.GetArray()) {
    const std::string container = text(s, "/name");
    const int64_t code = json::get_int(s, "/state/terminated/exitCode").value_or(0);
    if (json::find(s, "/state/terminated") != nullptr && code != 0) {
      out.push_back({pod, text(s, "/state/terminated/reason"),
                     fmt::format("Error pod {} container {} exitCode: {} terminated message: {}", pod, container, code,
                                 text(s, "/state/terminated/message"))});
    }
    if (const std::string message = text(s, "/state/waiting/message"); !message.empty()) {
      out.push_back({pod, text(s, "/state/waiting/reason"),
                     fmt::format("Error pod {} container {} waiting message: {}", pod, container, message)});
    }
  }
}

bool non_empty_array(const json::Value* v) { return v != nullptr && v->IsArray() && !v->Empty(); }

}  // namespace

std::vector<AbnormalPod> abnormal_pods(const std::vector<const json::Value*>& pods) {
  std::vector<AbnormalPod> out;
  for (const json::Value* p : pods) {
    const std::string phase = text(*p, "/status/phase");
    if (phase == "Succeeded" || phase == "Failed" || json::find(*p, "/metadata/deletionTimestamp") != nullptr) continue;
    const std::string pod = text(*p, "/metadata/name");
    if (const auto* cs = json::find(*p, "/status/containerStatuses"); non_empty_array(cs)) {
      container_trouble(pod, *cs, out);
      continue;
    }
    if (const auto* init = json::find(*p, "/status/initContainerStatuses"); non_empty_array(init)) {
      container_trouble(pod, *init, out);
      continue;
    }
    const json::Value* conditions = json::find(*p, "/status/conditions");
    if (!non_empty_array(conditions)) continue;
    // The latest transition (RFC 3339 timestamps order as strings); the first of equal ones.
    const json::Value* latest = nullptr;
    for (const auto& c : conditions->GetArray()) {
      if (latest == nullptr || text(c, "/lastTransitionTime") > text(*latest, "/lastTransitionTime")) latest = &c;
    }
    if (text(*latest, "/status") == "True") continue;
    out.push_back({pod, text(*latest, "/reason"),
                   fmt::format("Error pod {} condition message: {}", pod, text(*latest, "/message"))});
  }
  return out;
}

}  // namespace unitrain::controller

// The JSON documents of the plugin ABI (core/framework/abi/unitrain_plugin.h), in one place for
// both sides: the host writes requests and reads answers (plugin_host.h), a module reads
// requests and writes answers (module_export.h). Each `*_json` has its `*_from`, and
// `x_from(x_json(v))` gives `v` back, so a hook answers the same through the ABI as in-process.
// Readers name the member that is wrong ("descriptor.replicaTypes[1]: must be a string") and
// ignore members they do not know (what a newer minor version adds).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"
#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "core/json/json.h"

namespace unitrain::framework::wire {

// describe(): everything of a registration but its factory.
json::Document registration_json(const Registration& registration);
Result<Registration> registration_from(const json::Value& doc);

// create(): the configuration an instance is built with.
json::Document config_json(const PluginConfig& config);
Result<PluginConfig> config_from(const json::Value& doc);

// validate(): {"job", "oldJob"} in, errors and warnings out.
json::Document validate_request(const json::Value* old_job, const json::Value& job);
json::Document validation_json(const Validation& validation);
Result<Validation> validation_from(const json::Value& doc);

// pod_slots() and the slot of decorate_pod().
json::Value slot_json(const PodSlot& slot, json::Allocator& a);
Result<PodSlot> slot_from(const json::Value& v, std::string_view path);
json::Document slots_json(const std::vector<PodSlot>& slots);
Result<std::vector<PodSlot>> slots_from(const json::Value& doc);
json::Document decorate_request(const json::Value& job, const PodSlot& slot, const json::Value& pod);

// desired_objects() and compute_status(): {"job", "observed"} in.
json::Document observed_request(const json::Value& job, const Observed& observed);
// The children in `observed`, pointing into it; the caller keeps the document alive.
Result<Observed> observed_from(const json::Value& observed);
// GangContribution::pod_group's answer: {"minMember", "queue", "priorityClass", "minResources"
// (absent: unset), "scheduleTimeoutSeconds" (absent: unset)}.
json::Document pod_group_json(const PodGroupPolicy& policy);
Result<PodGroupPolicy> pod_group_from(const json::Value& doc);
json::Document desired_json(const std::vector<DesiredObject>& objects);
Result<std::vector<DesiredObject>> desired_from(const json::Value& doc);
json::Document status_json(const StatusProposal& proposal);
Result<StatusProposal> status_from(const json::Value& doc);

// pruned_resources().
json::Document resources_json(const std::vector<kube::GroupVersionResource>& resources);
Result<std::vector<kube::GroupVersionResource>> resources_from(const json::Value& doc, std::string_view path);

// wording() and foreign_object_wording().
std::string_view event_name(CoreEvent event);
std::optional<CoreEvent> event_of(std::string_view name);
json::Document wording_request(CoreEvent event, const json::Value& job, std::string_view replica_type);
json::Document foreign_object_request(const json::Value& job, const ForeignObject& object);
// child_event(): {"event", "job", "subject": {"kind", "name", "replicaType", "detail", "reason"}}.
std::string_view child_event_name(ChildEvent event);
std::optional<ChildEvent> child_event_of(std::string_view name);
json::Document child_event_request(ChildEvent event, const json::Value& job, const ChildSubject& subject);
json::Document wording_json(const CoreWording& wording);
Result<CoreWording> wording_from(const json::Value& doc);

}  // namespace unitrain::framework::wire

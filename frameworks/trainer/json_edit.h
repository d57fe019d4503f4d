// Small JSON edits the trainer's builder repeats: keyed upserts into lists, env entries, the
// containers of a replicated Job.
#pragma once

#include <string_view>

#include "core/json/json.h"

namespace unitrain::frameworks::trainer {

// Replaces the element of `list` whose `key` member equals that of `item`, or appends it.
void upsert_by(json::Value& list, std::string_view key, json::Value item, json::Allocator& a);
// {"name": name, "value": value}
json::Value env_value(std::string_view name, std::string_view value, json::Allocator& a);
// {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}
json::Value env_field_ref(std::string_view name, std::string_view path, json::Allocator& a);
// Upserts every entry of `env` (an EnvVar list, possibly null) into the container's env.
void upsert_env(json::Value& container, const json::Value* env, json::Allocator& a);

// {"apiVersion", "kind", "metadata": {"name", "namespace"}}: an object the builder writes.
json::Document new_object(std::string_view api_version, std::string_view kind, std::string_view ns, std::string_view name);

// rJob.template.spec.template (the pod template), created when missing.
json::Value& pod_template(json::Value& rjob, json::Allocator& a);
// The first container named `name` in the rJob's pod spec `list` ("containers",
// "initContainers"), or nullptr.
json::Value* find_container(json::Value& rjob, std::string_view list, std::string_view name);
const json::Value* find_container(const json::Value& rjob, std::string_view list, std::string_view name);

}  // namespace unitrain::frameworks::trainer

#include "core/framework/child_objects.h"

namespace unitrain::framework {

json::Value labels_json(const Labels& labels, json::Allocator& a) {
  json::Value l(rapidjson::kObjectType);
  for (const auto& [k, v] : labels) l.AddMember(json::str(k, a), json::str(v, a), a);
  return l;
}

json::Document child_object(std::string_view api_version, std::string_view kind, std::string_view name,
                            std::string_view ns, const Labels& labels) {
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  json::Value& r = d.root();
  r.AddMember("apiVersion", json::str(api_version, a), a);
  r.AddMember("kind", json::str(kind, a), a);
  json::Value meta(rapidjson::kObjectType);
  meta.AddMember("name", json::str(name, a), a);
  if (!ns.empty()) meta.AddMember("namespace", json::str(ns, a), a);
  if (!labels.empty()) meta.AddMember("labels", labels_json(labels, a), a);
  r.AddMember("metadata", meta, a);
  return d;
}

}  // namespace unitrain::framework

// Patches in the memory store (JSON merge, JSON patch, strategic merge for built-ins, and apply
// patches, which create the object when it is missing), and the autoscaling/v1 Scale view of
// custom resources with a scale subresource.
#include "localcluster/memory_store_impl.h"
#include "localcluster/object_patch.h"
#include "localcluster/object_meta.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

}  // namespace

StoreResult<Document> MemoryStore::patch_locked(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                                PatchKind kind, std::string_view body, std::string_view subresource,
                                                bool dry_run, PendingNotifications& p, const FieldOwner& owner) {
  const Served* s = lookup(r);
  if (s == nullptr) return fail(errors::resource_not_found());
  auto decoded = decode_patch(kind, body, s->crd != nullptr);
  if (!decoded) return fail(std::move(decoded).error());
  Document patch = std::move(*decoded);
  Table& t = state_->tables.at(s->storage_key);
  auto it = t.objects.find(object_key(s->info, ns, name));
  if (it == t.objects.end()) {
    if (kind == PatchKind::Apply && subresource.empty()) {
      std::string body_name = json::string_at(patch.root(), "/metadata/name");
      if (!body_name.empty() && body_name != name) return fail(errors::name_mismatch(body_name, name));
      meta_set_string(patch, "name", name);
      Document config = patch;
      return create_locked(s->info, ns, std::move(patch), dry_run, p,
                           FieldOwner{owner.manager, &config.root(), owner.force});
    }
    return fail(errors::not_found(s->info, name));
  }
  Document target;
  if (subresource == "scale") {
    auto sc = scale_of(*s, present(*s, *it->second.doc));
    if (!sc) return sc;
    target = std::move(*sc);
  } else {
    target = present(*s, *it->second.doc);
  }
  if (auto st = apply_patch(s->info, name, kind, patch.root(), target, s->crd != nullptr); !st) {
    return fail(std::move(st).error());
  }
  if (!target.root().IsObject()) return fail(errors::bad_request("the patched object is not a JSON object"));
  if (subresource == "scale") return update_scale(*s, ns, name, target, dry_run, p);
  // The patch may name another object; kube-apiserver refuses that.
  if (json::string_at(target.root(), "/metadata/name") != name) {
    return fail(errors::name_mismatch(json::string_at(target.root(), "/metadata/name"), name));
  }
  if (s->info.namespaced && json::string_at(target.root(), "/metadata/namespace") != ns) {
    return fail(errors::namespace_mismatch());
  }
  FieldOwner write_owner = owner;
  if (kind == PatchKind::Apply) write_owner.apply_config = &patch.root();
  return update_locked(*s, t, it->first, it->second.doc, std::move(target), subresource, dry_run, p, write_owner);
}

// ---- the scale subresource (custom resources that declare one, apps/v1 workloads) ----

namespace {

// Where a resource keeps what its Scale shows, as JSON pointers.
struct ScalePaths {
  std::string spec_replicas, status_replicas, selector;  // selector "": from spec.selector.matchLabels
};

std::optional<ScalePaths> scale_paths(const Served& s) {
  if (s.version != nullptr && s.version->has_scale)
    return ScalePaths{crd_path_to_pointer(s.version->spec_replicas_path), crd_path_to_pointer(s.version->status_replicas_path),
                      s.version->label_selector_path.empty() ? std::string("-") : crd_path_to_pointer(s.version->label_selector_path)};
  if (s.crd == nullptr && s.info.has_scale) return ScalePaths{"/spec/replicas", "/status/replicas", ""};
  return std::nullopt;
}

// "k=v,k2=v2" of a label selector's matchLabels, as a Scale's status.selector.
std::string match_labels_string(const Value& root) {
  std::string out;
  if (const Value* ml = json::find(root, "/spec/selector/matchLabels"); ml != nullptr && ml->IsObject())
    for (auto m = ml->MemberBegin(); m != ml->MemberEnd(); ++m)
      if (m->value.IsString()) out += (out.empty() ? "" : ",") + std::string(json::view(m->name)) + "=" + std::string(json::view(m->value));
  return out;
}

}  // namespace

StoreResult<Document> MemoryStore::scale_of(const Served& s, const Document& obj) const {
  auto paths = scale_paths(s);
  if (!paths) return fail(errors::resource_not_found());
  const Value& root = obj.root();
  Document scale = Document::object();
  auto& a = scale.alloc();
  scale.root().AddMember("kind", "Scale", a);
  scale.root().AddMember("apiVersion", "autoscaling/v1", a);
  Value meta(rapidjson::kObjectType);
  for (const char* f : {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}) {
    const Value& v = member_or_null(member_or_null(root, "metadata"), f);
    if (!v.IsNull()) meta.AddMember(Value(f, a), Value(v, a), a);
  }
  scale.root().AddMember("metadata", meta, a);
  Value spec(rapidjson::kObjectType);
  spec.AddMember("replicas", json::get_int(root, paths->spec_replicas).value_or(0), a);
  scale.root().AddMember("spec", spec, a);
  Value status(rapidjson::kObjectType);
  status.AddMember("replicas", json::get_int(root, paths->status_replicas).value_or(0), a);
  std::string sel = paths->selector.empty() ? match_labels_string(root)
                    : paths->selector == "-" ? std::string() : json::string_at(root, paths->selector);
  if (!sel.empty()) status.AddMember("selector", json::str(sel, a), a);
  scale.root().AddMember("status", status, a);
  return scale;
}

StoreResult<Document> MemoryStore::update_scale(const Served& s, std::string_view ns, std::string_view name,
                                                const Document& scale, bool dry_run, PendingNotifications& p) {
  auto paths = scale_paths(s);
  if (!paths) return fail(errors::resource_not_found());
  Table& t = state_->tables.at(s.storage_key);
  auto it = t.objects.find(object_key(s.info, ns, name));
  if (it == t.objects.end()) return fail(errors::not_found(s.info, name));
  auto replicas = json::get_int(scale.root(), "/spec/replicas");
  if (!replicas || *replicas < 0) {
    ResourceInfo scale_info = s.info;
    scale_info.kind = "Scale";
    scale_info.group = "autoscaling";
    return fail(errors::invalid(scale_info, name,
                                {invalid_value(std::string("spec.replicas"), member_or_null(member_or_null(scale.root(), "spec"), "replicas"),
                                               "must be greater than or equal to 0")}));
  }
  Document next = present(s, *it->second.doc);
  std::string rv = json::string_at(scale.root(), "/metadata/resourceVersion");
  if (!rv.empty()) meta_set_string(next, "resourceVersion", rv);
  auto st = json::set(next, paths->spec_replicas, Value(*replicas));
  if (!st) return fail(errors::bad_request(st.error().message));
  auto res = update_locked(s, t, it->first, it->second.doc, std::move(next), "", dry_run, p);
  if (!res) return res;
  return scale_of(s, *res);
}

}  // namespace unitrain::localcluster

#include "core/api/meta.h"

#include <algorithm>

#include "core/api/decode.h"

namespace unitrain::api {
namespace {

std::string_view string_at(const json::Value& obj, std::string_view pointer) {
  return json::get_string(obj, pointer).value_or(std::string_view{});
}

std::optional<TimePoint> time_at(const json::Value& obj, std::string_view pointer) {
  auto s = json::get_string(obj, pointer);
  if (!s) return std::nullopt;
  auto t = parse_time(*s);
  if (!t) return std::nullopt;
  return *t;
}

Labels string_map_at(const json::Value& obj, std::string_view pointer) {
  Labels out;
  const json::Value* m = json::find(obj, pointer);
  if (m && m->IsObject()) {
    for (const auto& e : m->GetObject()) {
      if (e.value.IsString()) {
        out.emplace(std::string(e.name.GetString(), e.name.GetStringLength()),
                    std::string(e.value.GetString(), e.value.GetStringLength()));
      }
    }
  }
  return out;
}

Status ensure_object_root(json::Document& obj) {
  if (!obj.root().IsObject()) return fail("object: not a JSON object");
  return {};
}

}  // namespace

std::string_view api_version_of(const json::Value& obj) { return string_at(obj, "/apiVersion"); }
std::string_view kind_of(const json::Value& obj) { return string_at(obj, "/kind"); }
std::string_view name_of(const json::Value& obj) { return string_at(obj, "/metadata/name"); }
std::string_view namespace_of(const json::Value& obj) { return string_at(obj, "/metadata/namespace"); }
std::string_view uid_of(const json::Value& obj) { return string_at(obj, "/metadata/uid"); }
std::string_view resource_version_of(const json::Value& obj) { return string_at(obj, "/metadata/resourceVersion"); }
int64_t generation_of(const json::Value& obj) { return json::get_int(obj, "/metadata/generation").value_or(0); }
Labels annotations_of(const json::Value& obj) { return string_map_at(obj, "/metadata/annotations"); }
std::optional<std::string_view> label_of(const json::Value& obj, std::string_view key) {
  const json::Value* labels = json::find(obj, "/metadata/labels");
  if (labels == nullptr || !labels->IsObject()) return std::nullopt;
  const auto it =
      labels->FindMember(json::Value(rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size()))));
  if (it == labels->MemberEnd() || !it->value.IsString()) return std::nullopt;
  return json::view(it->value);
}
std::optional<TimePoint> creation_timestamp_of(const json::Value& obj) {
  return time_at(obj, "/metadata/creationTimestamp");
}
std::optional<TimePoint> deletion_timestamp_of(const json::Value& obj) {
  return time_at(obj, "/metadata/deletionTimestamp");
}

std::vector<std::string> finalizers_of(const json::Value& obj) {
  std::vector<std::string> out;
  const json::Value* f = json::find(obj, "/metadata/finalizers");
  if (f && f->IsArray()) {
    for (const auto& e : f->GetArray()) {
      if (e.IsString()) out.emplace_back(e.GetString(), e.GetStringLength());
    }
  }
  return out;
}

bool has_finalizer(const json::Value& obj, std::string_view finalizer) {
  auto f = finalizers_of(obj);
  return std::find(f.begin(), f.end(), finalizer) != f.end();
}

std::string key_of(const json::Value& obj) {
  std::string_view ns = namespace_of(obj);
  std::string out;
  if (!ns.empty()) {
    out += ns;
    out += '/';
  }
  out += name_of(obj);
  return out;
}

Status set_label(json::Document& obj, std::string_view key, std::string_view value) {
  if (auto s = ensure_object_root(obj); !s) return s;
  return json::set_string(obj, "/metadata/labels/" + json::escape_pointer_token(key), value);
}

Status set_annotation(json::Document& obj, std::string_view key, std::string_view value) {
  if (auto s = ensure_object_root(obj); !s) return s;
  return json::set_string(obj, "/metadata/annotations/" + json::escape_pointer_token(key), value);
}

bool remove_label(json::Document& obj, std::string_view key) {
  return json::remove(obj, "/metadata/labels/" + json::escape_pointer_token(key));
}

bool remove_annotation(json::Document& obj, std::string_view key) {
  return json::remove(obj, "/metadata/annotations/" + json::escape_pointer_token(key));
}

bool add_finalizer(json::Document& obj, std::string_view finalizer) {
  if (!obj.root().IsObject() || has_finalizer(obj.root(), finalizer)) return false;
  json::Value* f = json::find(obj.root(), "/metadata/finalizers");
  if (!f || !f->IsArray()) {
    if (!json::set(obj, "/metadata/finalizers", json::Value(rapidjson::kArrayType))) return false;
    f = json::find(obj.root(), "/metadata/finalizers");
  }
  f->PushBack(json::str(finalizer, obj.alloc()), obj.alloc());
  return true;
}

bool remove_finalizer(json::Document& obj, std::string_view finalizer) {
  json::Value* f = json::find(obj.root(), "/metadata/finalizers");
  if (!f || !f->IsArray()) return false;
  bool removed = false;
  for (auto it = f->Begin(); it != f->End();) {
    if (it->IsString() && std::string_view(it->GetString(), it->GetStringLength()) == finalizer) {
      it = f->Erase(it);
      removed = true;
    } else {
      ++it;
    }
  }
  return removed;
}

// ---- OwnerReference --------------------------------------------------------------------------

namespace {

// What from_json accepts, decoded without the field paths its errors would name (building them
// cost more than the decode: owner references are read for every child event); nullopt for
// anything from_json rejects.
std::optional<OwnerReference> well_formed_owner_reference(const json::Value& v) {
  if (!v.IsObject()) return std::nullopt;
  OwnerReference r;
  auto required = [&](std::string_view key, std::string& out) {
    const json::Value* m = Decoder::member(v, key);
    if (m == nullptr || !m->IsString() || m->GetStringLength() == 0) return false;
    out.assign(m->GetString(), m->GetStringLength());
    return true;
  };
  auto optional_flag = [&](std::string_view key, std::optional<bool>& out) {
    const json::Value* m = Decoder::member(v, key);
    if (m == nullptr) return true;
    if (!m->IsBool()) return false;
    out = m->GetBool();
    return true;
  };
  if (required("apiVersion", r.api_version) && required("kind", r.kind) && required("name", r.name) &&
      required("uid", r.uid) && optional_flag("controller", r.controller) &&
      optional_flag("blockOwnerDeletion", r.block_owner_deletion)) {
    return r;
  }
  return std::nullopt;
}

}  // namespace

Result<OwnerReference, FieldErrorList> OwnerReference::from_json(const json::Value& v, const FieldPath& path) {
  if (auto r = well_formed_owner_reference(v)) return std::move(*r);
  // Malformed: decoded again, to name each error's field.
  Decoder d;
  OwnerReference r;
  if (!d.expect_object(v, path)) return fail(std::move(d.errors()));
  auto required = [&](std::string_view key, std::string& out) {
    auto s = d.string(v, key, path);
    if (s && !s->empty()) {
      out = std::move(*s);
    } else if (s || Decoder::member(v, key) == nullptr) {  // a mistyped value is already reported
      d.add(FieldError::required(path.child(key)));
    }
  };
  required("apiVersion", r.api_version);
  required("kind", r.kind);
  required("name", r.name);
  required("uid", r.uid);
  r.controller = d.boolean(v, "controller", path);
  r.block_owner_deletion = d.boolean(v, "blockOwnerDeletion", path);
  if (!d.ok()) return fail(std::move(d.errors()));
  return r;
}

json::Value OwnerReference::to_json(json::Allocator& a) const {
  json::Value o(rapidjson::kObjectType);
  put_string(o, "apiVersion", api_version, a);
  put_string(o, "kind", kind, a);
  put_string(o, "name", name, a);
  put_string(o, "uid", uid, a);
  if (controller) put_bool(o, "controller", *controller, a);
  if (block_owner_deletion) put_bool(o, "blockOwnerDeletion", *block_owner_deletion, a);
  return o;
}

std::vector<OwnerReference> owner_references_of(const json::Value& obj) {
  std::vector<OwnerReference> out;
  const json::Value* refs = json::find(obj, "/metadata/ownerReferences");
  if (!refs || !refs->IsArray()) return out;
  for (const auto& e : refs->GetArray()) {
    if (auto r = well_formed_owner_reference(e)) out.push_back(std::move(*r));
  }
  return out;
}

std::optional<OwnerReference> controller_of(const json::Value& obj) {
  // Runs for every child event a shared informer dispatches: stops at the first controller.
  const json::Value* refs = json::find(obj, "/metadata/ownerReferences");
  if (!refs || !refs->IsArray()) return std::nullopt;
  for (const auto& e : refs->GetArray()) {
    auto r = well_formed_owner_reference(e);
    if (r && r->controller.value_or(false)) return r;
  }
  return std::nullopt;
}

bool is_controlled_by(const json::Value& obj, std::string_view owner_uid) {
  auto c = controller_of(obj);
  return c && c->uid == owner_uid;
}

OwnerReference make_owner_reference(const json::Value& owner, bool controller) {
  OwnerReference r;
  r.api_version = api_version_of(owner);
  r.kind = kind_of(owner);
  r.name = name_of(owner);
  r.uid = uid_of(owner);
  if (controller) {
    r.controller = true;
    r.block_owner_deletion = true;
  }
  return r;
}

Status set_owner_reference(json::Document& obj, const OwnerReference& ref) {
  if (auto s = ensure_object_root(obj); !s) return s;
  if (ref.controller.value_or(false)) {
    auto existing = controller_of(obj.root());
    if (existing && existing->uid != ref.uid) {
      return fail("metadata.ownerReferences: object " + key_of(obj.root()) + " is already controlled by " +
                  existing->kind + " " + existing->name + " (uid " + existing->uid + ")");
    }
  }
  json::Value* refs = json::find(obj.root(), "/metadata/ownerReferences");
  if (!refs || !refs->IsArray()) {
    if (auto s = json::set(obj, "/metadata/ownerReferences", json::Value(rapidjson::kArrayType)); !s) return s;
    refs = json::find(obj.root(), "/metadata/ownerReferences");
  }
  for (auto& e : refs->GetArray()) {
    auto uid = json::get_string(e, "/uid");
    if (uid && *uid == ref.uid) {
      e = ref.to_json(obj.alloc());
      return {};
    }
  }
  refs->PushBack(ref.to_json(obj.alloc()), obj.alloc());
  return {};
}

// ---- metav1.Condition --------------------------------------------------------------------------

Result<Condition, FieldErrorList> Condition::from_json(const json::Value& v, const FieldPath& path) {
  Decoder d;
  Condition c;
  if (!d.expect_object(v, path)) return fail(std::move(d.errors()));
  auto type = d.string(v, "type", path);
  if (!type && !Decoder::member(v, "type")) d.add(FieldError::required(path.child("type")));
  c.type = type.value_or("");
  auto status = d.string(v, "status", path);
  if (!status && !Decoder::member(v, "status")) d.add(FieldError::required(path.child("status")));
  c.status = status.value_or("");
  c.observed_generation = d.int64(v, "observedGeneration", path).value_or(0);
  c.last_transition_time = d.time(v, "lastTransitionTime", path);
  c.reason = d.string(v, "reason", path).value_or("");
  c.message = d.string(v, "message", path).value_or("");
  if (!d.ok()) return fail(std::move(d.errors()));
  return c;
}

json::Value Condition::to_json(json::Allocator& a) const {
  json::Value o(rapidjson::kObjectType);
  put_string(o, "type", type, a);
  put_string(o, "status", status, a);
  if (observed_generation != 0) put_int(o, "observedGeneration", observed_generation, a);
  put_time(o, "lastTransitionTime", last_transition_time, a);
  put_string(o, "reason", reason, a);
  put_string(o, "message", message, a);
  return o;
}

const Condition* find_status_condition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool set_status_condition(std::vector<Condition>& conditions, Condition c, TimePoint now) {
  for (auto& existing : conditions) {
    if (existing.type != c.type) continue;
    const Condition before = existing;
    if (existing.status != c.status) {
      existing.status = c.status;
      existing.last_transition_time = c.last_transition_time.value_or(truncate_to_seconds(now));
    }
    existing.reason = c.reason;
    existing.message = c.message;
    existing.observed_generation = c.observed_generation;
    return !(existing == before);
  }
  if (!c.last_transition_time) c.last_transition_time = truncate_to_seconds(now);
  conditions.push_back(std::move(c));
  return true;
}

bool set_status_condition(json::Value& conditions, Condition c, TimePoint now, json::Allocator& a) {
  if (!conditions.IsArray()) conditions.SetArray();
  for (auto& entry : conditions.GetArray()) {
    if (string_at(entry, "/type") != c.type) continue;
    std::vector<Condition> existing;
    if (auto decoded = Condition::from_json(entry, FieldPath("conditions"))) existing.push_back(std::move(*decoded));
    if (!set_status_condition(existing, std::move(c), now)) return false;
    entry = existing.front().to_json(a);
    return true;
  }
  std::vector<Condition> added;
  set_status_condition(added, std::move(c), now);
  conditions.PushBack(added.front().to_json(a), a);
  return true;
}

}  // namespace unitrain::api

// Create and update in the memory store: the fields only the server sets (uid, timestamps,
// generation, status on create), generateName, name and namespace rules, optimistic concurrency
// on resourceVersion, defaulting and schema validation, finalizers of objects being deleted,
// batch/v1 Job validation (job_validation.h), and CRDs, which start serving their resources once committed.
#include <algorithm>

#include "localcluster/builtin_defaults.h"
#include "localcluster/job_validation.h"
#include "localcluster/managed_fields.h"
#include "localcluster/memory_store_impl.h"
#include "localcluster/object_meta.h"
#include "localcluster/object_names.h"
#include "localcluster/pod_admission.h"
#include "localcluster/validation_rules.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

// The suffix kube-apiserver appends to generateName: five characters from an alphabet without
// vowels and look-alikes.
std::string random_suffix(std::mt19937_64& rng) {
  static constexpr std::string_view alphabet = "bcdfghjklmnpqrstvwxz2456789";
  std::uniform_int_distribution<size_t> dist(0, alphabet.size() - 1);
  std::string s;
  for (int i = 0; i < 5; ++i) s += alphabet[dist(rng)];
  return s;
}

std::vector<FieldError> custom_resource_checks(const Served& s, Document& obj, const Value* old) {
  if (s.version == nullptr || !s.version->schema.root().IsObject()) return {};
  const Value& schema = s.version->schema.root();
  prune(obj.root(), schema, obj.alloc());
  apply_defaults(obj.root(), schema, obj.alloc());
  std::vector<FieldError> errs = validate_schema(obj.root(), schema, old);
  std::vector<FieldError> rule_errs = validate_rules(obj.root(), old, schema);
  errs.insert(errs.end(), rule_errs.begin(), rule_errs.end());
  return errs;
}

bool spec_changed(const Served& s, const Value& a, const Value& b) {
  if (s.crd == nullptr) return !json::equal(member_or_null(a, "spec"), member_or_null(b, "spec"));
  // Custom resources: anything outside metadata and status counts.
  auto differs = [](const Value& x, const Value& y) {
    for (auto it = x.MemberBegin(); it != x.MemberEnd(); ++it) {
      std::string_view k(it->name.GetString(), it->name.GetStringLength());
      if (k == "metadata" || k == "status" || k == "apiVersion" || k == "kind") continue;
      auto other = y.FindMember(it->name);
      if (other == y.MemberEnd() || !json::equal(it->value, other->value)) return true;
    }
    return false;
  };
  return differs(a, b) || differs(b, a);
}

}  // namespace

StoreResult<Document> MemoryStore::update(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                          Document obj, std::string_view subresource, bool dry_run,
                                          std::string_view field_manager) {
  PendingNotifications p;
  StoreResult<Document> out = [&]() -> StoreResult<Document> {
    std::lock_guard l(state_->mu);
    const Served* s = lookup(r);
    if (s == nullptr) return fail(errors::resource_not_found());
    if (!obj.root().IsObject()) return fail(errors::bad_request("the body of the request must be a JSON object"));
    if (subresource == "scale") return update_scale(*s, ns, name, obj, dry_run, p);
    std::string body_name = json::string_at(obj.root(), "/metadata/name");
    if (!body_name.empty() && body_name != name) return fail(errors::name_mismatch(body_name, name));
    auto st = check_namespace(*s, ns, obj);
    if (!st) return fail(std::move(st).error());
    Table& t = state_->tables.at(s->storage_key);
    auto it = t.objects.find(object_key(s->info, ns, name));
    if (it == t.objects.end()) return fail(errors::not_found(s->info, name));
    if (s->crd != nullptr && json::string_at(obj.root(), "/metadata/resourceVersion").empty()) {
      return fail(errors::invalid(s->info, name,
                                  {invalid_value_text("metadata.resourceVersion", "0x0",
                                                      "must be specified for an update")}));
    }
    return update_locked(*s, t, it->first, it->second.doc, std::move(obj), subresource, dry_run, p,
                         FieldOwner{field_manager});
  }();
  p.fire();
  return out;
}

StoreResult<void> MemoryStore::check_namespace(const Served& s, std::string_view ns, Document& obj) const {
  if (!s.info.namespaced) {
    meta_remove(obj, "namespace");
    return {};
  }
  std::string body_ns = json::string_at(obj.root(), "/metadata/namespace");
  if (!body_ns.empty() && body_ns != ns) return fail(errors::namespace_mismatch());
  meta_set_string(obj, "namespace", ns);
  return {};
}

// LimitRange defaults and constraints, then ResourceQuota, over the namespace as it is now (under
// the lock); a PersistentVolumeClaim meets the LimitRange's PersistentVolumeClaim items only.
StoreResult<void> MemoryStore::admit_with_namespace_policies(const ResourceInfo& r, const std::string& ns,
                                                             const std::string& name, Document& obj) {
  auto in_namespace = [&](const char* skey) {
    std::vector<const Value*> out;
    auto t = state_->tables.find(skey);
    if (t == state_->tables.end()) return out;
    std::string lo = ns + "/", hi = ns + "0";  // '0' follows '/' in ASCII
    for (auto it = t->second.objects.lower_bound(lo); it != t->second.objects.lower_bound(hi); ++it)
      out.push_back(&it->second.doc->root());
    return out;
  };
  if (auto ranges = in_namespace("/limitranges"); !ranges.empty()) {
    if (r.resource == "persistentvolumeclaims") {
      if (auto refusal = limit_range_claim_refusal(obj.root(), ranges)) return fail(errors::forbidden(r, name, *refusal));
      return {};
    }
    apply_limit_ranges(obj, ranges);
    if (auto refusal = limit_range_refusal(obj.root(), ranges)) return fail(errors::forbidden(r, name, *refusal));
  }
  if (r.resource != "pods") return {};
  // The namespace's pods are only read when a quota needs them: creates stay O(1) without one.
  auto quotas = in_namespace("/resourcequotas");
  if (quotas.empty()) return {};
  if (auto refusal = quota_refusal(obj.root(), quotas, in_namespace("/pods")))
    return fail(errors::forbidden(r, name, *refusal));
  return {};
}

StoreResult<void> MemoryStore::default_and_validate(const Served& s, Document& obj, const std::string& name,
                                                     const Value* old) {
  std::vector<FieldError> errs = validate_labels_and_annotations(obj.root());
  if (s.crd != nullptr) {
    std::vector<FieldError> cr = custom_resource_checks(s, obj, old);
    errs.insert(errs.end(), cr.begin(), cr.end());
    set_member(obj, "apiVersion", Value((s.info.group + "/" + s.crd->storage_version).c_str(), obj.alloc()));
  } else {
    default_builtin(s.info, obj, state_->rng);
  }
  if (!errs.empty()) return fail(errors::invalid(s.info, name, errs));
  return {};
}

StoreResult<std::shared_ptr<const CrdDefinition>> MemoryStore::prepare_crd(const Served& s, Document& obj,
                                                                           const std::string& name) {
  default_crd(obj);
  auto def = parse_crd(obj.root());
  if (!def) return fail(errors::invalid(s.info, name, def.error()));
  set_crd_status(obj, *def, now_rfc3339());
  // A version objects may still be stored in cannot leave spec.versions (kube-apiserver refuses
  // the update; dropping it would strand those objects).
  std::vector<FieldError> errs;
  const auto stored = json::strings_at(obj.root(), "/status/storedVersions");
  for (size_t i = 0; i < stored.size(); ++i) {
    auto served = std::find_if(def->versions.begin(), def->versions.end(),
                               [&](const CrdVersion& v) { return v.name == stored[i]; });
    if (served == def->versions.end()) {
      errs.push_back(invalid_value_text("status.storedVersions[" + std::to_string(i) + "]", "\"" + stored[i] + "\"",
                                        "must appear in spec.versions"));
    }
  }
  if (!errs.empty()) return fail(errors::invalid(s.info, name, errs));
  return std::make_shared<const CrdDefinition>(std::move(*def));
}

StoreResult<void> MemoryStore::record_fields(const Served& s, const Value* old, Document& next,
                                             std::string_view subresource, const FieldOwner& owner) const {
  if (owner.manager.empty()) return {};
  FieldsContext ctx;
  ctx.custom_resource = s.crd != nullptr;
  if (s.version != nullptr && s.version->schema.root().IsObject()) ctx.schema = &s.version->schema.root();
  FieldManagerRequest req{std::string(owner.manager), s.info.api_version(), std::string(subresource), now_rfc3339()};
  if (owner.apply_config != nullptr) return record_apply(old, *owner.apply_config, next, ctx, req, owner.force);
  record_update(old, next, ctx, req);
  return {};
}

StoreResult<Document> MemoryStore::create_locked(const ResourceInfo& r, std::string_view ns_in, Document obj,
                                                 bool dry_run, PendingNotifications& p, const FieldOwner& owner) {
  const Served* s = lookup(r);
  if (s == nullptr) return fail(errors::resource_not_found());
  if (!obj.root().IsObject()) return fail(errors::bad_request("the body of the request must be a JSON object"));
  std::string ns(ns_in);
  if (s->info.namespaced && ns.empty()) {
    ns = json::string_at(obj.root(), "/metadata/namespace");
    if (ns.empty()) ns = "default";
  }
  auto st = check_namespace(*s, ns, obj);
  if (!st) return fail(std::move(st).error());
  if (s->info.namespaced) {
    const Table& nst = state_->tables.at("/namespaces");
    auto nit = nst.objects.find(ns);
    if (nit == nst.objects.end()) return fail(errors::namespace_not_found(ns));
    if (json::find(nit->second.doc->root(), "/metadata/deletionTimestamp") != nullptr) {
      return fail(errors::forbidden(s->info, json::string_at(obj.root(), "/metadata/name"),
                                    "unable to create new content in namespace " + ns +
                                        " because it is being terminated"));
    }
  }
  Table& t = state_->tables.at(s->storage_key);
  std::string name = json::string_at(obj.root(), "/metadata/name");
  if (name.empty()) {
    std::string gen = json::string_at(obj.root(), "/metadata/generateName");
    if (gen.empty()) {
      return fail(errors::invalid(s->info, "", {required_value("metadata.name", "name or generateName is required")}));
    }
    // kube-apiserver trims the prefix so the result stays within 63 characters.
    if (gen.size() > 58) gen.resize(58);
    for (int attempt = 0; attempt < 8; ++attempt) {
      name = gen + random_suffix(state_->rng);
      if (t.objects.find(object_key(s->info, ns, name)) == t.objects.end()) break;
    }
    meta_set_string(obj, "name", name);
  }
  if (auto bad = check_object_name(s->info, name)) {
    return fail(errors::invalid(s->info, name, {invalid_value_text("metadata.name", "\"" + name + "\"", *bad)}));
  }
  std::string key = object_key(s->info, ns, name);
  if (t.objects.find(key) != t.objects.end()) return fail(errors::already_exists(s->info, name));

  set_member(obj, "apiVersion", Value(s->info.api_version().c_str(), obj.alloc()));
  set_member(obj, "kind", Value(s->info.kind.c_str(), obj.alloc()));
  // Fields only the server sets.
  for (const char* f : {"deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"}) {
    meta_remove(obj, f);
  }
  meta_set_string(obj, "uid", random_uuid(state_->rng));
  meta_set_string(obj, "creationTimestamp", now_rfc3339());
  meta_set(obj, "generation", Value(int64_t{1}));
  if (s->info.has_status && !(s->info.group.empty() && s->info.resource == "nodes")) {
    set_member(obj, "status", null_value());
  }
  if (s->info.group.empty() && s->info.resource == "pods") {
    Value status(rapidjson::kObjectType);
    status.AddMember("phase", "Pending", obj.alloc());
    status.AddMember("qosClass", json::str(qos_class(member_or_null(obj.root(), "spec")), obj.alloc()), obj.alloc());
    set_member(obj, "status", status);
  }
  if (s->info.group.empty() && s->info.resource == "namespaces") {
    (void)json::set_string(obj, "/status/phase", "Active");
  }
  if (s->info.group.empty() && (s->info.resource == "persistentvolumeclaims" || s->info.resource == "persistentvolumes")) {
    (void)json::set_string(obj, "/status/phase", "Pending");
  }
  if (s->info.group == "batch" && s->info.resource == "jobs") default_job_selector(obj);
  if (const Value* sent = json::find(obj.root(), "/metadata/managedFields");
      sent == nullptr || !sent->IsArray() || sent->Empty()) {
    // managedFields sent on create are kept as they are (what a dry run computed, a restore).
    meta_remove(obj, "managedFields");
    if (auto st = record_fields(*s, nullptr, obj, "", owner); !st) return fail(std::move(st).error());
  }
  auto adm = default_and_validate(*s, obj, name, nullptr);
  if (!adm) return fail(std::move(adm).error());
  if (s->info.group == "batch" && s->info.resource == "jobs") {
    if (auto errs = job_create_errors(obj.root()); !errs.empty()) return fail(errors::invalid(s->info, name, errs));
  }
  if (s->info.group.empty() && (s->info.resource == "pods" || s->info.resource == "persistentvolumeclaims")) {
    auto admitted = admit_with_namespace_policies(s->info, ns, name, obj);
    if (!admitted) return fail(std::move(admitted).error());
  }
  std::shared_ptr<const CrdDefinition> crd;
  if (is_crd(s->info)) {
    auto def = prepare_crd(*s, obj, name);
    if (!def) return fail(std::move(def).error());
    crd = std::move(*def);
  }
  if (dry_run) return present(*s, obj);
  auto stored = commit(*s, t, key, std::move(obj), "ADDED", p);
  if (!stored) return fail(std::move(stored).error());
  if (crd) register_crd(*state_, *crd);
  return present(*s, **stored);
}

StoreResult<Document> MemoryStore::update_locked(const Served& s, Table& t, const std::string& key,
                                                 DocPtr existing, Document obj, std::string_view subresource,
                                                 bool dry_run, PendingNotifications& p, const FieldOwner& owner) {
  const Value& old = existing->root();
  std::string name = json::string_at(old, "/metadata/name");
  std::string old_rv = json::string_at(old, "/metadata/resourceVersion");
  std::string new_rv = json::string_at(obj.root(), "/metadata/resourceVersion");
  if (!new_rv.empty() && new_rv != old_rv) return fail(errors::stale_resource_version(s.info, name));

  Document next;
  if (subresource == "status") {
    if (!s.info.has_status) return fail(errors::resource_not_found());
    next = *existing;
    set_member(next, "status", member_or_null(obj.root(), "status"));
    if (const Value* sent = json::find(obj.root(), "/metadata/managedFields")) meta_set(next, "managedFields", *sent);
  } else if (!subresource.empty()) {
    return fail(errors::resource_not_found());
  } else {
    next = std::move(obj);
    if (s.info.has_status) set_member(next, "status", member_or_null(old, "status"));
    const Value& old_meta = member_or_null(old, "metadata");
    for (const char* f : {"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                          "generation", "namespace", "name"}) {
      meta_set(next, f, member_or_null(old_meta, f));
    }
    set_member(next, "apiVersion", member_or_null(old, "apiVersion"));
    set_member(next, "kind", member_or_null(old, "kind"));
    if (json::find(old, "/metadata/deletionTimestamp") != nullptr) {
      auto before = finalizers_of(old);
      std::vector<FieldError> errs;
      for (const std::string& f : finalizers_of(next.root())) {
        if (std::find(before.begin(), before.end(), f) == before.end()) {
          errs.push_back(forbidden("metadata.finalizers",
                                   "no new finalizers can be added if the object is being deleted, found new "
                                   "finalizers []string{\"" + f + "\"}"));
          break;
        }
      }
      if (!errs.empty()) return fail(errors::invalid(s.info, name, errs));
    }
  }
  meta_set_string(next, "resourceVersion", old_rv);
  if (json::find(next.root(), "/metadata/managedFields") == nullptr) {
    // A writer that dropped managedFields (built the object afresh) does not erase them.
    if (const Value* kept = json::find(old, "/metadata/managedFields")) meta_set(next, "managedFields", *kept);
  }
  if (auto st = record_fields(s, &old, next, subresource, owner); !st) return fail(std::move(st).error());
  auto adm = default_and_validate(s, next, name, &old);
  if (!adm) return fail(std::move(adm).error());
  if (subresource.empty() && s.info.group == "batch" && s.info.resource == "jobs") {
    if (auto errs = job_update_errors(old, next.root()); !errs.empty())
      return fail(errors::invalid(s.info, name, errs));
  }
  std::shared_ptr<const CrdDefinition> crd;
  if (is_crd(s.info)) {
    auto def = prepare_crd(s, next, name);
    if (!def) return fail(std::move(def).error());
    crd = std::move(*def);
  }
  if (spec_changed(s, old, next.root())) {
    meta_set(next, "generation", Value(json::get_int(old, "/metadata/generation").value_or(0) + 1));
  }
  if (json::equal(next.root(), old)) return present(s, *existing);  // no-op: no new resourceVersion, no event
  if (dry_run) return present(s, next);
  bool finished = json::find(next.root(), "/metadata/deletionTimestamp") != nullptr &&
                  finalizers_of(next.root()).empty() &&
                  json::get_int(next.root(), "/metadata/deletionGracePeriodSeconds").value_or(0) == 0;
  auto stored = commit(s, t, key, std::move(next), finished ? "DELETED" : "MODIFIED", p);
  if (!stored) return fail(std::move(stored).error());
  if (crd) register_crd(*state_, *crd);
  return present(s, **stored);
}

}  // namespace unitrain::localcluster

#include "localcluster/api_front.h"

#include <utility>

namespace unitrain::localcluster {

using json::Document;
using json::Value;

struct ApiFront::Impl {
  Impl(Store& s, WebhookOptions o)
      : options(std::move(o)), caller(options), versions(s, caller, uuids), admission(versions, caller, uuids) {}

  WebhookOptions options;
  WebhookCaller caller;
  UuidSource uuids;
  ConvertingStore versions;
  AdmissionWebhooks admission;

  StoreResult<Document> create(const ResourceInfo& r, std::string_view ns, Document obj, bool dry_run,
                               std::string_view manager, CallNotes& notes) {
    if (is_webhook_configuration(r)) return versions.create(r, ns, std::move(obj), dry_run, manager);
    std::string name = obj.root().IsObject() ? json::string_at(obj.root(), "/metadata/name") : "";
    AdmissionAttributes at = admission_attributes(r, ns, name, "", Operation::Create, "CreateOptions", dry_run);
    const MatchingWebhooks hooks = admission.matching(at);
    if (hooks.empty()) return versions.create(r, ns, std::move(obj), dry_run, manager);
    if (!obj.root().IsObject()) return versions.create(r, ns, std::move(obj), dry_run, manager);
    if (r.namespaced && !ns.empty()) (void)json::set_string(obj, "/metadata/namespace", ns);
    if (!json::find(obj.root(), "/apiVersion")) set_member(obj, "apiVersion", json::str(r.api_version(), obj.alloc()));
    if (!json::find(obj.root(), "/kind")) set_member(obj, "kind", json::str(r.kind, obj.alloc()));
    if (auto s = admission.mutate(hooks.mutating, at, &obj, nullptr, notes); !s) return fail(std::move(s).error());
    // Validating webhooks see the object as it will be stored: defaulted, named, validated.
    auto pre = versions.create(r, ns, obj, true, manager);
    if (!pre) return pre;
    at.name = json::string_at(pre->root(), "/metadata/name");
    if (auto s = admission.validate(hooks.validating, at, &*pre, nullptr, notes); !s) return fail(std::move(s).error());
    if (dry_run) return pre;
    // Stored from the mutated object, not the dry run's result: defaults derived from the uid
    // (a Job's controller-uid selector) must come from the real create. Only the name generated
    // by the dry run is kept, so the object stored is the one the webhooks saw.
    (void)json::set_string(obj, "/metadata/name", at.name);
    return versions.create(r, ns, std::move(obj), false, manager);
  }

  StoreResult<Document> update(const ResourceInfo& r, std::string_view ns, std::string_view name, Document obj,
                               std::string_view sub, bool dry_run, std::string_view manager, CallNotes& notes) {
    if (is_webhook_configuration(r)) return versions.update(r, ns, name, std::move(obj), sub, dry_run, manager);
    AdmissionAttributes at = admission_attributes(r, ns, name, sub, Operation::Update, "UpdateOptions", dry_run);
    const MatchingWebhooks hooks = admission.matching(at);
    if (hooks.empty()) return versions.update(r, ns, name, std::move(obj), sub, dry_run, manager);
    auto old = versions.get(r, ns, name, sub);
    if (!old) return old;
    if (auto s = admission.mutate(hooks.mutating, at, &obj, &*old, notes); !s) return fail(std::move(s).error());
    auto pre = versions.update(r, ns, name, std::move(obj), sub, true, manager);
    if (!pre) return pre;
    if (auto s = admission.validate(hooks.validating, at, &*pre, &*old, notes); !s) return fail(std::move(s).error());
    if (dry_run) return pre;
    return versions.update(r, ns, name, std::move(*pre), sub, false, manager);
  }

  StoreResult<Document> patch(const ResourceInfo& r, std::string_view ns, std::string_view name, PatchKind kind,
                              std::string_view body, std::string_view sub, std::string_view field_manager,
                              bool dry_run, bool force, CallNotes& notes) {
    if (is_webhook_configuration(r)) return versions.patch(r, ns, name, kind, body, sub, field_manager, dry_run, force);
    AdmissionAttributes at = admission_attributes(r, ns, name, sub, Operation::Update, "PatchOptions", dry_run);
    if (!field_manager.empty()) {
      at.options = Document::object();
      at.options.root().AddMember("fieldManager", json::str(field_manager, at.options.alloc()), at.options.alloc());
    }
    AdmissionAttributes create_at = admission_attributes(r, ns, name, sub, Operation::Create, "PatchOptions", dry_run);
    const MatchingWebhooks hooks = admission.matching(at);
    if (hooks.empty() && admission.matching(create_at).empty()) {
      return versions.patch(r, ns, name, kind, body, sub, field_manager, dry_run, force);
    }
    for (int attempt = 0;; ++attempt) {
      auto old = versions.get(r, ns, name, sub);
      if (!old && !(old.error().code == 404 && kind == PatchKind::Apply && sub.empty())) return old;
      auto pre = versions.patch(r, ns, name, kind, body, sub, field_manager, true, force);
      if (!pre) return pre;
      if (!old) return create(r, ns, std::move(*pre), dry_run, field_manager, notes);  // server-side apply of a new object
      Document obj = std::move(*pre);
      bool changed_by_webhook = false;
      {
        Document before = obj;
        if (auto s = admission.mutate(hooks.mutating, at, &obj, &*old, notes); !s) return fail(std::move(s).error());
        changed_by_webhook = !json::equal(before.root(), obj.root());
      }
      if (changed_by_webhook) {
        auto again = versions.update(r, ns, name, std::move(obj), sub, true);
        if (!again) return again;
        obj = std::move(*again);
      }
      if (auto s = admission.validate(hooks.validating, at, &obj, &*old, notes); !s) return fail(std::move(s).error());
      if (dry_run) return obj;
      auto out = versions.update(r, ns, name, std::move(obj), sub, false);
      if (!out && out.error().code == 409 && attempt < kPatchConflictRetries) {
        notes.warnings.clear();
        continue;
      }
      return out;
    }
  }

  static Document delete_options(const DeleteRequest& req) {
    Document o = Document::object();
    auto& a = o.alloc();
    if (req.propagation_policy) o.root().AddMember("propagationPolicy", json::str(*req.propagation_policy, a), a);
    if (req.grace_period_seconds) o.root().AddMember("gracePeriodSeconds", *req.grace_period_seconds, a);
    return o;
  }

  // DELETE admission: mutating webhooks get no objects (kube-apiserver passes none), validating
  // ones get the object being deleted as oldObject.
  StoreResult<void> admit_delete(const ResourceInfo& r, std::string_view ns, const Document& old,
                                 const DeleteRequest& req, const MatchingWebhooks& hooks, CallNotes& notes) {
    AdmissionAttributes at = admission_attributes(r, ns, json::string_at(old.root(), "/metadata/name"), "",
                                                  Operation::Delete, "DeleteOptions", req.dry_run);
    at.options = delete_options(req);
    if (auto s = admission.mutate(hooks.mutating, at, nullptr, nullptr, notes); !s) return s;
    return admission.validate(hooks.validating, at, nullptr, &old, notes);
  }

  StoreResult<Document> remove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                               const DeleteRequest& req, CallNotes& notes) {
    if (is_webhook_configuration(r)) return versions.remove(r, ns, name, req);
    AdmissionAttributes at = admission_attributes(r, ns, name, "", Operation::Delete, "DeleteOptions", req.dry_run);
    const MatchingWebhooks hooks = admission.matching(at);
    if (hooks.empty()) return versions.remove(r, ns, name, req);
    auto old = versions.get(r, ns, name, "");
    if (!old) return old;
    if (auto s = admit_delete(r, ns, *old, req, hooks, notes); !s) return fail(std::move(s).error());
    DeleteRequest guarded = req;
    // Delete exactly what the webhooks saw.
    if (!guarded.precondition_resource_version) {
      guarded.precondition_resource_version = json::string_at(old->root(), "/metadata/resourceVersion");
    }
    return versions.remove(r, ns, name, guarded);
  }

  StoreResult<std::string> remove_collection(const ResourceInfo& r, std::string_view ns, const ListRequest& selector,
                                             const DeleteRequest& req, CallNotes& notes) {
    AdmissionAttributes at = admission_attributes(r, ns, "", "", Operation::Delete, "DeleteOptions", req.dry_run);
    const MatchingWebhooks hooks = is_webhook_configuration(r) ? MatchingWebhooks{} : admission.matching(at);
    if (!hooks.empty()) {
      // Each object is admitted as its own DELETE, as kube-apiserver's DeleteCollection does;
      // nothing is deleted when any is refused.
      auto text = versions.list(r, ns, selector);
      if (!text) return text;
      auto doc = Document::parse(*text);
      if (!doc) return fail(errors::internal(doc.error().message));
      if (const Value* items = json::find(doc->root(), "/items"); items != nullptr && items->IsArray()) {
        for (const auto& it : items->GetArray()) {
          Document old = Document::copy_of(it);
          if (!old.root().HasMember("apiVersion")) {
            set_member(old, "apiVersion", json::str(r.api_version(), old.alloc()));
          }
          if (!old.root().HasMember("kind")) set_member(old, "kind", json::str(r.kind, old.alloc()));
          std::string item_ns = json::string_at(old.root(), "/metadata/namespace");
          if (auto s = admit_delete(r, item_ns, old, req, hooks, notes); !s) {
            return fail(std::move(s).error());
          }
        }
      }
    }
    return versions.remove_collection(r, ns, selector, req);
  }
};

ApiFront::ApiFront(Store& store, WebhookOptions options) : impl_(std::make_unique<Impl>(store, std::move(options))) {}
ApiFront::~ApiFront() = default;

StoreResult<json::Document> ApiFront::get(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                          std::string_view subresource) {
  return impl_->versions.get(r, ns, name, subresource);
}
StoreResult<std::string> ApiFront::list(const ResourceInfo& r, std::string_view ns, const ListRequest& req) {
  return impl_->versions.list(r, ns, req);
}
StoreResult<json::Document> ApiFront::create(const ResourceInfo& r, std::string_view ns, json::Document obj,
                                             bool dry_run, CallNotes& notes, std::string_view field_manager) {
  return impl_->create(r, ns, std::move(obj), dry_run, field_manager, notes);
}
StoreResult<json::Document> ApiFront::update(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                             json::Document obj, std::string_view subresource, bool dry_run,
                                             CallNotes& notes, std::string_view field_manager) {
  return impl_->update(r, ns, name, std::move(obj), subresource, dry_run, field_manager, notes);
}
StoreResult<json::Document> ApiFront::patch(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                            PatchKind kind, std::string_view body, std::string_view subresource,
                                            std::string_view field_manager, bool dry_run, CallNotes& notes,
                                            bool force) {
  return impl_->patch(r, ns, name, kind, body, subresource, field_manager, dry_run, force, notes);
}
StoreResult<json::Document> ApiFront::remove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                             const DeleteRequest& req, CallNotes& notes) {
  return impl_->remove(r, ns, name, req, notes);
}
StoreResult<std::string> ApiFront::remove_collection(const ResourceInfo& r, std::string_view ns,
                                                     const ListRequest& selector, const DeleteRequest& req,
                                                     CallNotes& notes) {
  return impl_->remove_collection(r, ns, selector, req, notes);
}
StoreResult<std::unique_ptr<Watcher>> ApiFront::watch(const ResourceInfo& r, std::string_view ns,
                                                      const WatchRequest& req) {
  return impl_->versions.watch(r, ns, req);
}

}  // namespace unitrain::localcluster

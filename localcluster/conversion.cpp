#include "localcluster/conversion.h"

#include <chrono>
#include <functional>

#include <fmt/format.h>

#include "localcluster/crd.h"
#include "localcluster/object_patch.h"

namespace unitrain::localcluster {
namespace {

using json::Document;
using json::Value;

// kube-apiserver's fixed timeout for conversion webhooks.
constexpr std::chrono::seconds kConversionTimeout{30};

// Drains the storage-version watch and converts each object to the watched version.
class ConvertingWatcher : public Watcher {
 public:
  using Convert = std::function<StoreResult<void>(std::vector<Document*>)>;
  ConvertingWatcher(Convert convert, std::unique_ptr<Watcher> inner)
      : convert_(std::move(convert)), inner_(std::move(inner)) {}

  std::vector<WatchEvent> drain(bool& closed) override {
    if (failed_) {
      closed = true;
      return {};
    }
    auto events = inner_->drain(closed);
    std::vector<Document> docs;
    std::vector<size_t> index;
    for (size_t i = 0; i < events.size(); ++i) {
      const auto& t = events[i].type;
      if ((t != "ADDED" && t != "MODIFIED" && t != "DELETED") || !events[i].object) continue;
      auto d = Document::parse(*events[i].object);
      if (!d) continue;
      docs.push_back(std::move(*d));
      index.push_back(i);
    }
    if (docs.empty()) return events;
    std::vector<Document*> ptrs;
    for (auto& d : docs) ptrs.push_back(&d);
    if (auto s = convert_(std::move(ptrs)); !s) {
      failed_ = true;
      closed = true;
      inner_->stop();
      StatusError e = std::move(s).error();
      return {WatchEvent{"ERROR", std::make_shared<const std::string>(e.to_status().dump())}};
    }
    for (size_t k = 0; k < index.size(); ++k) {
      events[index[k]].object = std::make_shared<const std::string>(docs[k].dump());
    }
    return events;
  }
  void set_notify(std::function<void()> notify) override { inner_->set_notify(std::move(notify)); }
  void stop() override { inner_->stop(); }
  void request_bookmark() override { inner_->request_bookmark(); }

 private:
  Convert convert_;
  std::unique_ptr<Watcher> inner_;
  bool failed_ = false;
};

}  // namespace

ConvertingStore::ConvertingStore(Store& store, WebhookCaller& caller, UuidSource& uuids)
    : store_(store), caller_(caller), uuids_(uuids) {}

std::optional<Conversion> ConvertingStore::conversion_for(const ResourceInfo& r) const {
  if (!r.conversion_webhook || r.version == r.storage_version) return std::nullopt;
  auto crd = find_crd_object(store_, r);
  if (!crd) return std::nullopt;
  const Value& root = crd->root();
  if (json::get_string(root, "/spec/conversion/strategy").value_or("None") != "Webhook") return std::nullopt;
  std::string storage_version;
  if (const Value* vs = json::find(root, "/spec/versions"); vs != nullptr && vs->IsArray()) {
    for (const auto& v : vs->GetArray()) {
      if (json::get_bool(v, "/storage").value_or(false)) storage_version = json::string_at(v, "/name");
    }
  }
  if (storage_version.empty() || storage_version == r.version) return std::nullopt;
  auto storage = store_.find_resource(r.group, storage_version, r.resource);
  if (!storage) return std::nullopt;
  Conversion c;
  c.storage = std::move(*storage);
  c.kind = r.kind;
  if (const Value* cc = json::find(root, "/spec/conversion/webhook/clientConfig")) {
    c.client_config = Document::copy_of(*cc);
  }
  return c;
}

StoreResult<void> ConvertingStore::convert(const Conversion& c, std::vector<Document*> objects,
                                           const std::string& desired) {
  std::vector<Document*> to_convert;
  for (Document* d : objects) {
    if (d->root().IsObject() && json::string_at(d->root(), "/apiVersion") != desired) to_convert.push_back(d);
  }
  if (to_convert.empty()) return {};
  std::string source = json::string_at(to_convert.front()->root(), "/apiVersion");
  auto failed = [&](const std::string& why) {
    return errors::internal_error_occurred(
        fmt::format("conversion webhook for {} failed: {}", group_version_kind_text(source, c.kind), why));
  };
  std::string uid = uuids_.next();
  Document review = Document::object();
  auto& a = review.alloc();
  review.root().AddMember("kind", "ConversionReview", a);
  review.root().AddMember("apiVersion", "apiextensions.k8s.io/v1", a);
  Value request(rapidjson::kObjectType);
  request.AddMember("uid", json::str(uid, a), a);
  request.AddMember("desiredAPIVersion", json::str(desired, a), a);
  Value objs(rapidjson::kArrayType);
  for (Document* d : to_convert) objs.PushBack(json::clone(d->root(), a), a);
  request.AddMember("objects", objs, a);
  review.root().AddMember("request", request, a);

  if (!c.client_config.root().IsObject()) return fail(failed("the CRD has no conversion.webhook.clientConfig"));
  auto ep = caller_.endpoint(c.client_config.root(), kConversionTimeout);
  if (!ep) return fail(failed(ep.error().message));
  auto res = caller_.post(*ep, review.dump(), kConversionTimeout);
  if (!res) return fail(failed(res.error().message));
  const Value& resp = res->root();
  if (json::string_at(resp, "/response/uid") != uid) {
    return fail(
        failed(fmt::format("expected response.uid=\"{}\", got \"{}\"", uid, json::string_at(resp, "/response/uid"))));
  }
  if (auto st = json::string_at(resp, "/response/result/status"); st != "Success") {
    auto msg = json::string_at(resp, "/response/result/message");
    return fail(failed(!msg.empty() ? msg : fmt::format("response.result.status was '{}', not 'Success'", st)));
  }
  const Value* converted = json::find(resp, "/response/convertedObjects");
  size_t got = converted != nullptr && converted->IsArray() ? converted->Size() : 0;
  if (got != to_convert.size()) {
    return fail(errors::internal_error_occurred(fmt::format("conversion webhook for {} returned {} objects, expected {}",
                                                            group_version_kind_text(source, c.kind), got,
                                                            to_convert.size())));
  }
  for (size_t i = 0; i < to_convert.size(); ++i) {
    const Value& out = (*converted)[static_cast<rapidjson::SizeType>(i)];
    if (json::string_at(out, "/apiVersion") != desired) {
      return fail(failed(fmt::format("invalid converted object at index {}: invalid apiVersion \"{}\", expected \"{}\"",
                                     i, json::string_at(out, "/apiVersion"), desired)));
    }
    Document next = Document::copy_of(out);
    // Only labels and annotations may change; everything else of metadata stays as stored.
    Value meta = json::clone(to_convert[i]->root()["metadata"], next.alloc());
    for (const char* k : {"labels", "annotations"}) {
      if (meta.HasMember(k)) meta.RemoveMember(k);
      if (const Value* v = json::find(out, std::string("/metadata/") + k)) {
        meta.AddMember(Value(k, next.alloc()), json::clone(*v, next.alloc()), next.alloc());
      }
    }
    set_member(next, "metadata", std::move(meta));
    *to_convert[i] = std::move(next);
  }
  return {};
}

StoreResult<void> ConvertingStore::convert_one(const Conversion& c, Document& d, const std::string& desired) {
  return convert(c, {&d}, desired);
}

StoreResult<void> ConvertingStore::convert_list_text(const Conversion& c, std::string& text,
                                                     const std::string& desired) {
  auto doc = Document::parse(text);
  if (!doc) return fail(errors::internal(doc.error().message));
  Value* items = json::find(doc->root(), "/items");
  if (items != nullptr && items->IsArray()) {
    std::vector<Document> objs;
    for (auto& it : items->GetArray()) objs.push_back(Document::copy_of(it));
    std::vector<Document*> ptrs;
    for (auto& o : objs) ptrs.push_back(&o);
    if (auto s = convert(c, ptrs, desired); !s) return s;
    Value out(rapidjson::kArrayType);
    for (auto& o : objs) out.PushBack(json::clone(o.root(), doc->alloc()), doc->alloc());
    *items = std::move(out);
  }
  set_member(*doc, "apiVersion", json::str(desired, doc->alloc()));
  text = doc->dump();
  return {};
}

StoreResult<Document> ConvertingStore::get(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                           std::string_view sub) {
  auto c = sub == "scale" ? std::nullopt : conversion_for(r);
  if (!c) return store_.get(r, ns, name, sub);
  auto obj = store_.get(c->storage, ns, name, sub);
  if (!obj) return obj;
  if (auto s = convert_one(*c, *obj, r.api_version()); !s) return fail(std::move(s).error());
  return obj;
}

StoreResult<std::string> ConvertingStore::list(const ResourceInfo& r, std::string_view ns, const ListRequest& req) {
  auto c = conversion_for(r);
  if (!c) return store_.list(r, ns, req);
  auto text = store_.list(c->storage, ns, req);
  if (!text) return text;
  if (auto s = convert_list_text(*c, *text, r.api_version()); !s) return fail(std::move(s).error());
  return text;
}

template <class Write>
StoreResult<Document> ConvertingStore::write_at_version(const ResourceInfo& r, std::string_view sub, Document obj,
                                                        Write&& write) {
  auto c = sub == "scale" ? std::nullopt : conversion_for(r);
  if (!c) return write(r, std::move(obj));
  if (obj.root().IsObject()) {
    set_member(obj, "apiVersion", json::str(r.api_version(), obj.alloc()));
    set_member(obj, "kind", json::str(r.kind, obj.alloc()));
    if (auto s = convert_one(*c, obj, c->storage.api_version()); !s) return fail(std::move(s).error());
  }
  auto out = write(c->storage, std::move(obj));
  if (!out) return out;
  if (auto s = convert_one(*c, *out, r.api_version()); !s) return fail(std::move(s).error());
  return out;
}

StoreResult<Document> ConvertingStore::create(const ResourceInfo& r, std::string_view ns, Document obj, bool dry_run,
                                              std::string_view field_manager) {
  return write_at_version(r, "", std::move(obj), [&](const ResourceInfo& at, Document o) {
    return store_.create(at, ns, std::move(o), dry_run, field_manager);
  });
}

StoreResult<Document> ConvertingStore::update(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                              Document obj, std::string_view sub, bool dry_run,
                                              std::string_view field_manager) {
  return write_at_version(r, sub, std::move(obj), [&](const ResourceInfo& at, Document o) {
    return store_.update(at, ns, name, std::move(o), sub, dry_run, field_manager);
  });
}

StoreResult<Document> ConvertingStore::patch(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                             PatchKind kind, std::string_view body, std::string_view sub,
                                             std::string_view field_manager, bool dry_run, bool force) {
  auto c = sub == "scale" ? std::nullopt : conversion_for(r);
  if (!c) return store_.patch(r, ns, name, kind, body, sub, field_manager, dry_run, force);
  // The patch applies to the object at the requested version: read, convert, patch here, then
  // write back with the resourceVersion read (retrying when someone wrote in between).
  auto decoded = decode_patch(kind, body, true);
  if (!decoded) return fail(std::move(decoded).error());
  const Document patch = std::move(*decoded);
  for (int attempt = 0;; ++attempt) {
    auto current = get(r, ns, name, sub);
    if (!current) {
      if (current.error().code == 404 && kind == PatchKind::Apply && sub.empty()) {
        Document obj = patch;
        (void)json::set_string(obj, "/metadata/name", name);
        return create(r, ns, std::move(obj), dry_run, field_manager);
      }
      return current;
    }
    Document target = std::move(*current);
    if (auto st = apply_patch(r, name, kind, patch.root(), target, true); !st) return fail(std::move(st).error());
    if (json::string_at(target.root(), "/metadata/name") != name) {
      return fail(errors::name_mismatch(json::string_at(target.root(), "/metadata/name"), name));
    }
    // Through a conversion webhook an apply is recorded as an Update by its manager.
    auto out = update(r, ns, name, std::move(target), sub, dry_run, field_manager);
    if (!out && out.error().code == 409 && attempt < kPatchConflictRetries) continue;
    return out;
  }
}

StoreResult<Document> ConvertingStore::remove(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                              const DeleteRequest& req) {
  auto c = conversion_for(r);
  if (!c) return store_.remove(r, ns, name, req);
  auto out = store_.remove(c->storage, ns, name, req);
  if (!out) return out;
  if (auto s = convert_one(*c, *out, r.api_version()); !s) return fail(std::move(s).error());
  return out;
}

StoreResult<std::string> ConvertingStore::remove_collection(const ResourceInfo& r, std::string_view ns,
                                                            const ListRequest& selector, const DeleteRequest& req) {
  auto c = conversion_for(r);
  if (!c) return store_.remove_collection(r, ns, selector, req);
  auto out = store_.remove_collection(c->storage, ns, selector, req);
  if (!out) return out;
  if (auto s = convert_list_text(*c, *out, r.api_version()); !s) return fail(std::move(s).error());
  return out;
}

StoreResult<std::unique_ptr<Watcher>> ConvertingStore::watch(const ResourceInfo& r, std::string_view ns,
                                                             const WatchRequest& req) {
  auto c = conversion_for(r);
  if (!c) return store_.watch(r, ns, req);
  auto inner = store_.watch(c->storage, ns, req);
  if (!inner) return inner;
  auto convert = [this, c = std::move(*c), desired = r.api_version()](std::vector<Document*> objs) {
    return this->convert(c, std::move(objs), desired);
  };
  return std::unique_ptr<Watcher>(std::make_unique<ConvertingWatcher>(std::move(convert), std::move(*inner)));
}

}  // namespace unitrain::localcluster

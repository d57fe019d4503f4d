#include "localcluster/managed_fields.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

namespace unitrain::localcluster {
namespace {

using json::Value;

// metadata fields the server sets or that identify the object: nobody owns them.
constexpr std::array<std::string_view, 9> kUnownedMeta = {
    "name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
    "deletionGracePeriodSeconds", "managedFields"};

const Value* mf_member(const Value& v, std::string_view name) {
  if (!v.IsObject()) return nullptr;
  auto it = v.FindMember(Value(rapidjson::StringRef(name.data(), name.size())));
  return it == v.MemberEnd() ? nullptr : &it->value;
}

enum class ListKind { Atomic, Map, Set };

struct ListRule {
  ListKind kind = ListKind::Atomic;
  std::vector<std::string> keys;
};

// The pointer pattern of a list (indices as "*"), as kubernetes_merge_key takes it.
ListRule list_rule(const FieldsContext& ctx, const std::string& pattern, const Value* schema) {
  ListRule r;
  if (ctx.custom_resource) {
    if (schema == nullptr) return r;
    const Value* type = mf_member(*schema, "x-kubernetes-list-type");
    std::string t = (type != nullptr && type->IsString()) ? type->GetString() : "";
    if (t == "set") r.kind = ListKind::Set;
    if (t == "map") {
      const Value* keys = mf_member(*schema, "x-kubernetes-list-map-keys");
      if (keys != nullptr && keys->IsArray()) {
        for (const Value& k : keys->GetArray()) {
          if (k.IsString()) r.keys.emplace_back(k.GetString());
        }
      }
      if (!r.keys.empty()) r.kind = ListKind::Map;
    }
    return r;
  }
  if (pattern == "/metadata/finalizers") {
    r.kind = ListKind::Set;
    return r;
  }
  if (pattern == "/metadata/ownerReferences") {
    r.kind = ListKind::Map;
    r.keys = {"uid"};
    return r;
  }
  auto key = json::kubernetes_merge_key(pattern);
  if (!key) return r;
  if (key->empty()) {
    r.kind = ListKind::Set;
  } else {
    r.kind = ListKind::Map;
    r.keys = {*key};
  }
  return r;
}

const Value* sub_schema(const Value* schema, const char* which, std::string_view field = {}) {
  if (schema == nullptr) return nullptr;
  if (std::string_view(which) == "items") return mf_member(*schema, "items");
  if (const Value* props = mf_member(*schema, "properties")) {
    if (const Value* p = mf_member(*props, field)) return p;
  }
  const Value* additional = mf_member(*schema, "additionalProperties");
  return (additional != nullptr && additional->IsObject()) ? additional : nullptr;
}

// The k: element of a map-list item: its key fields as compact JSON, sorted by name.
std::optional<std::string> item_key(const Value& item, const std::vector<std::string>& keys) {
  if (!item.IsObject()) return std::nullopt;
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  json::Document d = json::Document::object();
  bool any = false;
  for (const std::string& k : sorted) {
    const Value* v = mf_member(item, k);
    if (v == nullptr) continue;
    any = true;
    d.root().AddMember(json::str(k, d.alloc()), Value(*v, d.alloc()), d.alloc());
  }
  if (!any) return std::nullopt;
  return "k:" + d.dump();
}

struct Collector {
  const FieldsContext& ctx;
  std::vector<FieldPath> out;

  void walk(const Value& v, const Value* schema, FieldPath& path, std::string& pattern) {
    if (v.IsObject() && v.MemberCount() > 0) {
      for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
        std::string name(it->name.GetString(), it->name.GetStringLength());
        path.push_back("f:" + name);
        size_t saved = pattern.size();
        pattern += "/" + name;
        walk(it->value, sub_schema(schema, "properties", name), path, pattern);
        pattern.resize(saved);
        path.pop_back();
      }
      return;
    }
    if (v.IsArray() && !v.Empty()) {
      ListRule rule = list_rule(ctx, pattern, schema);
      if (rule.kind != ListKind::Atomic) {
        const Value* items = sub_schema(schema, "items");
        size_t saved = pattern.size();
        pattern += "/*";
        bool keyed_all = true;
        std::vector<std::string> elems;
        for (const Value& item : v.GetArray()) {
          std::optional<std::string> e;
          if (rule.kind == ListKind::Map) {
            e = item_key(item, rule.keys);
          } else {
            e = "v:" + json::dump(item);
          }
          if (!e) keyed_all = false;
          elems.push_back(e.value_or(""));
        }
        if (keyed_all) {
          for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
            path.push_back(elems[i]);
            if (rule.kind == ListKind::Map) {  // the item itself ("."), then its fields
              path.push_back(".");
              out.push_back(path);
              path.pop_back();
              walk_item_fields(v[i], items, path, pattern);
            } else {
              out.push_back(path);
            }
            path.pop_back();
          }
          pattern.resize(saved);
          return;
        }
        pattern.resize(saved);
      }
    }
    out.push_back(path);
  }

  void walk_item_fields(const Value& item, const Value* schema, FieldPath& path, std::string& pattern) {
    if (!item.IsObject()) return;
    for (auto it = item.MemberBegin(); it != item.MemberEnd(); ++it) {
      std::string name(it->name.GetString(), it->name.GetStringLength());
      path.push_back("f:" + name);
      size_t saved = pattern.size();
      pattern += "/" + name;
      walk(it->value, sub_schema(schema, "properties", name), path, pattern);
      pattern.resize(saved);
      path.pop_back();
    }
  }
};

json::Document entry(const FieldManagerRequest& req, const char* operation, const std::vector<FieldPath>& paths) {
  json::Document e = json::Document::object();
  auto& a = e.alloc();
  e.root().AddMember("manager", json::str(req.manager, a), a);
  e.root().AddMember("operation", Value(operation, a), a);
  e.root().AddMember("apiVersion", json::str(req.api_version, a), a);
  e.root().AddMember("time", json::str(req.time, a), a);
  e.root().AddMember("fieldsType", "FieldsV1", a);
  e.root().AddMember("fieldsV1", to_fields_v1(paths, a), a);
  if (!req.subresource.empty()) e.root().AddMember("subresource", json::str(req.subresource, a), a);
  return e;
}

struct Entry {
  json::Document doc;  // the managedFields entry as stored
  std::vector<FieldPath> fields;
  std::string manager, operation, subresource;
};

std::vector<Entry> entries_of(const Value& obj) {
  std::vector<Entry> out;
  const Value* mf = json::find(obj, "/metadata/managedFields");
  if (mf == nullptr || !mf->IsArray()) return out;
  for (const Value& e : mf->GetArray()) {
    if (!e.IsObject()) continue;
    Entry x;
    x.doc = json::Document::copy_of(e);
    x.manager = json::string_at(e, "/manager");
    x.operation = json::string_at(e, "/operation");
    x.subresource = json::string_at(e, "/subresource");
    if (const Value* f = mf_member(e, "fieldsV1")) x.fields = from_fields_v1(*f);
    out.push_back(std::move(x));
  }
  return out;
}

bool same_owner(const Entry& e, const FieldManagerRequest& req, std::string_view operation) {
  return e.manager == req.manager && e.operation == operation && e.subresource == req.subresource;
}

void erase_paths(std::vector<FieldPath>& fields, const std::set<FieldPath>& gone) {
  fields.erase(std::remove_if(fields.begin(), fields.end(), [&](const FieldPath& p) { return gone.count(p) > 0; }),
               fields.end());
}

// Writes `entries` (dropping those that own nothing) as next's managedFields.
void store_entries(json::Document& next, std::vector<Entry>& entries) {
  auto& a = next.alloc();
  Value list(rapidjson::kArrayType);
  for (Entry& e : entries) {
    if (e.fields.empty()) continue;
    Value v(e.doc.root(), a);
    auto f = v.FindMember("fieldsV1");
    if (f != v.MemberEnd()) {
      f->value = to_fields_v1(e.fields, a);
    } else {
      v.AddMember("fieldsV1", to_fields_v1(e.fields, a), a);
    }
    list.PushBack(v, a);
  }
  Value* meta = json::find(next.root(), "/metadata");
  if (meta == nullptr || !meta->IsObject()) return;
  meta->RemoveMember("managedFields");
  if (!list.Empty()) meta->AddMember("managedFields", list, a);
}

// Removes the value at `p` from `obj` (a field, or a keyed or set list item).
void remove_at(Value& obj, FieldPath p) {
  if (!p.empty() && p.back() == ".") p.pop_back();
  if (p.empty()) return;
  std::string last = p.back();
  p.pop_back();
  Value* parent = const_cast<Value*>(value_at(obj, p));  // value_at only reads; obj is ours to edit
  if (parent == nullptr) return;
  if (last.rfind("f:", 0) == 0) {
    if (parent->IsObject()) parent->RemoveMember(Value(rapidjson::StringRef(last.data() + 2, last.size() - 2)));
    return;
  }
  const Value* target = value_at(*parent, FieldPath{last});
  if (!parent->IsArray() || target == nullptr) return;
  for (auto it = parent->Begin(); it != parent->End(); ++it) {
    if (&*it == target) {
      parent->Erase(it);
      return;
    }
  }
}

std::string manager_text(const Entry& e) {
  std::string s = "\"" + e.manager + "\"";
  if (!e.subresource.empty()) s += " with subresource \"" + e.subresource + "\"";
  if (e.operation == "Update") {
    s += " using " + json::string_at(e.doc.root(), "/apiVersion");
    std::string t = json::string_at(e.doc.root(), "/time");
    if (!t.empty()) s += " at " + t;
  }
  return s;
}

}  // namespace

std::vector<FieldPath> leaf_fields(const Value& obj, const FieldsContext& ctx, std::string_view subresource) {
  Collector c{ctx, {}};
  if (!obj.IsObject()) return {};
  for (auto it = obj.MemberBegin(); it != obj.MemberEnd(); ++it) {
    std::string name(it->name.GetString(), it->name.GetStringLength());
    if (name == "apiVersion" || name == "kind") continue;
    if ((name == "status") != (subresource == "status")) continue;
    FieldPath path = {"f:" + name};
    std::string pattern = "/" + name;
    if (name == "metadata") {
      if (!it->value.IsObject()) continue;
      for (auto m = it->value.MemberBegin(); m != it->value.MemberEnd(); ++m) {
        std::string key(m->name.GetString(), m->name.GetStringLength());
        if (std::find(kUnownedMeta.begin(), kUnownedMeta.end(), key) != kUnownedMeta.end()) continue;
        path.push_back("f:" + key);
        std::string mp = pattern + "/" + key;
        c.walk(m->value, nullptr, path, mp);
        path.pop_back();
      }
      continue;
    }
    const Value* schema = ctx.schema != nullptr ? sub_schema(ctx.schema, "properties", name) : nullptr;
    c.walk(it->value, schema, path, pattern);
  }
  return c.out;
}

Value to_fields_v1(const std::vector<FieldPath>& paths, json::Allocator& a) {
  Value root(rapidjson::kObjectType);
  for (const FieldPath& p : paths) {
    Value* cur = &root;
    for (const std::string& e : p) {
      auto it = cur->FindMember(Value(rapidjson::StringRef(e.data(), e.size())));
      if (it == cur->MemberEnd()) {
        cur->AddMember(json::str(e, a), Value(rapidjson::kObjectType), a);
        it = cur->FindMember(Value(rapidjson::StringRef(e.data(), e.size())));
      }
      cur = &it->value;
    }
  }
  return root;
}

std::vector<FieldPath> from_fields_v1(const Value& fields) {
  std::vector<FieldPath> out;
  FieldPath path;
  auto walk = [&](auto& self, const Value& node) -> void {
    if (!node.IsObject()) return;
    if (node.MemberCount() == 0) {
      if (!path.empty()) out.push_back(path);
      return;
    }
    for (auto it = node.MemberBegin(); it != node.MemberEnd(); ++it) {
      path.emplace_back(it->name.GetString(), it->name.GetStringLength());
      self(self, it->value);
      path.pop_back();
    }
  };
  walk(walk, fields);
  return out;
}

std::string path_text(const FieldPath& p) {
  std::string s;
  for (const std::string& e : p) {
    if (e.rfind("f:", 0) == 0) {
      s += "." + e.substr(2);
    } else if (e.rfind("k:", 0) == 0) {
      auto keys = json::Document::parse(e.substr(2));
      s += "[";
      if (keys && keys->root().IsObject()) {
        bool first = true;
        for (auto it = keys->root().MemberBegin(); it != keys->root().MemberEnd(); ++it) {
          s += (first ? "" : ",") + std::string(it->name.GetString(), it->name.GetStringLength()) + "=" +
               json::dump(it->value);
          first = false;
        }
      }
      s += "]";
    } else if (e.rfind("v:", 0) == 0) {
      s += "[=" + e.substr(2) + "]";
    }
  }
  return s;
}

const Value* value_at(const Value& obj, const FieldPath& p) {
  const Value* cur = &obj;
  for (const std::string& e : p) {
    if (e == ".") continue;
    if (e.rfind("f:", 0) == 0) {
      cur = mf_member(*cur, std::string_view(e).substr(2));
    } else if (e.rfind("k:", 0) == 0 || e.rfind("v:", 0) == 0) {
      if (!cur->IsArray()) return nullptr;
      auto want = json::Document::parse(e.substr(2));
      if (!want) return nullptr;
      const Value* found = nullptr;
      for (const Value& item : cur->GetArray()) {
        if (e[0] == 'v') {
          if (json::equal(item, want->root())) found = &item;
        } else if (item.IsObject() && want->root().IsObject()) {
          bool match = true;
          for (auto k = want->root().MemberBegin(); k != want->root().MemberEnd(); ++k) {
            const Value* have = mf_member(item, json::view(k->name));
            match = match && have != nullptr && json::equal(*have, k->value);
          }
          if (match) found = &item;
        }
        if (found != nullptr) break;
      }
      cur = found;
    } else {
      return nullptr;
    }
    if (cur == nullptr) return nullptr;
  }
  return cur;
}

void record_update(const Value* old, json::Document& next, const FieldsContext& ctx, const FieldManagerRequest& req) {
  const Value* sent = json::find(next.root(), "/metadata/managedFields");
  const Value* before = old != nullptr ? json::find(*old, "/metadata/managedFields") : nullptr;
  if (sent != nullptr && !sent->IsNull() && (before == nullptr || !json::equal(*sent, *before))) {
    // The client replaced managedFields itself; an empty list clears them.
    Value* meta = json::find(next.root(), "/metadata");
    if (sent->IsArray() && sent->Empty() && meta != nullptr) meta->RemoveMember("managedFields");
    return;
  }
  std::vector<Entry> entries = old != nullptr ? entries_of(*old) : std::vector<Entry>{};
  std::vector<FieldPath> now = leaf_fields(next.root(), ctx, req.subresource);
  std::set<FieldPath> changed, removed;
  for (const FieldPath& p : now) {
    const Value* was = old != nullptr ? value_at(*old, p) : nullptr;
    const Value* is = value_at(next.root(), p);
    if (was == nullptr || is == nullptr || !json::equal(*was, *is)) changed.insert(p);
  }
  if (old != nullptr) {
    for (const FieldPath& p : leaf_fields(*old, ctx, req.subresource)) {
      if (value_at(next.root(), p) == nullptr) removed.insert(p);
    }
  }
  if (changed.empty() && removed.empty()) return;  // a no-op write records nothing
  bool found = false;
  for (Entry& e : entries) {
    if (same_owner(e, req, "Update")) {
      found = true;
      erase_paths(e.fields, removed);
      for (const FieldPath& p : changed) {
        if (std::find(e.fields.begin(), e.fields.end(), p) == e.fields.end()) e.fields.push_back(p);
      }
      json::Document fresh = entry(req, "Update", e.fields);
      e.doc = std::move(fresh);
    } else {
      erase_paths(e.fields, changed);
      erase_paths(e.fields, removed);
    }
  }
  if (!found && !changed.empty() && !req.manager.empty()) {
    std::vector<FieldPath> ordered;  // document order
    for (const FieldPath& p : now) {
      if (changed.count(p)) ordered.push_back(p);
    }
    entries.push_back({entry(req, "Update", ordered), ordered, req.manager, "Update", req.subresource});
  }
  store_entries(next, entries);
}

StoreResult<void> record_apply(const Value* live, const Value& config, json::Document& merged,
                               const FieldsContext& ctx, const FieldManagerRequest& req, bool force) {
  std::vector<Entry> entries = live != nullptr ? entries_of(*live) : std::vector<Entry>{};
  std::vector<FieldPath> applied = leaf_fields(config, ctx, req.subresource);
  std::set<FieldPath> applied_set(applied.begin(), applied.end());

  struct Conflict {
    size_t entry;
    FieldPath path;
  };
  std::vector<Conflict> conflicts;
  if (live != nullptr) {
    for (size_t i = 0; i < entries.size(); ++i) {
      if (same_owner(entries[i], req, "Apply")) continue;
      for (const FieldPath& p : entries[i].fields) {
        if (!applied_set.count(p)) continue;
        const Value* have = value_at(*live, p);
        const Value* want = value_at(config, p);
        if (have != nullptr && want != nullptr && json::equal(*have, *want)) continue;  // shared ownership
        conflicts.push_back({i, p});
      }
    }
  }
  if (!conflicts.empty() && !force) {
    std::string msg;
    if (conflicts.size() == 1) {
      msg = "Apply failed with 1 conflict: conflict with " + manager_text(entries[conflicts[0].entry]) + ": " +
            path_text(conflicts[0].path);
    } else {
      std::map<std::string, std::vector<std::string>> by_manager;
      for (const Conflict& c : conflicts) by_manager[manager_text(entries[c.entry])].push_back(path_text(c.path));
      msg = "Apply failed with " + std::to_string(conflicts.size()) + " conflicts: ";
      bool first = true;
      for (const auto& [manager, paths] : by_manager) {
        msg += (first ? "" : "\n") + std::string("conflicts with ") + manager + ":";
        for (const std::string& p : paths) msg += "\n- " + p;
        first = false;
      }
    }
    StatusError err = errors::status(409, "Conflict", msg);
    err.details = json::Document::object();
    auto& a = err.details.alloc();
    Value causes(rapidjson::kArrayType);
    for (const Conflict& c : conflicts) {
      Value cause(rapidjson::kObjectType);
      cause.AddMember("reason", "FieldManagerConflict", a);
      cause.AddMember("message", json::str("conflict with " + manager_text(entries[c.entry]), a), a);
      cause.AddMember("field", json::str(path_text(c.path), a), a);
      causes.PushBack(cause, a);
    }
    err.details.root().AddMember("causes", causes, a);
    return fail(std::move(err));
  }
  std::set<FieldPath> taken;
  for (const Conflict& c : conflicts) taken.insert(c.path);
  std::vector<FieldPath> previously;
  bool found = false;
  for (Entry& e : entries) {
    if (same_owner(e, req, "Apply")) {
      previously = e.fields;
      if (e.fields != applied) e.doc = entry(req, "Apply", applied);  // unchanged: keep its time
      e.fields = applied;
      found = true;
    } else {
      erase_paths(e.fields, taken);
    }
  }
  if (!found) entries.push_back({entry(req, "Apply", applied), applied, req.manager, "Apply", req.subresource});
  // Fields this manager applied before and no longer does, owned by nobody else, go away.
  for (const FieldPath& p : previously) {
    if (applied_set.count(p)) continue;
    bool owned = false;
    for (const Entry& e : entries) {
      owned = owned || std::find(e.fields.begin(), e.fields.end(), p) != e.fields.end();
    }
    if (!owned) remove_at(merged.root(), p);
  }
  store_entries(merged, entries);
  return {};
}

}  // namespace unitrain::localcluster

// Kubernetes strategic merge patch.
//
// Semantics follow k8s.io/apimachinery/pkg/util/strategicpatch as observed through the API server:
// maps merge recursively, a null deletes, lists with a merge key merge element-wise by that key
// (order: original elements in place, new ones appended, then $setElementOrder), lists without
// one are replaced, and primitive lists whose strategy is "merge" (metadata.finalizers) become a
// union. Two deliberate differences, both for nested maps: `$patch: delete` removes the key (the
// upstream code leaves an empty map behind), and `$retainKeys` never rejects a patch key that is
// missing from the list.
#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "core/json/strategic_merge.h"

namespace unitrain::json {

namespace {

constexpr std::string_view kPatch = "$patch";
constexpr std::string_view kRetainKeys = "$retainKeys";
constexpr std::string_view kDeleteFromPrimitiveList = "$deleteFromPrimitiveList/";
constexpr std::string_view kSetElementOrder = "$setElementOrder/";

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

Value::MemberIterator find_member(Value& obj, std::string_view key) {
  return obj.FindMember(Value(rapidjson::StringRef(key.data(), key.size())));
}
Value::ConstMemberIterator find_member(const Value& obj, std::string_view key) {
  return obj.FindMember(Value(rapidjson::StringRef(key.data(), key.size())));
}

enum class Outcome { keep, remove };

class Merger {
 public:
  Merger(Allocator& alloc, const MergeKeyFunction& lookup) : alloc_(alloc), lookup_(lookup) {}

  // Merges `patch` (an object) into `original`. `path` is the JSON Pointer of `original` with
  // array indices written as "*".
  Result<Outcome> merge_map(Value& original, const Value& patch, const std::string& path) {
    if (!original.IsObject()) original.SetObject();
    auto directive = find_member(patch, kPatch);
    if (directive != patch.MemberEnd()) {
      const std::string_view d = directive->value.IsString() ? view(directive->value) : "";
      if (d == "delete") return Outcome::remove;
      if (d == "replace") {
        original.SetObject();
      } else if (d != "merge") {
        return fail(fmt::format("{}: invalid $patch directive {}", where(path), dump(directive->value)));
      }
    }

    auto retain = find_member(patch, kRetainKeys);
    if (retain != patch.MemberEnd()) {
      if (!retain->value.IsArray())
        return fail(fmt::format("{}: $retainKeys must be a list of strings", where(path)));
      for (auto it = original.MemberBegin(); it != original.MemberEnd();) {
        bool listed = false;
        for (const auto& k : retain->value.GetArray())
          if (k.IsString() && view(k) == view(it->name)) listed = true;
        it = listed ? it + 1 : original.EraseMember(it);
      }
    }

    // Deletions from primitive lists first: the upstream implementation iterates a Go map, so
    // their order relative to the list's own patch cannot matter.
    for (const auto& m : patch.GetObject()) {
      const std::string_view key = view(m.name);
      if (!starts_with(key, kDeleteFromPrimitiveList)) continue;
      const std::string_view field = key.substr(kDeleteFromPrimitiveList.size());
      if (!m.value.IsArray())
        return fail(fmt::format("{}: {} must be a list", where(path), key));
      auto target = find_member(original, field);
      if (target == original.MemberEnd() || !target->value.IsArray()) continue;
      Value& list = target->value;
      for (auto e = list.Begin(); e != list.End();) {
        bool drop = std::any_of(m.value.Begin(), m.value.End(), [&](const Value& d) { return equal(*e, d); });
        e = drop ? list.Erase(e) : e + 1;
      }
    }

    for (const auto& m : patch.GetObject()) {
      const std::string_view key = view(m.name);
      if (key == kPatch || key == kRetainKeys || starts_with(key, kDeleteFromPrimitiveList) ||
          starts_with(key, kSetElementOrder))
        continue;
      const std::string child_path = path + "/" + escape_pointer_token(key);
      auto it = find_member(original, key);
      if (m.value.IsNull()) {
        if (it != original.MemberEnd()) original.EraseMember(it);
        continue;
      }
      const Value* order = nullptr;
      auto order_it = find_member(patch, std::string(kSetElementOrder) + std::string(key));
      if (order_it != patch.MemberEnd()) order = &order_it->value;

      if (it == original.MemberEnd() || !same_kind(it->value, m.value)) {
        // A new or retyped value is merged into an empty one, so directives and nulls inside it
        // are resolved instead of being stored.
        Value fresh;
        if (m.value.IsObject()) fresh.SetObject();
        if (m.value.IsArray()) fresh.SetArray();
        auto r = merge_value(fresh, m.value, order, child_path);
        if (!r) return fail(r.error());
        if (it != original.MemberEnd()) {
          if (*r == Outcome::remove) original.EraseMember(it);
          else it->value = std::move(fresh);
        } else if (*r == Outcome::keep) {
          original.AddMember(str(key, alloc_), std::move(fresh), alloc_);
        }
        continue;
      }
      auto r = merge_value(it->value, m.value, order, child_path);
      if (!r) return fail(r.error());
      if (*r == Outcome::remove) original.EraseMember(it);
    }

    // A $setElementOrder without a patch for its list still reorders the live list.
    for (const auto& m : patch.GetObject()) {
      const std::string_view key = view(m.name);
      if (!starts_with(key, kSetElementOrder)) continue;
      const std::string_view field = key.substr(kSetElementOrder.size());
      if (patch.HasMember(Value(rapidjson::StringRef(field.data(), field.size())))) continue;
      auto target = find_member(original, field);
      if (target == original.MemberEnd() || !target->value.IsArray()) continue;
      const std::string list_path = path + "/" + escape_pointer_token(field);
      const auto list_key = key_for(list_path);
      auto r = reorder(target->value, m.value, snapshot_keys(target->value, list_key), list_key, list_path);
      if (!r) return fail(r.error());
    }
    return Outcome::keep;
  }

 private:
  static bool same_kind(const Value& a, const Value& b) {
    if (a.IsObject() || b.IsObject()) return a.IsObject() && b.IsObject();
    if (a.IsArray() || b.IsArray()) return a.IsArray() && b.IsArray();
    return true;
  }

  static std::string where(const std::string& path) { return path.empty() ? "/" : path; }

  std::optional<std::string> key_for(const std::string& list_path) const {
    return lookup_ ? lookup_(list_path) : std::nullopt;
  }

  Result<Outcome> merge_value(Value& original, const Value& patch, const Value* order, const std::string& path) {
    if (patch.IsObject()) return merge_map(original, patch, path);
    if (patch.IsArray()) {
      auto r = merge_list(original, patch, order, path);
      if (!r) return fail(r.error());
      return Outcome::keep;
    }
    original.CopyFrom(patch, alloc_);
    return Outcome::keep;
  }

  // Identity of a list element for matching and ordering: the merge key's value for lists of
  // maps, the element itself for primitive lists.
  static std::string identity(const Value& element, const std::optional<std::string>& key) {
    if (key && !key->empty() && element.IsObject()) {
      auto it = find_member(element, *key);
      return it == element.MemberEnd() ? std::string("\x01missing") : canonical(it->value);
    }
    return canonical(element);
  }

  static std::vector<std::string> snapshot_keys(const Value& list, const std::optional<std::string>& key) {
    std::vector<std::string> keys;
    for (const auto& e : list.GetArray()) keys.push_back(identity(e, key));
    return keys;
  }

  Status merge_list(Value& original, const Value& patch, const Value* order, const std::string& path) {
    const std::optional<std::string> key = key_for(path);
    if (!original.IsArray()) original.SetArray();
    const std::vector<std::string> server_order = snapshot_keys(original, key);

    if (!key) {
      original.CopyFrom(patch, alloc_);
    } else if (key->empty()) {
      // Primitive list with the merge strategy: a set union that keeps first occurrences.
      for (const auto& e : patch.GetArray()) {
        bool present = std::any_of(original.Begin(), original.End(), [&](const Value& o) { return equal(o, e); });
        if (!present) original.PushBack(Value(e, alloc_), alloc_);
      }
    } else {
      auto merged = merge_keyed_list(original, patch, *key, path);
      if (!merged) return merged;
    }
    if (order) {
      auto r = reorder(original, *order, server_order, key, path);
      if (!r) return r;
    }
    return {};
  }

  Status merge_keyed_list(Value& original, const Value& patch, const std::string& key, const std::string& path) {
    const bool all_maps = std::all_of(patch.Begin(), patch.End(), [](const Value& e) { return e.IsObject(); });
    if (!all_maps) {
      // Scalars where maps are expected: nothing to match by, so the patch replaces the list.
      original.CopyFrom(patch, alloc_);
      return {};
    }
    for (const auto& e : patch.GetArray()) {
      auto d = find_member(e, kPatch);
      if (d != e.MemberEnd() && d->value.IsString() && view(d->value) == "replace") {
        original.SetArray();
        break;
      }
    }
    const std::string element_path = path + "/*";
    for (rapidjson::SizeType i = 0; i < patch.Size(); ++i) {
      const Value& e = patch[i];
      auto d = find_member(e, kPatch);
      const std::string_view directive = d != e.MemberEnd() && d->value.IsString() ? view(d->value) : "";
      if (directive == "replace" || (directive == "merge" && e.MemberCount() == 1)) continue;
      if (d != e.MemberEnd() && directive != "delete" && directive != "merge")
        return fail(fmt::format("{}: element {}: invalid $patch directive {}", path, i, dump(d->value)));
      auto k = find_member(e, key);
      if (k == e.MemberEnd())
        return fail(fmt::format("{}: element {} has no merge key \"{}\"", path, i, key));
      auto match = std::find_if(original.Begin(), original.End(), [&](const Value& o) {
        if (!o.IsObject()) return false;
        auto ok = find_member(o, key);
        return ok != o.MemberEnd() && equal(ok->value, k->value);
      });
      if (directive == "delete") {
        while (match != original.End()) {
          original.Erase(match);
          match = std::find_if(original.Begin(), original.End(), [&](const Value& o) {
            if (!o.IsObject()) return false;
            auto ok = find_member(o, key);
            return ok != o.MemberEnd() && equal(ok->value, k->value);
          });
        }
        continue;
      }
      if (match != original.End()) {
        auto r = merge_map(*match, e, element_path);
        if (!r) return fail(r.error());
        if (*r == Outcome::remove) original.Erase(match);
      } else {
        Value fresh(rapidjson::kObjectType);
        auto r = merge_map(fresh, e, element_path);
        if (!r) return fail(r.error());
        if (*r == Outcome::keep) original.PushBack(std::move(fresh), alloc_);
      }
    }
    return {};
  }

  // $setElementOrder: elements named in `order` take that relative order; the others (only on
  // the server) keep theirs; the two sequences interleave by their positions in the live list,
  // and an element new to the server goes after server-only elements that compete with it.
  Status reorder(Value& list, const Value& order, const std::vector<std::string>& server_order,
                 const std::optional<std::string>& key, const std::string& path) {
    if (!order.IsArray()) return fail(fmt::format("{}: $setElementOrder must be a list", path));
    std::vector<std::string> wanted;
    for (const auto& o : order.GetArray()) wanted.push_back(identity(o, key));
    auto rank_in = [](const std::vector<std::string>& v, const std::string& id) -> std::ptrdiff_t {
      auto it = std::find(v.begin(), v.end(), id);
      return it == v.end() ? -1 : it - v.begin();
    };
    std::vector<Value> patched, server_only;
    std::vector<std::string> patched_ids, server_ids;
    for (auto& e : list.GetArray()) {
      std::string id = identity(e, key);
      if (rank_in(wanted, id) >= 0) {
        patched.emplace_back(std::move(e));
        patched_ids.push_back(std::move(id));
      } else {
        server_only.emplace_back(std::move(e));
        server_ids.push_back(std::move(id));
      }
    }
    std::vector<size_t> perm(patched.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = i;
    std::stable_sort(perm.begin(), perm.end(), [&](size_t a, size_t b) {
      return rank_in(wanted, patched_ids[a]) < rank_in(wanted, patched_ids[b]);
    });
    list.SetArray();
    size_t i = 0, j = 0;
    while (i < perm.size() || j < server_only.size()) {
      bool take_patched;
      if (i >= perm.size()) {
        take_patched = false;
      } else if (j >= server_only.size()) {
        take_patched = true;
      } else {
        auto pi = rank_in(server_order, patched_ids[perm[i]]);
        auto sj = rank_in(server_order, server_ids[j]);
        take_patched = pi >= 0 && sj >= 0 && pi < sj;
      }
      if (take_patched) list.PushBack(std::move(patched[perm[i++]]), alloc_);
      else list.PushBack(std::move(server_only[j++]), alloc_);
    }
    return {};
  }

  Allocator& alloc_;
  const MergeKeyFunction& lookup_;
};

}  // namespace

Status apply_strategic_merge_patch(Document& target, const Value& patch, MergeKeyLookup merge_key_for) {
  return apply_strategic_merge_patch(target, patch, merge_key_for ? MergeKeyFunction(merge_key_for) : MergeKeyFunction());
}

Status apply_strategic_merge_patch(Document& target, const Value& patch, const MergeKeyFunction& merge_key_for) {
  if (!patch.IsObject()) return fail("strategic merge patch: must be a JSON object");
  // Work on a copy so an invalid directive deep inside leaves `target` untouched.
  Document work = target;
  Merger merger(work.alloc(), merge_key_for);
  auto r = merger.merge_map(work.root(), patch, "");
  if (!r) return fail(r.error().prefix("strategic merge patch"));
  if (*r == Outcome::remove) work.root().SetObject();
  target = std::move(work);
  return {};
}

std::optional<std::string> kubernetes_merge_key(std::string_view list_path) {
  auto tokens = split_pointer(list_path);
  if (!tokens || tokens->empty()) return std::nullopt;
  const auto& t = *tokens;
  const size_t n = t.size();
  auto at = [&](size_t from_end) {
    return from_end < n ? std::string_view(t[n - 1 - from_end]) : std::string_view();
  };
  const std::string_view last = at(0);

  // Lists inside a container of any pod spec (pod, template, job template, Kubeflow replica).
  if (at(1) == "*" && (at(2) == "containers" || at(2) == "initContainers" || at(2) == "ephemeralContainers")) {
    if (last == "env") return "name";
    if (last == "ports") return "containerPort";
    if (last == "volumeMounts") return "mountPath";
    if (last == "volumeDevices") return "devicePath";
    return std::nullopt;
  }
  if (at(1) == "spec") {
    if (last == "containers" || last == "initContainers" || last == "ephemeralContainers") return "name";
    if (last == "volumes" || last == "imagePullSecrets" || last == "schedulingGates" ||
        last == "resourceClaims")
      return "name";
    if (last == "hostAliases") return "ip";
    if (last == "topologySpreadConstraints") return "topologyKey";
    // core/v1 Service ports; pod specs have no ports list of their own.
    if (last == "ports" && n == 2) return "port";
    return std::nullopt;
  }
  if (at(1) == "status") {
    if (last == "conditions" || last == "addresses") return "type";
    if (last == "podIPs" || last == "hostIPs") return "ip";
    return std::nullopt;
  }
  if (at(1) == "metadata" && n == 2) {
    if (last == "ownerReferences") return "uid";
    if (last == "finalizers") return "";
  }
  return std::nullopt;
}

}  // namespace unitrain::json

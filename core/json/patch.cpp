// RFC 7386 merge patch and RFC 6902 JSON patch.
#include <charconv>

#include <fmt/format.h>

#include "core/json/json.h"

namespace unitrain::json {

namespace {

// ---- RFC 7386 -------------------------------------------------------------------------------

void merge_into(Value& target, const Value& patch, Allocator& alloc) {
  if (!patch.IsObject()) {
    target.CopyFrom(patch, alloc);
    return;
  }
  if (!target.IsObject()) target.SetObject();
  for (const auto& m : patch.GetObject()) {
    auto it = target.FindMember(m.name);
    if (m.value.IsNull()) {
      // EraseMember keeps the order of the remaining members (RemoveMember would not).
      if (it != target.MemberEnd()) target.EraseMember(it);
    } else if (it != target.MemberEnd()) {
      merge_into(it->value, m.value, alloc);
    } else {
      Value fresh;
      merge_into(fresh, m.value, alloc);
      target.AddMember(Value(m.name, alloc), std::move(fresh), alloc);
    }
  }
}

void diff_objects(const Value& original, const Value& modified, Value& out, Allocator& alloc) {
  for (const auto& m : original.GetObject()) {
    if (!modified.HasMember(m.name)) out.AddMember(Value(m.name, alloc), Value(), alloc);
  }
  for (const auto& m : modified.GetObject()) {
    auto it = original.FindMember(m.name);
    if (it == original.MemberEnd()) {
      out.AddMember(Value(m.name, alloc), Value(m.value, alloc), alloc);
    } else if (it->value.IsObject() && m.value.IsObject()) {
      Value sub(rapidjson::kObjectType);
      diff_objects(it->value, m.value, sub, alloc);
      if (sub.MemberCount() > 0) out.AddMember(Value(m.name, alloc), std::move(sub), alloc);
    } else if (!equal(it->value, m.value)) {
      out.AddMember(Value(m.name, alloc), Value(m.value, alloc), alloc);
    }
  }
}

// ---- RFC 6902 -------------------------------------------------------------------------------

// RFC 6901 array index: digits only, no leading zeros.
std::optional<size_t> array_index(std::string_view token) {
  if (token.empty() || (token.size() > 1 && token[0] == '0')) return std::nullopt;
  size_t idx = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), idx);
  if (ec != std::errc() || p != token.data() + token.size()) return std::nullopt;
  return idx;
}

std::string_view parent_of(std::string_view pointer) { return pointer.substr(0, pointer.rfind('/')); }

Status add_at(Document& doc, std::string_view path, Value value) {
  auto tokens = split_pointer(path);
  if (!tokens) return fail("invalid JSON pointer (must start with '/')");
  if (tokens->empty()) {
    doc.root() = std::move(value);
    return {};
  }
  Value* parent = find(doc.root(), parent_of(path));
  if (!parent) return fail("path not found");
  const std::string& last = tokens->back();
  if (parent->IsObject()) {
    auto it = parent->FindMember(Value(rapidjson::StringRef(last.data(), last.size())));
    if (it != parent->MemberEnd()) {
      it->value = std::move(value);
    } else {
      parent->AddMember(str(last, doc.alloc()), std::move(value), doc.alloc());
    }
    return {};
  }
  if (parent->IsArray()) {
    if (last == "-") {
      parent->PushBack(std::move(value), doc.alloc());
      return {};
    }
    auto idx = array_index(last);
    if (!idx || *idx > parent->Size()) return fail(fmt::format("array index '{}' out of range", last));
    parent->PushBack(Value(), doc.alloc());
    for (size_t j = parent->Size() - 1; j > *idx; --j) (*parent)[j].Swap((*parent)[j - 1]);
    (*parent)[*idx] = std::move(value);
    return {};
  }
  return fail("parent is not an object or array");
}

Status remove_at(Document& doc, std::string_view path) {
  auto tokens = split_pointer(path);
  if (!tokens) return fail("invalid JSON pointer (must start with '/')");
  if (tokens->empty()) return fail("cannot remove the whole document");
  Value* parent = find(doc.root(), parent_of(path));
  if (!parent) return fail("path not found");
  const std::string& last = tokens->back();
  if (parent->IsObject()) {
    auto it = parent->FindMember(Value(rapidjson::StringRef(last.data(), last.size())));
    if (it == parent->MemberEnd()) return fail("path not found");
    parent->EraseMember(it);
    return {};
  }
  if (parent->IsArray()) {
    auto idx = array_index(last);
    if (!idx || *idx >= parent->Size()) return fail("path not found");
    parent->Erase(parent->Begin() + static_cast<std::ptrdiff_t>(*idx));
    return {};
  }
  return fail("path not found");
}

std::string shorten(std::string s) {
  constexpr size_t kMax = 80;
  if (s.size() > kMax) {
    s.resize(kMax);
    s += "...";
  }
  return s;
}

Status apply_operation(Document& doc, const Value& op) {
  for (const char* name : {"op", "path", "from", "value"}) {
    int count = 0;
    for (const auto& m : op.GetObject())
      if (view(m.name) == name) ++count;
    if (count > 1) return fail(fmt::format("member \"{}\" appears more than once", name));
  }
  const std::string_view kind = view(op["op"]);
  const std::string_view path = view(op["path"]);
  auto value = [&]() -> Result<const Value*> {
    auto it = op.FindMember("value");
    if (it == op.MemberEnd()) return fail("missing \"value\"");
    return &it->value;
  };
  auto from = [&]() -> Result<std::string_view> {
    auto it = op.FindMember("from");
    if (it == op.MemberEnd() || !it->value.IsString()) return fail("missing or non-string \"from\"");
    return view(it->value);
  };

  if (kind == "add") {
    auto v = value();
    if (!v) return fail(v.error());
    return add_at(doc, path, Value(**v, doc.alloc()));
  }
  if (kind == "remove") return remove_at(doc, path);
  if (kind == "replace") {
    auto v = value();
    if (!v) return fail(v.error());
    Value* target = find(doc.root(), path);
    if (!target) return fail("path not found");
    target->CopyFrom(**v, doc.alloc());
    return {};
  }
  if (kind == "test") {
    auto v = value();
    if (!v) return fail(v.error());
    const Value* target = find(doc.root(), path);
    if (!target) return fail("path not found");
    if (!equal(*target, **v))
      return fail(fmt::format("test failed: value is {}, expected {}", shorten(dump(*target)),
                              shorten(dump(**v))));
    return {};
  }
  if (kind == "move" || kind == "copy") {
    auto src_path = from();
    if (!src_path) return fail(src_path.error());
    const Value* src = find(doc.root(), *src_path);
    if (!src) return fail(fmt::format("from '{}': path not found", *src_path));
    if (kind == "move") {
      if (*src_path == path) return {};
      if (path.size() > src_path->size() && path.substr(0, src_path->size()) == *src_path &&
          path[src_path->size()] == '/')
        return fail(fmt::format("cannot move '{}' into one of its own children", *src_path));
    }
    Value moved(*src, doc.alloc());
    if (kind == "move") {
      auto removed = remove_at(doc, *src_path);
      if (!removed) return fail(removed.error().prefix(fmt::format("from '{}'", *src_path)));
    }
    return add_at(doc, path, std::move(moved));
  }
  return fail(fmt::format("unknown op \"{}\"", kind));
}

}  // namespace

void apply_merge_patch(Document& target, const Value& patch) {
  merge_into(target.root(), patch, target.alloc());
}

Document create_merge_patch(const Value& original, const Value& modified) {
  if (!original.IsObject() || !modified.IsObject()) return Document::copy_of(modified);
  Document out = Document::object();
  diff_objects(original, modified, out.root(), out.alloc());
  return out;
}

Status apply_json_patch(Document& target, const Value& operations) {
  if (!operations.IsArray()) return fail("JSON patch: must be an array of operations");
  // Work on a copy so a failing operation leaves `target` exactly as it was.
  Document work = target;
  for (rapidjson::SizeType i = 0; i < operations.Size(); ++i) {
    const Value& op = operations[i];
    if (!op.IsObject()) return fail(fmt::format("operation {}: must be an object", i));
    auto kind = op.FindMember("op");
    auto path = op.FindMember("path");
    if (kind == op.MemberEnd() || !kind->value.IsString())
      return fail(fmt::format("operation {}: missing or non-string \"op\"", i));
    if (path == op.MemberEnd() || !path->value.IsString())
      return fail(fmt::format("operation {} ({}): missing or non-string \"path\"", i, view(kind->value)));
    auto applied = apply_operation(work, op);
    if (!applied) {
      return fail(fmt::format("operation {} ({} {}): {}", i, view(kind->value), view(path->value),
                              applied.error().message));
    }
  }
  target = std::move(work);
  return {};
}

}  // namespace unitrain::json

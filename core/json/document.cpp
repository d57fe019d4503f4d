#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "core/json/json.h"

namespace unitrain::json {

Document::Document() : doc_(std::make_unique<rapidjson::Document>()) {}

Document Document::object() {
  Document d;
  d.doc_->SetObject();
  return d;
}

Document Document::array() {
  Document d;
  d.doc_->SetArray();
  return d;
}

Result<Document> Document::parse(std::string_view text) {
  Document d;
  // kParseStopWhenDoneFlag is not set: trailing garbage after the value is an error.
  d.doc_->Parse<rapidjson::kParseFullPrecisionFlag>(text.data(), text.size());
  if (d.doc_->HasParseError()) {
    return fail(fmt::format("invalid JSON at offset {}: {}", d.doc_->GetErrorOffset(),
                            rapidjson::GetParseError_En(d.doc_->GetParseError())));
  }
  return d;
}

Document Document::copy_of(const Value& v) {
  Document d;
  d.doc_->CopyFrom(v, d.alloc());
  return d;
}

Document::Document(const Document& other) : Document() { doc_->CopyFrom(*other.doc_, alloc()); }

Document& Document::operator=(const Document& other) {
  if (this != &other) {
    auto fresh = std::make_unique<rapidjson::Document>();
    fresh->CopyFrom(*other.doc_, fresh->GetAllocator());
    doc_ = std::move(fresh);
  }
  return *this;
}

// A moved-from Document holds a fresh null document, so it stays usable.
Document::Document(Document&& other) noexcept : doc_(std::move(other.doc_)) {
  other.doc_ = std::make_unique<rapidjson::Document>();
}
Document& Document::operator=(Document&& other) noexcept {
  std::swap(doc_, other.doc_);
  return *this;
}
Document::~Document() = default;

std::string dump(const Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

std::string Document::dump() const { return json::dump(*doc_); }

std::string Document::pretty() const {
  rapidjson::StringBuffer buf;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
  w.SetIndent(' ', 2);
  doc_->Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

namespace {

bool numbers_equal(const Value& a, const Value& b) {
  if (a.IsInt64() && b.IsInt64()) return a.GetInt64() == b.GetInt64();
  if (a.IsUint64() && b.IsUint64()) return a.GetUint64() == b.GetUint64();
  return a.GetDouble() == b.GetDouble();
}

void write_canonical(const Value& v, rapidjson::Writer<rapidjson::StringBuffer>& w) {
  if (v.IsObject()) {
    std::vector<const Value::Member*> members;
    members.reserve(v.MemberCount());
    for (const auto& m : v.GetObject()) members.push_back(&m);
    std::sort(members.begin(), members.end(), [](const auto* x, const auto* y) {
      return std::string_view(x->name.GetString(), x->name.GetStringLength()) <
             std::string_view(y->name.GetString(), y->name.GetStringLength());
    });
    w.StartObject();
    for (const auto* m : members) {
      w.Key(m->name.GetString(), m->name.GetStringLength());
      write_canonical(m->value, w);
    }
    w.EndObject();
  } else if (v.IsArray()) {
    w.StartArray();
    for (const auto& e : v.GetArray()) write_canonical(e, w);
    w.EndArray();
  } else {
    v.Accept(w);
  }
}

}  // namespace

bool equal(const Value& a, const Value& b) {
  if (a.IsNumber() && b.IsNumber()) return numbers_equal(a, b);
  if (a.GetType() != b.GetType()) return false;
  switch (a.GetType()) {
    case rapidjson::kObjectType: {
      if (a.MemberCount() != b.MemberCount()) return false;
      for (const auto& m : a.GetObject()) {
        auto it = b.FindMember(m.name);
        if (it == b.MemberEnd() || !equal(m.value, it->value)) return false;
      }
      return true;
    }
    case rapidjson::kArrayType: {
      if (a.Size() != b.Size()) return false;
      for (rapidjson::SizeType i = 0; i < a.Size(); ++i)
        if (!equal(a[i], b[i])) return false;
      return true;
    }
    case rapidjson::kStringType:
      return std::string_view(a.GetString(), a.GetStringLength()) ==
             std::string_view(b.GetString(), b.GetStringLength());
    default:
      return a == b;  // null, true, false
  }
}

bool operator==(const Document& a, const Document& b) { return equal(a.root(), b.root()); }

std::string canonical(const Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  write_canonical(v, w);
  return {buf.GetString(), buf.GetSize()};
}

// ---- pointers ---------------------------------------------------------------------------------

std::string escape_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

namespace {

// Splits "/a/b~1c" into {"a", "b/c"}. The empty pointer "" names the root.
std::optional<std::vector<std::string>> split_pointer(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  if (pointer.front() != '/') return std::nullopt;
  size_t pos = 1;
  while (true) {
    size_t next = pointer.find('/', pos);
    std::string_view raw = pointer.substr(pos, next == std::string_view::npos ? next : next - pos);
    std::string token;
    token.reserve(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        token += raw[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        token += raw[i];
      }
    }
    tokens.push_back(std::move(token));
    if (next == std::string_view::npos) break;
    pos = next + 1;
  }
  return tokens;
}

std::optional<rapidjson::SizeType> parse_index(std::string_view token) {
  if (token.empty() || (token.size() > 1 && token[0] == '0')) return std::nullopt;
  rapidjson::SizeType idx = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), idx);
  if (ec != std::errc() || p != token.data() + token.size()) return std::nullopt;
  return idx;
}

Value* step(Value* cur, const std::string& token) {
  if (cur->IsObject()) {
    auto it = cur->FindMember(Value(rapidjson::StringRef(token.data(), token.size())));
    return it == cur->MemberEnd() ? nullptr : &it->value;
  }
  if (cur->IsArray()) {
    auto idx = parse_index(token);
    if (!idx || *idx >= cur->Size()) return nullptr;
    return &(*cur)[*idx];
  }
  return nullptr;
}

}  // namespace

Value* find(Value& root, std::string_view pointer) {
  auto tokens = split_pointer(pointer);
  if (!tokens) return nullptr;
  Value* cur = &root;
  for (const auto& t : *tokens) {
    cur = step(cur, t);
    if (!cur) return nullptr;
  }
  return cur;
}

const Value* find(const Value& root, std::string_view pointer) {
  return find(const_cast<Value&>(root), pointer);
}

std::optional<std::string_view> get_string(const Value& root, std::string_view pointer) {
  const Value* v = find(root, pointer);
  if (!v || !v->IsString()) return std::nullopt;
  return std::string_view(v->GetString(), v->GetStringLength());
}

std::optional<int64_t> get_int(const Value& root, std::string_view pointer) {
  const Value* v = find(root, pointer);
  if (!v || !v->IsInt64()) return std::nullopt;
  return v->GetInt64();
}

std::optional<double> get_number(const Value& root, std::string_view pointer) {
  const Value* v = find(root, pointer);
  if (!v || !v->IsNumber()) return std::nullopt;
  return v->GetDouble();
}

std::optional<bool> get_bool(const Value& root, std::string_view pointer) {
  const Value* v = find(root, pointer);
  if (!v || !v->IsBool()) return std::nullopt;
  return v->GetBool();
}

Status set(Document& doc, std::string_view pointer, Value value) {
  auto tokens = split_pointer(pointer);
  if (!tokens) return fail(fmt::format("invalid JSON pointer '{}': must start with '/'", pointer));
  if (tokens->empty()) {
    doc.root() = std::move(value);
    return {};
  }
  Value* cur = &doc.root();
  if (cur->IsNull()) cur->SetObject();
  std::string walked;
  for (size_t i = 0; i < tokens->size(); ++i) {
    const std::string& t = (*tokens)[i];
    const bool last = i + 1 == tokens->size();
    if (cur->IsObject()) {
      auto it = cur->FindMember(Value(rapidjson::StringRef(t.data(), t.size())));
      if (it == cur->MemberEnd()) {
        cur->AddMember(str(t, doc.alloc()), last ? Value() : Value(rapidjson::kObjectType), doc.alloc());
        it = cur->MemberEnd() - 1;
      }
      if (last) {
        it->value = std::move(value);
        return {};
      }
      cur = &it->value;
    } else if (cur->IsArray()) {
      auto idx = parse_index(t);
      if (!idx || *idx >= cur->Size())
        return fail(fmt::format("{}: array index '{}' out of range", walked.empty() ? "/" : walked, t));
      if (last) {
        (*cur)[*idx] = std::move(value);
        return {};
      }
      cur = &(*cur)[*idx];
    } else {
      return fail(fmt::format("{}: is not an object or array", walked.empty() ? "/" : walked));
    }
    if (cur->IsNull()) cur->SetObject();
    walked += '/';
    walked += escape_pointer_token(t);
  }
  return {};
}

Status set_string(Document& doc, std::string_view pointer, std::string_view s) {
  return set(doc, pointer, str(s, doc.alloc()));
}
Status set_int(Document& doc, std::string_view pointer, int64_t n) { return set(doc, pointer, Value(n)); }
Status set_bool(Document& doc, std::string_view pointer, bool b) { return set(doc, pointer, Value(b)); }

bool remove(Document& doc, std::string_view pointer) {
  auto slash = pointer.rfind('/');
  if (slash == std::string_view::npos) return false;
  Value* parent = find(doc.root(), pointer.substr(0, slash));
  if (!parent) return false;
  auto tokens = split_pointer(pointer.substr(slash));
  if (!tokens || tokens->size() != 1) return false;
  const std::string& t = tokens->front();
  if (parent->IsObject()) return parent->RemoveMember(Value(rapidjson::StringRef(t.data(), t.size())));
  if (parent->IsArray()) {
    auto idx = parse_index(t);
    if (!idx || *idx >= parent->Size()) return false;
    parent->Erase(parent->Begin() + *idx);
    return true;
  }
  return false;
}

}  // namespace unitrain::json

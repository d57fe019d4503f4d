// Owned JSON documents on RapidJSON.
//
// Kubernetes objects stay JSON in Unitrain: a controller reads the fields it decides on and writes
// back the document it got, so fields it does not know survive read-modify-write byte for byte.
// Member order is preserved on output (RapidJSON keeps insertion order).
//
// Paths are RFC 6901 JSON Pointers ("/metadata/labels/app", "/spec/containers/0/env").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "core/base/result.h"

namespace unitrain::json {

using Value = rapidjson::Value;
class FieldMask;  // field_mask.h

// Deepest nesting of arrays/objects accepted from JSON or YAML text. The helpers below recurse
// per level, so input is bounded here instead of trusting every caller's stack.
inline constexpr int kMaxDepth = 1000;
using Allocator = rapidjson::Document::AllocatorType;

class Document {
 public:
  // Null. A default-constructed or moved-from document holds no storage (it allocates nothing)
  // until something writes to it through root() or alloc().
  Document() noexcept = default;
  static Document object();
  static Document array();
  // Parses one JSON text. Errors name the byte offset and the reason:
  // "invalid JSON at offset 17: Missing a comma or '}' after an object member."
  // Nesting deeper than kMaxDepth is rejected ("nesting deeper than 1000 levels"), and so is an
  // object with a repeated member name ("invalid JSON: duplicate key \"a\" in /spec").
  static Result<Document> parse(std::string_view text);
  // Builds only what `mask` keeps of the text (field_mask.h), in one streaming pass: the rest is
  // read and checked like parse() does, never built. Same errors as parse().
  static Result<Document> parse(std::string_view text, const FieldMask& mask);
  // What `mask` keeps of `v`, as a new document.
  static Document project(const Value& v, const FieldMask& mask);
  // Deep copy of any value into a new document.
  static Document copy_of(const Value& v);

  Document(const Document& other);
  Document& operator=(const Document& other);
  Document(Document&&) noexcept;
  Document& operator=(Document&&) noexcept;
  ~Document();

  // The mutable accessors give a document without storage its own (the first write needs it).
  Value& root() { return storage().doc; }
  const Value& root() const { return storage_ ? static_cast<const Value&>(storage_->doc) : null_value(); }
  Allocator& alloc() { return storage().pool; }

  // Compact output in member order (what the API server gets).
  std::string dump() const;
  // Indented output for people (2 spaces).
  std::string pretty() const;

  friend bool operator==(const Document& a, const Document& b);

  // Heap bytes this document's pool holds (its chunks): what a cache pays per object.
  std::size_t allocated_bytes() const { return storage_ ? storage_->pool.Capacity() : 0; }

 private:
  // RapidJSON's own pool starts with a 64 KiB chunk; an informer caches tens of thousands of
  // documents of a few KiB each, so every document owns a pool sized to its content instead.
  // The pool's base allocator is a member too: left to itself the pool allocates one (a
  // stateless object) with its first chunk, an allocation for every document.
  struct Storage {
    explicit Storage(std::size_t chunk_bytes) : pool(chunk_bytes, &chunks), doc(&pool) {}
    rapidjson::CrtAllocator chunks;
    Allocator pool;
    rapidjson::Document doc;
  };
  explicit Document(std::size_t chunk_bytes);
  Storage& storage();
  static const Value& null_value();
  friend class CodedText;  // coded_text.h: reads the text it wrote without the duplicate-key walk
  // Null for a document that was never written to, or whose storage moved to another document:
  // its root is null_value(). A move leaves the source so, so a document changes hands (parse
  // result, watch event, shared cache entry) without allocating a new empty one each time.
  std::unique_ptr<Storage> storage_;
};

// Deep equality; object members compare regardless of order, numbers by value (1 == 1.0).
bool equal(const Value& a, const Value& b);
// Compact output of any value, in member order.
std::string dump(const Value& v);
// Compact output with object members sorted by key: a stable form for hashing and comparison.
std::string canonical(const Value& v);

// Deep copy of `v` using `alloc`.
inline Value clone(const Value& v, Allocator& alloc) { return Value(v, alloc); }
// A string value holding a copy of `s`. An empty view may carry a null pointer, which RapidJSON
// rejects (an assertion in debug builds), so it becomes "".
inline Value str(std::string_view s, Allocator& alloc) {
  return s.data() == nullptr ? Value("", 0, alloc) : Value(s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
}
// The text of a string value; `s` must be a string (IsString()).
inline std::string_view view(const Value& s) { return {s.GetString(), s.GetStringLength()}; }

// ---- JSON Pointer access --------------------------------------------------------------------
// Returns nullptr when any step is missing or of the wrong kind.
const Value* find(const Value& root, std::string_view pointer);
Value* find(Value& root, std::string_view pointer);

std::optional<std::string_view> get_string(const Value& root, std::string_view pointer);
std::optional<int64_t> get_int(const Value& root, std::string_view pointer);
std::optional<double> get_number(const Value& root, std::string_view pointer);
std::optional<bool> get_bool(const Value& root, std::string_view pointer);
// The string at `pointer`, or "" when it is missing or not a string (Kubernetes' zero value).
std::string string_at(const Value& root, std::string_view pointer);
// The string elements of the array at `pointer`, skipping others; empty when it is missing.
std::vector<std::string> strings_at(const Value& root, std::string_view pointer);

// Sets the value at `pointer`, creating intermediate objects. Fails (naming the step) when an
// intermediate exists and is not an object, or an array index is out of range.
Status set(Document& doc, std::string_view pointer, Value value);
Status set_string(Document& doc, std::string_view pointer, std::string_view s);
Status set_int(Document& doc, std::string_view pointer, int64_t n);
Status set_bool(Document& doc, std::string_view pointer, bool b);
// Removes the member or array element; false if it was not there.
bool remove(Document& doc, std::string_view pointer);

// The reference tokens of a JSON pointer, one at a time, decoded ("~1" -> "/", "~0" -> "~"; a
// '~' followed by anything else stays as it is). The accessors above walk every pointer they get,
// so this allocates nothing: a token without '~' is a view into the pointer, and one with an
// escape (label keys like "training.kubeflow.org~1replica-type") is decoded into the walker's own
// buffer, on the heap only past kInlineToken bytes.
class PointerTokens {
 public:
  explicit PointerTokens(std::string_view pointer)
      : rest_(pointer), valid_(pointer.empty() || pointer.front() == '/'), done_(pointer.empty() || !valid_) {}
  // A copy's tokens would point into the original's buffer.
  PointerTokens(const PointerTokens&) = delete;
  PointerTokens& operator=(const PointerTokens&) = delete;
  // False when the pointer is neither "" (the root) nor starts with '/'.
  bool valid() const { return valid_; }
  // The next token into `token` (valid until the following call), or false after the last.
  bool next(std::string_view& token);
  // True when the token last returned was the pointer's last one.
  bool at_end() const { return done_; }

 private:
  static constexpr size_t kInlineToken = 96;
  std::string_view rest_;  // from the '/' before the next token
  bool valid_;
  bool done_;
  char inline_[kInlineToken];
  std::string long_;
};

// Splits "/a/b~1c" into {"a", "b/c"}; "" (the root) gives no tokens; nullopt when the pointer
// does not start with '/'.
std::optional<std::vector<std::string>> split_pointer(std::string_view pointer);

// Escapes one key for use in a pointer ("~" -> "~0", "/" -> "~1").
std::string escape_pointer_token(std::string_view key);

// ---- Patches --------------------------------------------------------------------------------
// RFC 7386 JSON merge patch: applies `patch` to `target` in place.
void apply_merge_patch(Document& target, const Value& patch);
// RFC 7386: the merge patch that turns `original` into `modified`.
Document create_merge_patch(const Value& original, const Value& modified);
// RFC 6902 JSON patch (add, remove, replace, move, copy, test). Atomic: on error `target` is
// unchanged and the error names the operation index and path.
Status apply_json_patch(Document& target, const Value& operations);

// Strategic merge patch (Kubernetes): like merge patch, but lists whose path has a merge key are
// merged element-wise by that key, and the directives `$patch: replace|delete|merge`,
// `$retainKeys`, `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>` are honoured.
// `merge_key_for` receives the JSON Pointer of the list with array indices replaced by "*"
// (e.g. "/spec/containers/*/env") and returns its merge key, nullopt (plain replace), or "" for
// a primitive list whose strategy is merge (a set union, like metadata.finalizers). A null in the
// patch deletes; nested maps with `$patch: delete` are removed. Atomic like apply_json_patch.
// `merge_key_for` may be nullptr (no list has a merge key).
using MergeKeyLookup = std::optional<std::string> (*)(std::string_view list_path);
Status apply_strategic_merge_patch(Document& target, const Value& patch, MergeKeyLookup merge_key_for);
// The merge keys of the core/v1 and batch/v1 types Unitrain deals with (containers by name, env
// by name, ports by containerPort, volumes by name, volumeMounts by mountPath, conditions by
// type, ...), for any list path under a pod template too.
std::optional<std::string> kubernetes_merge_key(std::string_view list_path);

// ---- YAML -----------------------------------------------------------------------------------
// Multi-document YAML -> JSON documents, skipping empty documents. Scalars become strings,
// numbers, booleans or null by YAML 1.2 core-schema rules ("yes" stays a string; quoted scalars
// are always strings; 0x/0o integers; integers beyond 64 bits become doubles as in Kubernetes'
// decoder; .inf/.nan are errors since JSON cannot hold them). Anchors, aliases and "<<" merge
// keys are resolved; duplicate keys are errors. Errors name the line and column:
// "yaml: line 2, column 3: illegal map value".
Result<std::vector<Document>> parse_yaml(std::string_view text);
// JSON -> block-style YAML (for `-o yaml`-like output and tests). Strings are quoted whenever a
// YAML 1.2 or 1.1 reader could take them for something else, so parse_yaml(to_yaml(v)) == v.
std::string to_yaml(const Value& v);

}  // namespace unitrain::json

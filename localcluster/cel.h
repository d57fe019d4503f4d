// A Common Expression Language (CEL) interpreter for the `x-kubernetes-validations` rules of
// CRDs: the subset the Kubeflow, Kueue, JobSet and Kubeflow Trainer CRDs use. Literals (int,
// uint, double, string, bool, null, lists, maps), field selection and indexing, comparisons,
// arithmetic, `&&`/`||`/`!` (commutative over errors, as CEL defines them), `?:`, `in`, `has()`,
// the macros all/exists/exists_one/map/filter, size(), string functions (startsWith, endsWith,
// contains, matches, lowerAscii, upperAscii, trim, split, join, indexOf, replace, substring),
// list functions (sum, min, max, isSorted, indexOf), conversions int()/uint()/double()/string()
// /bool(), and optionals (`a.?b`, `a[?k]`, orValue, hasValue, value, optional.of/none).
//
// Values are schema-free: objects and maps are both CEL maps with string keys, and an absent
// field is a "no such key" error (has() tests presence), as in kube-apiserver's evaluation of
// unstructured objects. Parsing is separate from evaluation so a CRD's rules are parsed once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/base/result.h"
#include "core/json/json.h"

namespace unitrain::localcluster::cel {

struct Value;
using List = std::vector<Value>;
// Map entries in insertion order; keys are compared with CEL equality.
using MapEntries = std::vector<std::pair<Value, Value>>;

struct NullValue {
  friend bool operator==(NullValue, NullValue) { return true; }
};
struct ListValue {
  std::shared_ptr<const List> items;
};
struct MapValue {
  std::shared_ptr<const MapEntries> entries;
};
// optional(T): `value` is null for optional.none().
struct OptionalValue {
  std::shared_ptr<const Value> value;
};
// A runtime error travels as a value so `||`/`&&` can absorb it, as CEL specifies.
struct ErrorValue {
  std::string message;
};

struct Value {
  std::variant<NullValue, bool, int64_t, uint64_t, double, std::string, ListValue, MapValue, OptionalValue, ErrorValue> v;

  Value() = default;
  template <class T>
    requires(!std::is_same_v<std::decay_t<T>, Value> && std::is_constructible_v<decltype(v), T&&>)
  Value(T&& x) : v(std::forward<T>(x)) {}  // NOLINT: implicit like the variant it wraps
  Value(const char* s) : v(std::string(s)) {}  // NOLINT
  Value(int x) : v(int64_t{x}) {}               // NOLINT

  bool is_error() const { return std::holds_alternative<ErrorValue>(v); }
  const std::string& error() const { return std::get<ErrorValue>(v).message; }
  // CEL's type name: int, uint, double, string, bool, null_type, list, map, optional_type.
  std::string type_name() const;
  // A readable rendering (strings quoted), for messages and tests.
  std::string debug() const;
};

Value make_list(List items);
Value make_map(MapEntries entries);
Value make_error(std::string message);
// JSON → CEL: integers stay int, other numbers double, objects become maps.
Value from_json(const json::Value& v);
// Like from_json, but a `type: number` schema node makes whole numbers doubles, as the schema
// gives CEL its types.
Value from_json(const json::Value& v, const json::Value& schema);
// CEL equality (numbers compare across int, uint and double; lists and maps deeply).
bool equal(const Value& a, const Value& b);

// A parse failure, with the position (1-based line and column) in cel-go's wording:
// "ERROR: <input>:1:6: Syntax error: ..." plus the source line and a caret.
struct ParseError {
  int line = 1;
  int column = 1;
  std::string message;  // the text after "Syntax error: "
  std::string full;     // the whole multi-line report
};

struct Node;

// A parsed expression; cheap to copy (shares its tree).
class Program {
 public:
  static Result<Program, ParseError> parse(std::string_view source);
  // Evaluates with the given variables (e.g. self, oldSelf). Runtime errors are ErrorValues.
  Value evaluate(const std::map<std::string, Value, std::less<>>& variables) const;
  // True when the expression names `identifier` as a variable (e.g. oldSelf: a transition rule).
  bool references(std::string_view identifier) const;
  const std::string& source() const { return source_; }

 private:
  std::shared_ptr<const Node> root_;
  std::string source_;
};

}  // namespace unitrain::localcluster::cel

// YAML <-> JSON.
//
// Reading: yaml-cpp's parser emits events; we build JSON from them (anchors and aliases resolved)
// with YAML 1.2 core-schema rules for plain scalars. Decisions where YAML and JSON disagree:
//  - Integers beyond 64 bits become JSON doubles, as Kubernetes' YAML decoder (go-yaml) does.
//  - .inf and .nan are valid YAML floats but have no JSON form: an error naming the position.
//  - Duplicate mapping keys are an error (kubectl rejects them too); "<<" merge keys are honoured.
//  - A document that is empty or only `null` is skipped, as kubectl skips it.
//  - Nesting: yaml-cpp 0.7 itself stops at roughly 500 levels ("bad file"); we also stop at
//    kMaxDepth, reject recursive aliases (`&a [*a]`), and stop at kMaxValues for alias bombs.
// yaml-cpp reports errors by exception; this file is the boundary that turns them into values.
//
// Writing: block style; a string is written plain only when it re-reads as the same string
// (also under YAML 1.1 rules, so `yes`/`on` are quoted for older readers), else double-quoted.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <variant>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/parser.h>

#include "core/json/json.h"

namespace unitrain::json {

namespace {

// A bound on the values one YAML text may expand to: aliases make exponential growth easy.
constexpr size_t kMaxValues = 1'000'000;

struct PlainNull {};
struct PlainInf {};
using PlainScalar = std::variant<PlainNull, bool, int64_t, uint64_t, double, PlainInf, std::string_view>;

bool all_of_chars(std::string_view s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s)
    if (!pred(c)) return false;
  return true;
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_octal(char c) { return c >= '0' && c <= '7'; }

// [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
bool is_core_float(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && is_digit(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

// YAML 1.2 core schema resolution of a plain (unquoted, untagged) scalar.
PlainScalar resolve_plain(std::string_view s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return PlainNull{};
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    std::string_view digits = s.substr(2);
    const bool hex = s[1] == 'x';
    if (all_of_chars(digits, hex ? is_hex : is_octal)) {
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, hex ? 16 : 8);
      if (ec == std::errc() && p == digits.data() + digits.size()) {
        if (v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return static_cast<int64_t>(v);
        return v;
      }
      return std::strtod(std::string(s).c_str(), nullptr);  // hex beyond 64 bits: like go-yaml
    }
  }
  {
    std::string_view digits = s;
    const bool sign = s[0] == '-' || s[0] == '+';
    if (sign) digits = s.substr(1);
    if (all_of_chars(digits, is_digit)) {
      std::string_view body = s[0] == '+' ? s.substr(1) : s;
      int64_t i = 0;
      auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), i);
      if (ec == std::errc() && p == body.data() + body.size()) return i;
      uint64_t u = 0;
      auto [pu, ecu] = std::from_chars(body.data(), body.data() + body.size(), u);
      if (ecu == std::errc() && pu == body.data() + body.size()) return u;
      return std::strtod(std::string(s).c_str(), nullptr);
    }
  }
  if (is_core_float(s)) return std::strtod(std::string(s).c_str(), nullptr);
  std::string_view unsigned_part = (s[0] == '-' || s[0] == '+') ? s.substr(1) : s;
  if (unsigned_part == ".inf" || unsigned_part == ".Inf" || unsigned_part == ".INF") return PlainInf{};
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return PlainInf{};
  return s;
}

std::string position(const YAML::Mark& m) {
  if (m.is_null()) return "yaml";
  return fmt::format("yaml: line {}, column {}", m.line + 1, m.column + 1);
}

// Builds JSON documents straight from yaml-cpp's parse events. (YAML::LoadAll is not used: on
// input such as `{}, {}` it loops forever, returning the same empty document again and again.)
class Builder : public YAML::EventHandler {
 public:
  explicit Builder(std::vector<Document>& out) : out_(out) {}

  bool failed() const { return error_.has_value(); }
  const std::string& error() const { return *error_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (failed()) return;
    if (last_start_ && last_start_->pos == mark.pos && last_start_->line == mark.line &&
        last_start_->column == mark.column)
      return fail(mark, "unexpected content after the document");
    last_start_ = mark;
    doc_ = Document();
    anchors_.clear();
    stack_.clear();
    have_root_ = false;
  }

  void OnDocumentEnd() override {
    if (failed()) return;
    // Empty documents and documents that are only `null` are skipped.
    if (have_root_ && !doc_.root().IsNull()) out_.push_back(std::move(doc_));
  }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (failed()) return;
    complete(Value(), mark, anchor, std::string("null"), false);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (failed()) return;
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) return fail(mark, "alias refers to an unfinished anchor (recursive alias)");
    values_ += it->second.values;
    if (values_ > kMaxValues) return fail(mark, fmt::format("more than {} values (alias expansion?)", kMaxValues));
    Value copy(it->second.value, doc_.alloc());
    std::optional<std::string> key;
    if (copy.IsString()) key = std::string(copy.GetString(), copy.GetStringLength());
    else if (!copy.IsObject() && !copy.IsArray()) key = dump(copy);
    complete(std::move(copy), mark, 0, key, false);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& text) override {
    if (failed()) return;
    Value v;
    // "!" marks quoted and block scalars; "!!str" is explicit. Both stay strings.
    if (tag == "!" || tag == "tag:yaml.org,2002:str") {
      v = str(text, doc_.alloc());
    } else {
      PlainScalar p = resolve_plain(text);
      if (std::holds_alternative<PlainInf>(p)) return fail(mark, fmt::format("{} has no JSON representation", text));
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, bool>) v.SetBool(x);
            else if constexpr (std::is_same_v<T, int64_t>) v.SetInt64(x);
            else if constexpr (std::is_same_v<T, uint64_t>) v.SetUint64(x);
            else if constexpr (std::is_same_v<T, double>) v.SetDouble(x);
            else if constexpr (std::is_same_v<T, std::string_view>) v = str(x, doc_.alloc());
          },
          p);
      if (v.IsDouble() && !std::isfinite(v.GetDouble()))
        return fail(mark, fmt::format("{} is out of range for a JSON number", text));
    }
    complete(std::move(v), mark, anchor, text, text == "<<" && tag == "?");
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(Value(rapidjson::kArrayType), mark, anchor);
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(Value(rapidjson::kObjectType), mark, anchor);
  }
  void OnMapEnd() override {
    if (failed()) return;
    Frame& f = stack_.back();
    // Merge keys fill in only what the mapping does not set itself; earlier sources win.
    for (Value& source : f.merges) {
      std::vector<Value*> maps;
      if (source.IsObject()) maps.push_back(&source);
      if (source.IsArray())
        for (auto& e : source.GetArray()) maps.push_back(&e);
      if (maps.empty() && !source.IsArray()) return fail(f.mark, "<< must merge a mapping or a list of mappings");
      for (Value* m : maps) {
        if (!m->IsObject()) return fail(f.mark, "<< must merge a mapping or a list of mappings");
        for (auto& member : m->GetObject())
          if (!f.value.HasMember(member.name))
            f.value.AddMember(Value(member.name, doc_.alloc()), Value(member.value, doc_.alloc()), doc_.alloc());
      }
    }
    close();
  }

 private:
  struct Frame {
    Value value;
    YAML::Mark mark;
    YAML::anchor_t anchor = 0;
    std::optional<std::string> key;  // a mapping's pending key
    YAML::Mark key_mark;
    bool merge = false;              // the pending key is "<<"
    std::vector<Value> merges;
  };
  struct Anchored {
    Value value;
    size_t values = 0;
  };

  void fail(const YAML::Mark& mark, std::string message) {
    if (!error_) error_ = fmt::format("{}: {}", position(mark), message);
  }

  bool in_key_position() const {
    return !stack_.empty() && stack_.back().value.IsObject() && !stack_.back().key;
  }

  void open(Value container, const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (failed()) return;
    if (in_key_position()) return fail(mark, "mapping key must be a scalar");
    if (static_cast<int>(stack_.size()) >= kMaxDepth)
      return fail(mark, fmt::format("nesting deeper than {} levels", kMaxDepth));
    Frame f;
    f.value = std::move(container);
    f.mark = mark;
    f.anchor = anchor;
    stack_.push_back(std::move(f));
  }

  void close() {
    if (failed()) return;
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    complete(std::move(f.value), f.mark, f.anchor, std::nullopt, false);
  }

  static size_t count_values(const Value& v) {
    size_t n = 1;
    if (v.IsObject())
      for (const auto& m : v.GetObject()) n += count_values(m.value);
    if (v.IsArray())
      for (const auto& e : v.GetArray()) n += count_values(e);
    return n;
  }

  // A node is finished: remember it for aliases, then place it as a key, a value or the root.
  void complete(Value v, const YAML::Mark& mark, YAML::anchor_t anchor, const std::optional<std::string>& key_text,
                bool merge_key) {
    if (++values_ > kMaxValues) return fail(mark, fmt::format("more than {} values (alias expansion?)", kMaxValues));
    if (anchor != YAML::NullAnchor) anchors_[anchor] = Anchored{Value(v, doc_.alloc()), count_values(v)};
    if (stack_.empty()) {
      doc_.root() = std::move(v);
      have_root_ = true;
      return;
    }
    Frame& f = stack_.back();
    if (f.value.IsArray()) {
      f.value.PushBack(std::move(v), doc_.alloc());
      return;
    }
    if (!f.key) {
      if (!key_text) return fail(mark, "mapping key must be a scalar");
      f.key = *key_text;
      f.key_mark = mark;
      f.merge = merge_key;
      return;
    }
    if (f.merge) {
      f.merges.push_back(std::move(v));
    } else {
      if (f.value.HasMember(Value(rapidjson::StringRef(f.key->data(), f.key->size()))))
        return fail(f.key_mark, fmt::format("duplicate key \"{}\"", *f.key));
      f.value.AddMember(str(*f.key, doc_.alloc()), std::move(v), doc_.alloc());
    }
    f.key.reset();
    f.merge = false;
  }

  std::vector<Document>& out_;
  Document doc_;
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  std::optional<YAML::Mark> last_start_;
  std::optional<std::string> error_;
  size_t values_ = 0;
  bool have_root_ = false;
};

// ---- writing --------------------------------------------------------------------------------

bool yaml11_special(std::string_view s) {
  static constexpr std::string_view kWords[] = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
                                                "on", "On", "ON", "off", "Off", "OFF"};
  for (auto w : kWords)
    if (s == w) return true;
  return false;
}

bool plain_safe(std::string_view s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ') return false;
  if (!std::holds_alternative<std::string_view>(resolve_plain(s)) || yaml11_special(s)) return false;
  // A leading character that starts a YAML construct (indicators) forces quotes.
  const char first = s.front();
  const bool first_ok = (first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || is_digit(first) ||
                        first == '.' || first == '_' || first == '/' || first == '(';
  if (!first_ok) return false;
  // Sexagesimal-looking and other YAML 1.1 numbers ("1:20", "1_000") are quoted too.
  bool has_digit_only_shape = is_digit(first);
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '.' || c == '_' ||
                    c == '/' || c == '-' || c == '+' || c == '=' || c == '@' || c == '(' || c == ')' ||
                    c == ' ' || c == ':';
    if (!ok) return false;
    if (c == ':' && (i + 1 == s.size() || s[i + 1] == ' ')) return false;
    if (c == ':' || c == '_') {
      if (has_digit_only_shape) return false;
    }
    if (!(is_digit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) has_digit_only_shape = false;
  }
  return true;
}

void quoted(std::string_view s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
        else out += static_cast<char>(c);
    }
  }
  out += '"';
}

void string_scalar(std::string_view s, std::string& out) {
  if (plain_safe(s)) out += s;
  else quoted(s, out);
}

bool inline_value(const Value& v) {
  return !(v.IsObject() && v.MemberCount() > 0) && !(v.IsArray() && v.Size() > 0);
}

void scalar(const Value& v, std::string& out) {
  if (v.IsString()) string_scalar({v.GetString(), v.GetStringLength()}, out);
  else if (v.IsObject()) out += "{}";
  else if (v.IsArray()) out += "[]";
  else out += dump(v);  // null, true, false and numbers read back the same under the core schema
}

void sequence(const Value& v, int indent, bool prefixed, std::string& out);

void mapping(const Value& v, int indent, bool prefixed, std::string& out) {
  bool first = true;
  for (const auto& m : v.GetObject()) {
    if (!first || !prefixed) out.append(static_cast<size_t>(indent), ' ');
    first = false;
    string_scalar({m.name.GetString(), m.name.GetStringLength()}, out);
    out += ':';
    if (inline_value(m.value)) {
      out += ' ';
      scalar(m.value, out);
      out += '\n';
    } else if (m.value.IsObject()) {
      out += '\n';
      mapping(m.value, indent + 2, false, out);
    } else {
      out += '\n';
      sequence(m.value, indent + 2, false, out);
    }
  }
}

void sequence(const Value& v, int indent, bool prefixed, std::string& out) {
  bool first = true;
  for (const auto& e : v.GetArray()) {
    if (!first || !prefixed) out.append(static_cast<size_t>(indent), ' ');
    first = false;
    out += "- ";
    if (inline_value(e)) {
      scalar(e, out);
      out += '\n';
    } else if (e.IsObject()) {
      mapping(e, indent + 2, true, out);
    } else {
      sequence(e, indent + 2, true, out);
    }
  }
}

}  // namespace

Result<std::vector<Document>> parse_yaml(std::string_view text) {
  std::vector<Document> docs;
  Builder builder(docs);
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    while (!builder.failed() && parser.HandleNextDocument(builder)) {
    }
  } catch (const YAML::Exception& e) {
    return fail(fmt::format("{}: {}", position(e.mark), e.msg));
  } catch (const std::exception& e) {
    return fail(fmt::format("yaml: {}", e.what()));
  }
  if (builder.failed()) return fail(builder.error());
  return docs;
}

std::string to_yaml(const Value& v) {
  std::string out;
  if (inline_value(v)) {
    scalar(v, out);
    out += '\n';
  } else if (v.IsObject()) {
    mapping(v, 0, false, out);
  } else {
    sequence(v, 0, false, out);
  }
  return out;
}

}  // namespace unitrain::json

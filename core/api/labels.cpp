// Kept whole: label keys and values, label selectors (text and LabelSelector objects) and their
// validation use one tokenizer and one set of syntax rules.
#include "core/api/labels.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "core/api/field_errors.h"

namespace unitrain::api {
namespace {

// ---- name syntax ------------------------------------------------------------------------------

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool is_lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]
bool matches_qualified_name_part(std::string_view s) {
  if (s.empty() || !is_alnum(s.front()) || !is_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])?
bool matches_dns1123_label(std::string_view s) {
  if (s.empty() || !is_lower_alnum(s.front()) || !is_lower_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_lower_alnum(c) || c == '-'; });
}

// Upstream RegexError: examples each quoted and followed by ", ", joined with " or ".
std::string regex_error(std::string_view msg, std::string_view fmt_text, std::initializer_list<std::string_view> examples) {
  std::string out(msg);
  out += " (e.g. ";
  bool first = true;
  for (auto e : examples) {
    if (!first) out += " or ";
    first = false;
    out += "'";
    out += e;
    out += "', ";
  }
  out += "regex used for validation is '";
  out += fmt_text;
  out += "')";
  return out;
}

std::string max_len_error(std::size_t n) { return fmt::format("must be no more than {} characters", n); }

constexpr std::string_view kQualifiedNameMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
constexpr std::string_view kQualifiedNameFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";

// strconv.ParseInt(s, 10, 64): optional sign, decimal digits, no overflow.
bool parse_int64(std::string_view s, int64_t& out) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (b != e && *b == '+') ++b;
  if (b == e) return false;
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e;
}

// ---- selector lexer -----------------------------------------------------------------------------

enum class Tok { End, Ident, In, NotIn, OpenPar, ClosePar, Comma, Eq, DoubleEq, NotEq, Bang, Gt, Lt };

struct Token {
  Tok kind;
  std::string text;
  std::size_t pos;  // 1-based column of the first byte; size+1 for the end
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_special(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (true) {
    while (i < s.size() && is_space(s[i])) ++i;
    if (i >= s.size()) {
      out.push_back({Tok::End, "", s.size() + 1});
      return out;
    }
    const std::size_t start = i;
    const char c = s[i];
    if (is_special(c)) {
      const char n = i + 1 < s.size() ? s[i + 1] : '\0';
      if (c == '!' && n == '=') {
        out.push_back({Tok::NotEq, "!=", start + 1});
        i += 2;
      } else if (c == '=' && n == '=') {
        out.push_back({Tok::DoubleEq, "==", start + 1});
        i += 2;
      } else {
        Tok k = Tok::Eq;
        switch (c) {
          case '=': k = Tok::Eq; break;
          case '!': k = Tok::Bang; break;
          case '(': k = Tok::OpenPar; break;
          case ')': k = Tok::ClosePar; break;
          case ',': k = Tok::Comma; break;
          case '>': k = Tok::Gt; break;
          default: k = Tok::Lt; break;
        }
        out.push_back({k, std::string(1, c), start + 1});
        ++i;
      }
      continue;
    }
    while (i < s.size() && !is_space(s[i]) && !is_special(s[i])) ++i;
    std::string word(s.substr(start, i - start));
    Tok k = word == "in" ? Tok::In : word == "notin" ? Tok::NotIn : Tok::Ident;
    out.push_back({k, std::move(word), start + 1});
  }
}

struct ParseError {
  std::size_t pos;
  std::string message;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : tokens_(lex(text)) {}

  std::optional<ParseError> parse(std::vector<Requirement>& out) {
    if (peek().kind == Tok::End) return std::nullopt;
    while (true) {
      const Token& t = peek();
      if (!is_value(t) && t.kind != Tok::Bang) return expected(t, "label key or '!'");
      Requirement r;
      if (auto err = requirement(r)) return err;
      out.push_back(std::move(r));
      const Token& sep = next();
      if (sep.kind == Tok::End) return std::nullopt;
      if (sep.kind != Tok::Comma) return expected(sep, "',' or end of selector");
      const Token& after = peek();
      if (!is_value(after) && after.kind != Tok::Bang) return expected(after, "label key or '!' after ','");
    }
  }

 private:
  // In value position the keywords are ordinary words ("a=in" selects the value "in").
  static bool is_value(const Token& t) { return t.kind == Tok::Ident || t.kind == Tok::In || t.kind == Tok::NotIn; }

  const Token& peek() const { return tokens_[i_]; }
  const Token& next() {
    const Token& t = tokens_[i_];
    if (t.kind != Tok::End) ++i_;
    return t;
  }

  static ParseError expected(const Token& found, std::string_view what) {
    if (found.kind == Tok::End) return {found.pos, fmt::format("expected {}", what)};
    return {found.pos, fmt::format("expected {}, found '{}'", what, found.text)};
  }

  std::optional<ParseError> requirement(Requirement& r) {
    std::optional<Requirement::Op> op;
    const Token* key = &next();
    if (key->kind == Tok::Bang) {
      op = Requirement::Op::DoesNotExist;
      key = &next();
    }
    if (key->kind != Tok::Ident) return expected(*key, "label key");
    if (auto errs = validate_qualified_name(key->text); !errs.empty()) {
      return ParseError{key->pos, fmt::format("invalid label key {}: {}", go_quote(key->text), fmt::join(errs, "; "))};
    }
    r.key = key->text;
    const Token& la = peek();
    if (la.kind == Tok::End || la.kind == Tok::Comma) {
      r.op = op.value_or(Requirement::Op::Exists);
      return std::nullopt;
    }
    if (op) {  // "!key" takes no operator; the caller reports what follows
      r.op = *op;
      return std::nullopt;
    }
    const Token& o = next();
    switch (o.kind) {
      case Tok::Eq:
      case Tok::DoubleEq: r.op = Requirement::Op::Equals; break;
      case Tok::NotEq: r.op = Requirement::Op::NotEquals; break;
      case Tok::In: r.op = Requirement::Op::In; break;
      case Tok::NotIn: r.op = Requirement::Op::NotIn; break;
      case Tok::Gt: r.op = Requirement::Op::GreaterThan; break;
      case Tok::Lt: r.op = Requirement::Op::LessThan; break;
      default: return expected(o, "one of '=', '==', '!=', 'in', 'notin', '>', '<'");
    }
    std::vector<std::pair<std::string, std::size_t>> values;  // value, position
    if (r.op == Requirement::Op::In || r.op == Requirement::Op::NotIn) {
      if (auto err = set_values(values)) return err;
    } else {
      const Token& v = peek();
      if (v.kind == Tok::End || v.kind == Tok::Comma) {
        values.emplace_back("", v.pos);
      } else if (is_value(v)) {
        values.emplace_back(v.text, v.pos);
        next();
      } else {
        return expected(v, "value");
      }
    }
    for (const auto& [val, pos] : values) {
      if (auto errs = validate_label_value(val); !errs.empty()) {
        return ParseError{pos, fmt::format("invalid label value {}: {}", go_quote(val), fmt::join(errs, "; "))};
      }
      if (r.op == Requirement::Op::GreaterThan || r.op == Requirement::Op::LessThan) {
        int64_t n = 0;
        if (!parse_int64(val, n)) {
          return ParseError{pos, fmt::format("value {} for '>' or '<' must be an integer", go_quote(val))};
        }
      }
    }
    std::set<std::string> unique;
    for (auto& [val, pos] : values) unique.insert(std::move(val));
    r.values.assign(unique.begin(), unique.end());
    return std::nullopt;
  }

  // "(a,b)"; like upstream, empty entries ("()", "(a,)", "(,a)") stand for the empty value.
  std::optional<ParseError> set_values(std::vector<std::pair<std::string, std::size_t>>& out) {
    const Token& open = next();
    if (open.kind != Tok::OpenPar) return expected(open, "'('");
    bool expect_value = true;
    while (true) {
      const Token& t = next();
      if (is_value(t)) {
        if (!expect_value) return expected(t, "',' or ')'");
        out.emplace_back(t.text, t.pos);
        expect_value = false;
      } else if (t.kind == Tok::Comma) {
        if (expect_value) out.emplace_back("", t.pos);
        expect_value = true;
      } else if (t.kind == Tok::ClosePar) {
        if (expect_value) out.emplace_back("", t.pos);
        return std::nullopt;
      } else {
        return expected(t, expect_value ? "value, ',' or ')'" : "',' or ')'");
      }
    }
  }

  std::vector<Token> tokens_;
  std::size_t i_ = 0;
};

bool requirement_matches(const Requirement& r, std::optional<std::string_view> value) {
  auto in_values = [&] { return value && std::binary_search(r.values.begin(), r.values.end(), *value); };
  switch (r.op) {
    case Requirement::Op::Equals:
    case Requirement::Op::In: return in_values();
    case Requirement::Op::NotEquals:
    case Requirement::Op::NotIn: return !value || !in_values();
    case Requirement::Op::Exists: return value.has_value();
    case Requirement::Op::DoesNotExist: return !value.has_value();
    case Requirement::Op::GreaterThan:
    case Requirement::Op::LessThan: {
      int64_t have = 0;
      int64_t want = 0;
      if (!value || r.values.size() != 1 || !parse_int64(*value, have) || !parse_int64(r.values[0], want)) return false;
      return r.op == Requirement::Op::GreaterThan ? have > want : have < want;
    }
  }
  return false;
}

void sort_by_key(std::vector<Requirement>& reqs) {
  std::stable_sort(reqs.begin(), reqs.end(), [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
}

}  // namespace

// ---- validation -------------------------------------------------------------------------------

std::vector<std::string> validate_qualified_name(std::string_view key) {
  std::vector<std::string> errs;
  std::string_view name = key;
  const auto slash = key.find('/');
  if (slash != std::string_view::npos) {
    if (key.find('/', slash + 1) != std::string_view::npos) {
      errs.push_back("a qualified name " + regex_error(kQualifiedNameMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}) +
                     " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return errs;
    }
    std::string_view prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty()) {
      errs.emplace_back("prefix part must be non-empty");
    } else {
      for (auto& m : validate_dns1123_subdomain(prefix)) errs.push_back("prefix part " + m);
    }
  }
  if (name.empty()) {
    errs.emplace_back("name part must be non-empty");
  } else if (name.size() > 63) {
    errs.push_back("name part " + max_len_error(63));
  }
  if (!matches_qualified_name_part(name)) {
    errs.push_back("name part " + regex_error(kQualifiedNameMsg, kQualifiedNameFmt, {"MyName", "my.name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> validate_label_value(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > 63) errs.push_back(max_len_error(63));
  if (!value.empty() && !matches_qualified_name_part(value)) {
    errs.push_back(regex_error(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
        "and end with an alphanumeric character",
        "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

std::vector<std::string> validate_dns1123_subdomain(std::string_view s) {
  std::vector<std::string> errs;
  if (s.size() > 253) errs.push_back(max_len_error(253));
  bool ok = !s.empty();
  std::size_t start = 0;
  while (ok) {
    const auto dot = s.find('.', start);
    const auto part = s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (!matches_dns1123_label(part)) ok = false;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  if (!ok) {
    errs.push_back(regex_error(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
        "and end with an alphanumeric character",
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", {"example.com"}));
  }
  return errs;
}

std::vector<std::string> validate_dns1123_label(std::string_view s) {
  std::vector<std::string> errs;
  if (s.size() > 63) errs.push_back(max_len_error(63));
  if (!matches_dns1123_label(s)) {
    errs.push_back(regex_error(
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
        "with an alphanumeric character",
        "[a-z0-9]([-a-z0-9]*[a-z0-9])?", {"my-name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> validate_dns1035_label(std::string_view s) {
  std::vector<std::string> errs;
  if (s.size() > 63) errs.push_back(max_len_error(63));
  if (!matches_dns1123_label(s) || !(s.front() >= 'a' && s.front() <= 'z')) {
    errs.push_back(regex_error(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
        "character, and end with an alphanumeric character",
        "[a-z]([-a-z0-9]*[a-z0-9])?", {"my-name", "abc-123"}));
  }
  return errs;
}

// ---- LabelSelector ----------------------------------------------------------------------------

Result<LabelSelector> LabelSelector::parse(std::string_view text) {
  LabelSelector sel;
  Parser p(text);
  if (auto err = p.parse(sel.requirements_)) {
    return fail(fmt::format("label selector '{}': position {}: {}", text, err->pos, err->message));
  }
  sort_by_key(sel.requirements_);
  return sel;
}

Result<LabelSelector> LabelSelector::from_json(const json::Value& v, std::string_view field) {
  const FieldPath root(field);
  FieldErrorList errs;
  LabelSelector sel;
  if (!v.IsObject()) {
    return fail(FieldError::invalid(root, FieldValue::of_json(v), "must be an object").to_string());
  }
  if (auto it = v.FindMember("matchLabels"); it != v.MemberEnd() && !it->value.IsNull()) {
    const FieldPath p = root.child("matchLabels");
    if (!it->value.IsObject()) {
      errs.push_back(FieldError::invalid(p, FieldValue::of_json(it->value), "must be an object"));
    } else {
      for (const auto& m : it->value.GetObject()) {
        std::string key(m.name.GetString(), m.name.GetStringLength());
        for (auto& msg : validate_qualified_name(key)) errs.push_back(FieldError::invalid(p, key, msg));
        if (!m.value.IsString()) {
          errs.push_back(FieldError::invalid(p.key(key), FieldValue::of_json(m.value), "must be a string"));
          continue;
        }
        std::string val(m.value.GetString(), m.value.GetStringLength());
        for (auto& msg : validate_label_value(val)) errs.push_back(FieldError::invalid(p.key(key), val, msg));
        sel.requirements_.push_back({key, Requirement::Op::Equals, {val}});
      }
    }
  }
  if (auto it = v.FindMember("matchExpressions"); it != v.MemberEnd() && !it->value.IsNull()) {
    const FieldPath p = root.child("matchExpressions");
    if (!it->value.IsArray()) {
      errs.push_back(FieldError::invalid(p, FieldValue::of_json(it->value), "must be an array"));
    } else {
      std::size_t i = 0;
      for (const auto& e : it->value.GetArray()) {
        const FieldPath ep = p.index(i++);
        if (!e.IsObject()) {
          errs.push_back(FieldError::invalid(ep, FieldValue::of_json(e), "must be an object"));
          continue;
        }
        Requirement r;
        bool ok = true;
        auto k = e.FindMember("key");
        if (k == e.MemberEnd() || k->value.IsNull()) {
          errs.push_back(FieldError::required(ep.child("key"), ""));
          ok = false;
        } else if (!k->value.IsString()) {
          errs.push_back(FieldError::invalid(ep.child("key"), FieldValue::of_json(k->value), "must be a string"));
          ok = false;
        } else {
          r.key.assign(k->value.GetString(), k->value.GetStringLength());
          for (auto& msg : validate_qualified_name(r.key)) {
            errs.push_back(FieldError::invalid(ep.child("key"), r.key, msg));
            ok = false;
          }
        }
        auto o = e.FindMember("operator");
        const std::vector<std::string> ops = {"DoesNotExist", "Exists", "In", "NotIn"};
        if (o == e.MemberEnd() || o->value.IsNull()) {
          errs.push_back(FieldError::required(ep.child("operator"), ""));
          ok = false;
        } else if (!o->value.IsString()) {
          errs.push_back(FieldError::invalid(ep.child("operator"), FieldValue::of_json(o->value), "must be a string"));
          ok = false;
        } else {
          std::string_view op(o->value.GetString(), o->value.GetStringLength());
          if (op == "In") r.op = Requirement::Op::In;
          else if (op == "NotIn") r.op = Requirement::Op::NotIn;
          else if (op == "Exists") r.op = Requirement::Op::Exists;
          else if (op == "DoesNotExist") r.op = Requirement::Op::DoesNotExist;
          else {
            errs.push_back(FieldError::not_supported(ep.child("operator"), op, ops));
            ok = false;
          }
        }
        std::set<std::string> values;
        std::size_t nvalues = 0;
        auto vs = e.FindMember("values");
        if (vs != e.MemberEnd() && !vs->value.IsNull()) {
          if (!vs->value.IsArray()) {
            errs.push_back(FieldError::invalid(ep.child("values"), FieldValue::of_json(vs->value), "must be an array"));
            ok = false;
          } else {
            std::size_t j = 0;
            for (const auto& x : vs->value.GetArray()) {
              const FieldPath vp = ep.child("values").index(j++);
              ++nvalues;
              if (!x.IsString()) {
                errs.push_back(FieldError::invalid(vp, FieldValue::of_json(x), "must be a string"));
                ok = false;
                continue;
              }
              std::string val(x.GetString(), x.GetStringLength());
              for (auto& msg : validate_label_value(val)) {
                errs.push_back(FieldError::invalid(vp, val, msg));
                ok = false;
              }
              values.insert(std::move(val));
            }
          }
        }
        if (ok) {
          const bool set_op = r.op == Requirement::Op::In || r.op == Requirement::Op::NotIn;
          if (set_op && nvalues == 0) {
            errs.push_back(FieldError::required(ep.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"));
            continue;
          }
          if (!set_op && nvalues != 0) {
            errs.push_back(FieldError::forbidden(ep.child("values"),
                                                 "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
            continue;
          }
          r.values.assign(values.begin(), values.end());
          sel.requirements_.push_back(std::move(r));
        }
      }
    }
  }
  if (!errs.empty()) return fail(aggregate(errs));
  sort_by_key(sel.requirements_);
  return sel;
}

LabelSelector LabelSelector::from_labels(const Labels& labels) {
  LabelSelector sel;
  for (const auto& [k, v] : labels) sel.requirements_.push_back({k, Requirement::Op::Equals, {v}});
  return sel;
}

Result<json::Document> LabelSelector::to_json() const {
  json::Document doc = json::Document::object();
  auto& a = doc.alloc();
  json::Value match_labels(rapidjson::kObjectType);
  json::Value expressions(rapidjson::kArrayType);
  for (const auto& r : requirements_) {
    std::string_view op;
    switch (r.op) {
      case Requirement::Op::Equals: {
        auto it = match_labels.FindMember(json::str(r.key, a));
        json::Value v = json::str(r.values.empty() ? std::string_view{} : std::string_view(r.values.front()), a);
        if (it != match_labels.MemberEnd()) {
          it->value = v;
        } else {
          match_labels.AddMember(json::str(r.key, a), v, a);
        }
        continue;
      }
      case Requirement::Op::In: op = "In"; break;
      case Requirement::Op::NotIn:
      case Requirement::Op::NotEquals: op = "NotIn"; break;
      case Requirement::Op::Exists: op = "Exists"; break;
      case Requirement::Op::DoesNotExist: op = "DoesNotExist"; break;
      case Requirement::Op::GreaterThan:
      case Requirement::Op::LessThan:
        return fail(fmt::format("label selector '{}': {} has no metav1.LabelSelector form", to_string(),
                                api::to_string(r)));
    }
    json::Value e(rapidjson::kObjectType);
    e.AddMember("key", json::str(r.key, a), a);
    e.AddMember("operator", json::str(op, a), a);
    if (!r.values.empty()) {
      json::Value vals(rapidjson::kArrayType);
      for (const auto& v : r.values) vals.PushBack(json::str(v, a), a);
      e.AddMember("values", vals, a);
    }
    expressions.PushBack(e, a);
  }
  if (match_labels.MemberCount() > 0) doc.root().AddMember("matchLabels", match_labels, a);
  if (!expressions.Empty()) doc.root().AddMember("matchExpressions", expressions, a);
  return doc;
}

bool LabelSelector::matches(const Labels& labels) const {
  for (const auto& r : requirements_) {
    auto it = labels.find(r.key);
    std::optional<std::string_view> value;
    if (it != labels.end()) value = it->second;
    if (!requirement_matches(r, value)) return false;
  }
  return true;
}

bool LabelSelector::matches(const json::Value& labels_object) const {
  // Looked up in place: list and watch filtering runs this per object, so no label map is built.
  for (const auto& r : requirements_) {
    std::optional<std::string_view> value;
    if (labels_object.IsObject()) {
      auto it = labels_object.FindMember(
          json::Value(rapidjson::StringRef(r.key.data(), static_cast<rapidjson::SizeType>(r.key.size()))));
      if (it != labels_object.MemberEnd() && it->value.IsString()) {
        value = std::string_view(it->value.GetString(), it->value.GetStringLength());
      }
    }
    if (!requirement_matches(r, value)) return false;
  }
  return true;
}

std::string to_string(const Requirement& r) {
  std::string out;
  switch (r.op) {
    case Requirement::Op::DoesNotExist: return "!" + r.key;
    case Requirement::Op::Exists: return r.key;
    case Requirement::Op::In:
    case Requirement::Op::NotIn:
      out = r.key + (r.op == Requirement::Op::In ? " in (" : " notin (");
      for (std::size_t i = 0; i < r.values.size(); ++i) {
        if (i > 0) out += ',';
        out += r.values[i];
      }
      out += ')';
      return out;
    case Requirement::Op::Equals: out = r.key + "="; break;
    case Requirement::Op::NotEquals: out = r.key + "!="; break;
    case Requirement::Op::GreaterThan: out = r.key + ">"; break;
    case Requirement::Op::LessThan: out = r.key + "<"; break;
  }
  if (!r.values.empty()) out += r.values.front();
  return out;
}

std::string LabelSelector::to_string() const {
  std::string out;
  for (std::size_t i = 0; i < requirements_.size(); ++i) {
    if (i > 0) out += ',';
    out += api::to_string(requirements_[i]);
  }
  return out;
}

Labels labels_of(const json::Value& object) {
  Labels labels;
  const json::Value* l = json::find(object, "/metadata/labels");
  if (l && l->IsObject()) {
    for (const auto& m : l->GetObject()) {
      if (m.value.IsString()) {
        labels.emplace(std::string(m.name.GetString(), m.name.GetStringLength()),
                       std::string(m.value.GetString(), m.value.GetStringLength()));
      }
    }
  }
  return labels;
}

}  // namespace unitrain::api

// Kept whole: the CEL lexer, parser and evaluator share the AST node types and source positions
// that stay private to this file; cel.h is the only way in.
#include "localcluster/cel.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <optional>
#include <cstdio>
#include <limits>
#include <regex>

namespace unitrain::localcluster::cel {

enum class NodeKind { Literal, Ident, Select, Index, Call, List, Map, Unary, Binary, And, Or, Ternary, Comprehension };

struct Node {
  NodeKind kind = NodeKind::Literal;
  std::string name;  // identifier, field, function, operator, macro or iteration variable
  std::string var2;  // unused second name (kept for readability of macros with one variable)
  Value literal;
  bool test_only = false;  // has(a.b)
  bool optional = false;   // a.?b, a[?b]
  bool has_target = false; // receiver-style call: target.name(args)
  std::vector<std::shared_ptr<const Node>> kids;
};

namespace {

using NodePtr = std::shared_ptr<const Node>;

// ---------------------------------------------------------------- lexer

enum class Tok { End, Int, Uint, Double, String, Ident, Punct };

struct Token {
  Tok kind = Tok::End;
  std::string text;  // identifier, punctuation, or the decoded string
  Value value;
  size_t pos = 0;
};

struct SyntaxFailure {
  size_t pos;
  std::string message;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  Result<std::vector<Token>, SyntaxFailure> run() {
    std::vector<Token> out;
    for (;;) {
      skip_space();
      if (i_ >= s_.size()) break;
      auto t = next();
      if (!t) return fail(std::move(t).error());
      out.push_back(std::move(*t));
    }
    Token end;
    end.pos = s_.size();
    out.push_back(end);
    return out;
  }

 private:
  void skip_space() {
    while (i_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[i_]))) {
        ++i_;
      } else if (s_.compare(i_, 2, "//") == 0) {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else {
        break;
      }
    }
  }

  Result<Token, SyntaxFailure> next() {
    size_t start = i_;
    char c = s_[i_];
    bool raw = false;
    if ((c == 'r' || c == 'R') && i_ + 1 < s_.size() && (s_[i_ + 1] == '"' || s_[i_ + 1] == '\'')) {
      raw = true;
      ++i_;
      c = s_[i_];
    }
    if (c == '"' || c == '\'') return string_literal(start, raw);
    if (ident_start(c)) {
      while (i_ < s_.size() && ident_char(s_[i_])) ++i_;
      Token t;
      t.kind = Tok::Ident;
      t.text = std::string(s_.substr(start, i_ - start));
      t.pos = start;
      return t;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))) {
      return number(start);
    }
    static constexpr std::string_view two[] = {"==", "!=", "<=", ">=", "&&", "||", ".?", "[?"};
    for (std::string_view p : two) {
      if (s_.compare(i_, 2, p) == 0) {
        i_ += 2;
        return Token{Tok::Punct, std::string(p), {}, start};
      }
    }
    static constexpr std::string_view one = "+-*/%<>!?:.,()[]{}";
    if (one.find(c) != std::string_view::npos) {
      ++i_;
      return Token{Tok::Punct, std::string(1, c), {}, start};
    }
    return fail(SyntaxFailure{start, std::string("token recognition error at: '") + c + "'"});
  }

  Result<Token, SyntaxFailure> number(size_t start) {
    Token t;
    t.pos = start;
    if (s_.compare(i_, 2, "0x") == 0 || s_.compare(i_, 2, "0X") == 0) {
      i_ += 2;
      size_t digits = i_;
      while (i_ < s_.size() && std::isxdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      std::string text(s_.substr(digits, i_ - digits));
      if (text.empty()) return fail(SyntaxFailure{start, "invalid hex literal"});
      bool u = i_ < s_.size() && (s_[i_] == 'u' || s_[i_] == 'U');
      if (u) ++i_;
      errno = 0;
      unsigned long long n = std::strtoull(text.c_str(), nullptr, 16);
      if (errno == ERANGE) return fail(SyntaxFailure{start, "invalid int literal"});
      if (u) {
        t.kind = Tok::Uint;
        t.value = static_cast<uint64_t>(n);
      } else {
        if (n > static_cast<unsigned long long>(std::numeric_limits<int64_t>::max())) {
          return fail(SyntaxFailure{start, "invalid int literal"});
        }
        t.kind = Tok::Int;
        t.value = static_cast<int64_t>(n);
      }
      return t;
    }
    bool is_double = false;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    if (i_ + 1 < s_.size() && s_[i_] == '.' && std::isdigit(static_cast<unsigned char>(s_[i_ + 1]))) {
      is_double = true;
      ++i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      size_t save = i_++;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        is_double = true;
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      } else {
        i_ = save;
      }
    }
    std::string text(s_.substr(start, i_ - start));
    if (is_double) {
      t.kind = Tok::Double;
      t.value = std::strtod(text.c_str(), nullptr);
      return t;
    }
    bool u = i_ < s_.size() && (s_[i_] == 'u' || s_[i_] == 'U');
    if (u) ++i_;
    errno = 0;
    unsigned long long n = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE) return fail(SyntaxFailure{start, "invalid int literal"});
    if (u) {
      t.kind = Tok::Uint;
      t.value = static_cast<uint64_t>(n);
      return t;
    }
    // 9223372036854775808 is only valid after unary minus; the parser folds that case.
    if (n > static_cast<unsigned long long>(std::numeric_limits<int64_t>::max()) + 1ULL) {
      return fail(SyntaxFailure{start, "invalid int literal"});
    }
    t.kind = Tok::Int;
    t.text = text;
    t.value = n > static_cast<unsigned long long>(std::numeric_limits<int64_t>::max())
                  ? Value(std::numeric_limits<int64_t>::min())
                  : Value(static_cast<int64_t>(n));
    return t;
  }

  Result<Token, SyntaxFailure> string_literal(size_t start, bool raw) {
    char q = s_[i_];
    bool triple = s_.compare(i_, 3, std::string(3, q)) == 0;
    i_ += triple ? 3 : 1;
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) return fail(SyntaxFailure{start, "unterminated string literal"});
      char c = s_[i_];
      if (triple ? s_.compare(i_, 3, std::string(3, q)) == 0 : c == q) {
        i_ += triple ? 3 : 1;
        break;
      }
      if (!triple && c == '\n') return fail(SyntaxFailure{start, "unterminated string literal"});
      if (c == '\\' && !raw) {
        if (i_ + 1 >= s_.size()) return fail(SyntaxFailure{i_, "unterminated string literal"});
        char e = s_[i_ + 1];
        i_ += 2;
        switch (e) {
          case 'n': out += '\n'; break;
          case 't': out += '\t'; break;
          case 'r': out += '\r'; break;
          case 'a': out += '\a'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'v': out += '\v'; break;
          case '\\': out += '\\'; break;
          case '\'': out += '\''; break;
          case '"': out += '"'; break;
          case '`': out += '`'; break;
          case '?': out += '?'; break;
          case 'x': case 'X': case 'u': case 'U': {
            size_t n = (e == 'x' || e == 'X') ? 2 : (e == 'u' ? 4 : 8);
            if (i_ + n > s_.size()) return fail(SyntaxFailure{i_ - 2, "invalid escape sequence"});
            std::string hex(s_.substr(i_, n));
            if (!std::all_of(hex.begin(), hex.end(), [](char h) { return std::isxdigit(static_cast<unsigned char>(h)); })) {
              return fail(SyntaxFailure{i_ - 2, "invalid escape sequence"});
            }
            append_utf8(out, static_cast<uint32_t>(std::strtoul(hex.c_str(), nullptr, 16)));
            i_ += n;
            break;
          }
          default:
            if (e >= '0' && e <= '3' && i_ + 2 <= s_.size()) {
              std::string oct = std::string(1, e) + std::string(s_.substr(i_, 2));
              append_utf8(out, static_cast<uint32_t>(std::strtoul(oct.c_str(), nullptr, 8)));
              i_ += 2;
              break;
            }
            return fail(SyntaxFailure{i_ - 2, "invalid escape sequence"});
        }
        continue;
      }
      out += c;
      ++i_;
    }
    Token t;
    t.kind = Tok::String;
    t.value = out;
    t.pos = start;
    return t;
  }

  std::string_view s_;
  size_t i_ = 0;
};

// ---------------------------------------------------------------- parser

NodePtr make_node(NodeKind kind, std::string name = {}, std::vector<NodePtr> kids = {}) {
  auto n = std::make_shared<Node>();
  n->kind = kind;
  n->name = std::move(name);
  n->kids = std::move(kids);
  return n;
}

const std::vector<std::string_view>& reserved_words() {
  static const std::vector<std::string_view> words = {"as", "break", "const", "continue", "else", "for",
                                                     "function", "if", "import", "let", "loop", "package",
                                                     "namespace", "return", "var", "void", "while"};
  return words;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  Result<NodePtr, SyntaxFailure> parse_all() {
    auto e = expr();
    if (!e) return e;
    if (peek().kind != Tok::End) return unexpected("<EOF>");
    return e;
  }

 private:
  const Token& peek() const { return t_[i_]; }
  bool is(std::string_view p) const { return peek().kind == Tok::Punct && peek().text == p; }
  bool accept(std::string_view p) {
    if (!is(p)) return false;
    ++i_;
    return true;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::End: return "<EOF>";
      case Tok::Ident:
      case Tok::Punct: return "'" + t.text + "'";
      default: return "'" + t.value.debug() + "'";
    }
  }
  Failure<SyntaxFailure> unexpected(std::string_view expecting) const {
    std::string msg = peek().kind == Tok::End ? "mismatched input '<EOF>'" : "mismatched input " + describe(peek());
    return fail(SyntaxFailure{peek().pos, msg + " expecting " + std::string(expecting)});
  }
  Result<bool, SyntaxFailure> expect(std::string_view p) {
    if (accept(p)) return true;
    return unexpected("'" + std::string(p) + "'");
  }

  Result<NodePtr, SyntaxFailure> expr() {
    if (++depth_ > 250) return fail(SyntaxFailure{peek().pos, "expression recursion limit exceeded"});
    auto cond = or_expr();
    if (!cond) return cond;
    if (accept("?")) {
      auto a = or_expr();
      if (!a) return a;
      if (auto e = expect(":"); !e) return fail(std::move(e).error());
      auto b = expr();
      if (!b) return b;
      cond = make_node(NodeKind::Ternary, "?:", {*cond, *a, *b});
    }
    --depth_;
    return cond;
  }

  Result<NodePtr, SyntaxFailure> or_expr() {
    auto l = and_expr();
    if (!l) return l;
    while (accept("||")) {
      auto r = and_expr();
      if (!r) return r;
      l = make_node(NodeKind::Or, "||", {*l, *r});
    }
    return l;
  }

  Result<NodePtr, SyntaxFailure> and_expr() {
    auto l = relation();
    if (!l) return l;
    while (accept("&&")) {
      auto r = relation();
      if (!r) return r;
      l = make_node(NodeKind::And, "&&", {*l, *r});
    }
    return l;
  }

  Result<NodePtr, SyntaxFailure> relation() {
    auto l = addition();
    if (!l) return l;
    for (;;) {
      std::string op;
      for (std::string_view p : {"==", "!=", "<=", ">=", "<", ">"}) {
        if (is(p)) op = p;
      }
      if (op.empty() && peek().kind == Tok::Ident && peek().text == "in") op = "in";
      if (op.empty()) return l;
      ++i_;
      auto r = addition();
      if (!r) return r;
      l = make_node(NodeKind::Binary, op, {*l, *r});
    }
  }

  Result<NodePtr, SyntaxFailure> addition() {
    auto l = multiplication();
    if (!l) return l;
    while (is("+") || is("-")) {
      std::string op = peek().text;
      ++i_;
      auto r = multiplication();
      if (!r) return r;
      l = make_node(NodeKind::Binary, op, {*l, *r});
    }
    return l;
  }

  Result<NodePtr, SyntaxFailure> multiplication() {
    auto l = unary();
    if (!l) return l;
    while (is("*") || is("/") || is("%")) {
      std::string op = peek().text;
      ++i_;
      auto r = unary();
      if (!r) return r;
      l = make_node(NodeKind::Binary, op, {*l, *r});
    }
    return l;
  }

  Result<NodePtr, SyntaxFailure> unary() {
    if (accept("!")) {
      auto e = unary();
      if (!e) return e;
      return make_node(NodeKind::Unary, "!", {*e});
    }
    if (is("-")) {
      ++i_;
      // -9223372036854775808 is the one literal that only exists negated.
      if (peek().kind == Tok::Int || peek().kind == Tok::Double) {
        Token lit = peek();
        ++i_;
        auto n = std::make_shared<Node>();
        n->kind = NodeKind::Literal;
        if (lit.kind == Tok::Int) {
          int64_t v = std::get<int64_t>(lit.value.v);
          n->literal = v == std::numeric_limits<int64_t>::min() ? v : -v;
        } else {
          n->literal = -std::get<double>(lit.value.v);
        }
        return member_suffix(n);
      }
      auto e = unary();
      if (!e) return e;
      return make_node(NodeKind::Unary, "-", {*e});
    }
    return member();
  }

  Result<NodePtr, SyntaxFailure> member() {
    auto p = primary();
    if (!p) return p;
    return member_suffix(*p);
  }

  Result<std::vector<NodePtr>, SyntaxFailure> args(std::string_view close) {
    std::vector<NodePtr> out;
    if (accept(close)) return out;
    for (;;) {
      auto e = expr();
      if (!e) return fail(std::move(e).error());
      out.push_back(*e);
      if (accept(close)) return out;
      if (auto c = expect(","); !c) return fail(std::move(c).error());
      if (accept(close)) return out;  // trailing comma
    }
  }

  Result<NodePtr, SyntaxFailure> member_suffix(NodePtr n) {
    for (;;) {
      if (is(".") || is(".?")) {
        bool opt = peek().text == ".?";
        ++i_;
        if (peek().kind != Tok::Ident) return unexpected("IDENTIFIER");
        std::string field = peek().text;
        size_t field_pos = peek().pos;
        ++i_;
        if (!opt && accept("(")) {
          auto a = args(")");
          if (!a) return fail(std::move(a).error());
          auto m = method(n, field, std::move(*a), field_pos);
          if (!m) return m;
          n = *m;
          continue;
        }
        auto s = std::make_shared<Node>();
        s->kind = NodeKind::Select;
        s->name = field;
        s->optional = opt;
        s->kids = {n};
        n = s;
      } else if (is("[") || is("[?")) {
        bool opt = peek().text == "[?";
        ++i_;
        auto idx = expr();
        if (!idx) return idx;
        if (auto c = expect("]"); !c) return fail(std::move(c).error());
        auto s = std::make_shared<Node>();
        s->kind = NodeKind::Index;
        s->optional = opt;
        s->kids = {n, *idx};
        n = s;
      } else {
        return n;
      }
    }
  }

  // target.name(args): the comprehension macros, optional.of/none, or a receiver call.
  Result<NodePtr, SyntaxFailure> method(NodePtr target, const std::string& name, std::vector<NodePtr> a,
                                        size_t pos) {
    static const std::vector<std::string_view> macros = {"all", "exists", "exists_one", "map", "filter"};
    if (std::find(macros.begin(), macros.end(), name) != macros.end()) {
      bool arity_ok = a.size() == 2 || (name == "map" && a.size() == 3);
      if (!arity_ok) return fail(SyntaxFailure{pos, "invalid argument count for macro " + name});
      if (a[0]->kind != NodeKind::Ident) return fail(SyntaxFailure{pos, "argument must be a simple name"});
      auto c = std::make_shared<Node>();
      c->kind = NodeKind::Comprehension;
      c->name = name;
      c->var2 = a[0]->name;
      c->kids = {target};
      for (size_t k = 1; k < a.size(); ++k) c->kids.push_back(a[k]);
      return NodePtr(c);
    }
    if (target->kind == NodeKind::Ident && target->name == "optional") {
      auto c = make_node(NodeKind::Call, "optional." + name, std::move(a));
      return c;
    }
    auto c = std::make_shared<Node>();
    c->kind = NodeKind::Call;
    c->name = name;
    c->has_target = true;
    c->kids = {target};
    for (auto& x : a) c->kids.push_back(std::move(x));
    return NodePtr(c);
  }

  Result<NodePtr, SyntaxFailure> primary() {
    const Token tok = peek();
    switch (tok.kind) {
      case Tok::Int:
      case Tok::Uint:
      case Tok::Double:
      case Tok::String: {
        if (tok.kind == Tok::Int && std::get<int64_t>(tok.value.v) == std::numeric_limits<int64_t>::min()) {
          return fail(SyntaxFailure{tok.pos, "invalid int literal"});
        }
        ++i_;
        auto n = std::make_shared<Node>();
        n->kind = NodeKind::Literal;
        n->literal = tok.value;
        return NodePtr(n);
      }
      case Tok::Ident: {
        ++i_;
        if (tok.text == "true" || tok.text == "false") {
          auto n = std::make_shared<Node>();
          n->literal = tok.text == "true";
          return NodePtr(n);
        }
        if (tok.text == "null") return make_node(NodeKind::Literal);
        if (std::find(reserved_words().begin(), reserved_words().end(), tok.text) != reserved_words().end()) {
          return fail(SyntaxFailure{tok.pos, "reserved identifier: " + tok.text});
        }
        if (tok.text == "in") return fail(SyntaxFailure{tok.pos, "mismatched input 'in'"});
        if (accept("(")) {
          auto a = args(")");
          if (!a) return fail(std::move(a).error());
          if (tok.text == "has") {
            if (a->size() != 1 || (*a)[0]->kind != NodeKind::Select || (*a)[0]->optional) {
              return fail(SyntaxFailure{tok.pos, "invalid argument to has() macro"});
            }
            auto sel = std::make_shared<Node>(*(*a)[0]);
            sel->test_only = true;
            return NodePtr(sel);
          }
          return make_node(NodeKind::Call, tok.text, std::move(*a));
        }
        return make_node(NodeKind::Ident, tok.text);
      }
      case Tok::Punct:
        if (tok.text == "(") {
          ++i_;
          auto e = expr();
          if (!e) return e;
          if (auto c = expect(")"); !c) return fail(std::move(c).error());
          return e;
        }
        if (tok.text == "[") {
          ++i_;
          auto a = args("]");
          if (!a) return fail(std::move(a).error());
          return make_node(NodeKind::List, "", std::move(*a));
        }
        if (tok.text == "{") {
          ++i_;
          std::vector<NodePtr> kv;
          if (accept("}")) return make_node(NodeKind::Map, "", std::move(kv));
          for (;;) {
            auto k = expr();
            if (!k) return k;
            if (auto c = expect(":"); !c) return fail(std::move(c).error());
            auto v = expr();
            if (!v) return v;
            kv.push_back(*k);
            kv.push_back(*v);
            if (accept("}")) break;
            if (auto c = expect(","); !c) return fail(std::move(c).error());
            if (accept("}")) break;
          }
          return make_node(NodeKind::Map, "", std::move(kv));
        }
        if (tok.text == ".") {  // a leading dot names the root scope: .self
          ++i_;
          if (peek().kind != Tok::Ident) return unexpected("IDENTIFIER");
          std::string name = peek().text;
          ++i_;
          return make_node(NodeKind::Ident, name);
        }
        return fail(SyntaxFailure{tok.pos, "mismatched input " + describe(tok) + " expecting an expression"});
      case Tok::End:
        return unexpected("an expression");
    }
    return unexpected("an expression");
  }

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
};

// ---------------------------------------------------------------- values

std::string quote_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string double_text(double d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", d);
  return buf;
}

size_t rune_count(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The byte offset of code point `index` in `s` (s.size() when it is the end).
size_t byte_offset(std::string_view s, size_t index) {
  size_t runes = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (runes == index) return i;
      ++runes;
    }
  }
  return s.size();
}

const ListValue* as_list(const Value& v) { return std::get_if<ListValue>(&v.v); }
const MapValue* as_map(const Value& v) { return std::get_if<MapValue>(&v.v); }
const std::string* as_string(const Value& v) { return std::get_if<std::string>(&v.v); }

bool is_number(const Value& v) {
  return std::holds_alternative<int64_t>(v.v) || std::holds_alternative<uint64_t>(v.v) ||
         std::holds_alternative<double>(v.v);
}

// Three-way comparison of numbers of any numeric type; nullopt for NaN.
std::optional<int> compare_numbers(const Value& a, const Value& b) {
  auto as_long_double = [](const Value& v) -> long double {
    if (auto* i = std::get_if<int64_t>(&v.v)) return static_cast<long double>(*i);
    if (auto* u = std::get_if<uint64_t>(&v.v)) return static_cast<long double>(*u);
    return static_cast<long double>(std::get<double>(v.v));
  };
  if (auto* ai = std::get_if<int64_t>(&a.v)) {
    if (auto* bi = std::get_if<int64_t>(&b.v)) return (*ai > *bi) - (*ai < *bi);
  }
  long double x = as_long_double(a), y = as_long_double(b);
  if (std::isnan(x) || std::isnan(y)) return std::nullopt;
  return (x > y) - (x < y);
}

Value no_overload() { return make_error("no such overload"); }

const Value* map_find(const MapValue& m, const Value& key) {
  for (const auto& [k, v] : *m.entries) {
    if (equal(k, key)) return &v;
  }
  return nullptr;
}

// ---------------------------------------------------------------- evaluation

struct Scope {
  const std::map<std::string, Value, std::less<>>& globals;
  std::vector<std::pair<std::string, Value>> locals;

  const Value* find(std::string_view name) const {
    for (auto it = locals.rbegin(); it != locals.rend(); ++it) {
      if (it->first == name) return &it->second;
    }
    auto g = globals.find(name);
    return g == globals.end() ? nullptr : &g->second;
  }
};

Value eval(const Node& n, Scope& s);

Value select_field(const Value& target, const std::string& field, bool test_only) {
  if (target.is_error()) return target;
  if (const MapValue* m = as_map(target)) {
    const Value* v = map_find(*m, Value(field));
    if (test_only) return v != nullptr;
    if (v == nullptr) return make_error("no such key: " + field);
    return *v;
  }
  return make_error("no such overload");
}

Value index_value(const Value& target, const Value& idx) {
  if (target.is_error()) return target;
  if (idx.is_error()) return idx;
  if (const ListValue* l = as_list(target)) {
    int64_t i = 0;
    if (auto* x = std::get_if<int64_t>(&idx.v)) {
      i = *x;
    } else if (auto* u = std::get_if<uint64_t>(&idx.v)) {
      i = static_cast<int64_t>(*u);
    } else if (auto* d = std::get_if<double>(&idx.v); d != nullptr && std::floor(*d) == *d) {
      i = static_cast<int64_t>(*d);
    } else {
      return no_overload();
    }
    if (i < 0 || static_cast<size_t>(i) >= l->items->size()) {
      return make_error("index out of bounds: " + std::to_string(i));
    }
    return (*l->items)[static_cast<size_t>(i)];
  }
  if (const MapValue* m = as_map(target)) {
    const Value* v = map_find(*m, idx);
    if (v == nullptr) return make_error("no such key: " + (as_string(idx) ? *as_string(idx) : idx.debug()));
    return *v;
  }
  return no_overload();
}

Value wrap_optional(std::optional<Value> v) {
  OptionalValue o;
  if (v) o.value = std::make_shared<const Value>(std::move(*v));
  return o;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (auto* x = std::get_if<int64_t>(&a.v)) {
    auto* y = std::get_if<int64_t>(&b.v);
    if (y == nullptr) return no_overload();
    int64_t r = 0;
    if (op == "+" && __builtin_add_overflow(*x, *y, &r)) return make_error("integer overflow");
    if (op == "-" && __builtin_sub_overflow(*x, *y, &r)) return make_error("integer overflow");
    if (op == "*" && __builtin_mul_overflow(*x, *y, &r)) return make_error("integer overflow");
    if (op == "/" || op == "%") {
      if (*y == 0) return make_error(op == "/" ? "division by zero" : "modulus by zero");
      if (*x == std::numeric_limits<int64_t>::min() && *y == -1) return make_error("integer overflow");
      r = op == "/" ? *x / *y : *x % *y;
    }
    return r;
  }
  if (auto* x = std::get_if<uint64_t>(&a.v)) {
    auto* y = std::get_if<uint64_t>(&b.v);
    if (y == nullptr) return no_overload();
    uint64_t r = 0;
    if (op == "+" && __builtin_add_overflow(*x, *y, &r)) return make_error("unsigned integer overflow");
    if (op == "-" && __builtin_sub_overflow(*x, *y, &r)) return make_error("unsigned integer overflow");
    if (op == "*" && __builtin_mul_overflow(*x, *y, &r)) return make_error("unsigned integer overflow");
    if (op == "/" || op == "%") {
      if (*y == 0) return make_error(op == "/" ? "division by zero" : "modulus by zero");
      r = op == "/" ? *x / *y : *x % *y;
    }
    return r;
  }
  if (auto* x = std::get_if<double>(&a.v)) {
    auto* y = std::get_if<double>(&b.v);
    if (y == nullptr || op == "%") return no_overload();
    if (op == "+") return *x + *y;
    if (op == "-") return *x - *y;
    if (op == "*") return *x * *y;
    return *x / *y;
  }
  if (op == "+") {
    if (auto* x = as_string(a)) {
      if (auto* y = as_string(b)) return *x + *y;
      return no_overload();
    }
    if (auto* x = as_list(a)) {
      auto* y = as_list(b);
      if (y == nullptr) return no_overload();
      List out = *x->items;
      out.insert(out.end(), y->items->begin(), y->items->end());
      return make_list(std::move(out));
    }
  }
  return no_overload();
}

Value compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equal(a, b);
  if (op == "!=") return !equal(a, b);
  std::optional<int> c;
  if (is_number(a) && is_number(b)) {
    c = compare_numbers(a, b);
    if (!c) return false;
  } else if (as_string(a) && as_string(b)) {
    c = as_string(a)->compare(*as_string(b));
    c = (*c > 0) - (*c < 0);
  } else if (std::holds_alternative<bool>(a.v) && std::holds_alternative<bool>(b.v)) {
    c = static_cast<int>(std::get<bool>(a.v)) - static_cast<int>(std::get<bool>(b.v));
  } else {
    return no_overload();
  }
  if (op == "<") return *c < 0;
  if (op == "<=") return *c <= 0;
  if (op == ">") return *c > 0;
  return *c >= 0;
}

Value membership(const Value& elem, const Value& container) {
  if (const ListValue* l = as_list(container)) {
    for (const Value& x : *l->items) {
      if (equal(x, elem)) return true;
    }
    return false;
  }
  if (const MapValue* m = as_map(container)) return map_find(*m, elem) != nullptr;
  return no_overload();
}

Value to_string_value(const Value& v) {
  if (auto* s = as_string(v)) return *s;
  if (auto* i = std::get_if<int64_t>(&v.v)) return std::to_string(*i);
  if (auto* u = std::get_if<uint64_t>(&v.v)) return std::to_string(*u);
  if (auto* d = std::get_if<double>(&v.v)) return double_text(*d);
  if (auto* b = std::get_if<bool>(&v.v)) return std::string(*b ? "true" : "false");
  return no_overload();
}

Value to_int(const Value& v) {
  if (auto* i = std::get_if<int64_t>(&v.v)) return *i;
  if (auto* u = std::get_if<uint64_t>(&v.v)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return make_error("integer overflow");
    return static_cast<int64_t>(*u);
  }
  if (auto* d = std::get_if<double>(&v.v)) {
    if (!std::isfinite(*d) || *d >= 9.223372036854775807e18 || *d < -9.223372036854775808e18) {
      return make_error("integer overflow");
    }
    return static_cast<int64_t>(std::trunc(*d));
  }
  if (auto* s = as_string(v)) {
    errno = 0;
    char* end = nullptr;
    long long n = std::strtoll(s->c_str(), &end, 10);
    if (s->empty() || *end != '\0' || errno == ERANGE) return make_error("cannot convert " + quote_string(*s) + " to int");
    return static_cast<int64_t>(n);
  }
  return no_overload();
}

Value size_of(const Value& v) {
  if (auto* s = as_string(v)) return static_cast<int64_t>(rune_count(*s));
  if (auto* l = as_list(v)) return static_cast<int64_t>(l->items->size());
  if (auto* m = as_map(v)) return static_cast<int64_t>(m->entries->size());
  return no_overload();
}

// RE2 (CEL's regular expressions) in std::regex's ECMAScript grammar: leading flag groups
// (`(?i)`, `(?s)`-free), `\A` and `\z` become anchors; what RE2 refuses (backreferences,
// lookarounds) is refused here too instead of silently working. Empty when not translatable.
std::optional<std::pair<std::string, std::regex::flag_type>> re2_as_ecmascript(std::string_view re2) {
  std::regex::flag_type flags = std::regex::ECMAScript;
  while (re2.starts_with("(?") && re2.size() > 3) {
    size_t close = re2.find(')');
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view group = re2.substr(2, close - 2);
    if (group.empty() || group.find_first_not_of("imsU") != std::string_view::npos) break;  // not a flag group
    for (char c : group) {
      if (c == 'i') flags |= std::regex::icase;
      else if (c == 'm') flags |= std::regex::multiline;
      else return std::nullopt;  // s (dot matches newline) and U (ungreedy) have no ECMAScript form
    }
    re2.remove_prefix(close + 1);
  }
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < re2.size(); ++i) {
    const char c = re2[i];
    if (c == '\\' && i + 1 < re2.size()) {
      const char n = re2[i + 1];
      if (n >= '1' && n <= '9') return std::nullopt;  // backreference
      if (!in_class && n == 'A') out += '^';
      else if (!in_class && n == 'z') out += '$';
      else if (n == 'p' || n == 'P' || n == 'Q' || n == 'C') return std::nullopt;  // Unicode classes, \Q...\E, \C
      else out.append(re2.substr(i, 2));
      ++i;
      continue;
    }
    if (!in_class && c == '(' && re2.substr(i).starts_with("(?")) {
      // (?:...) and (?P<name>...) / (?<name>...) are fine; lookarounds are not RE2.
      std::string_view rest = re2.substr(i + 2);
      if (rest.starts_with("=") || rest.starts_with("!") || rest.starts_with("<=") || rest.starts_with("<!")) {
        return std::nullopt;
      }
      if (rest.starts_with("P<") || rest.starts_with("<")) {  // a named group: ECMAScript has no names
        size_t close = rest.find('>');
        if (close == std::string_view::npos) return std::nullopt;
        out += "(";
        i += 2 + close;
        continue;
      }
    }
    if (c == '[' && !in_class) in_class = true;
    else if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return std::pair{out, flags};
}

Value regex_matches(const std::string& text, const std::string& pattern) {
  auto translated = re2_as_ecmascript(pattern);
  if (!translated) return make_error("invalid regular expression: " + pattern);
  try {
    return std::regex_search(text, std::regex(translated->first, translated->second));
  } catch (const std::regex_error&) {
    return make_error("invalid regular expression: " + pattern);
  }
}

Value string_method(const std::string& name, const std::string& s, const std::vector<Value>& a) {
  auto str_arg = [&](size_t i) -> const std::string* { return i < a.size() ? as_string(a[i]) : nullptr; };
  if (name == "startsWith" && a.size() == 1 && str_arg(0)) return s.rfind(*str_arg(0), 0) == 0;
  if (name == "endsWith" && a.size() == 1 && str_arg(0)) {
    const std::string& x = *str_arg(0);
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
  }
  if (name == "contains" && a.size() == 1 && str_arg(0)) return s.find(*str_arg(0)) != std::string::npos;
  if (name == "matches" && a.size() == 1 && str_arg(0)) return regex_matches(s, *str_arg(0));
  if (name == "size" && a.empty()) return static_cast<int64_t>(rune_count(s));
  if ((name == "lowerAscii" || name == "upperAscii") && a.empty()) {
    std::string out = s;
    for (char& c : out) {
      if (name == "lowerAscii" && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (name == "upperAscii" && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    }
    return out;
  }
  if (name == "trim" && a.empty()) {
    size_t b = s.find_first_not_of(" \t\n\r\f\v");
    if (b == std::string::npos) return std::string();
    size_t e = s.find_last_not_of(" \t\n\r\f\v");
    return s.substr(b, e - b + 1);
  }
  if (name == "indexOf" || name == "lastIndexOf") {
    if (a.size() != 1 || !str_arg(0)) return no_overload();
    size_t at = name == "indexOf" ? s.find(*str_arg(0)) : s.rfind(*str_arg(0));
    if (at == std::string::npos) return int64_t{-1};
    return static_cast<int64_t>(rune_count(std::string_view(s).substr(0, at)));
  }
  if (name == "split" && a.size() == 1 && str_arg(0)) {
    const std::string& sep = *str_arg(0);
    List parts;
    if (sep.empty()) {
      for (size_t i = 0; i < s.size();) {
        size_t len = 1;
        while (i + len < s.size() && (static_cast<unsigned char>(s[i + len]) & 0xC0) == 0x80) ++len;
        parts.emplace_back(s.substr(i, len));
        i += len;
      }
    } else {
      size_t start = 0;
      for (;;) {
        size_t at = s.find(sep, start);
        parts.emplace_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
        if (at == std::string::npos) break;
        start = at + sep.size();
      }
    }
    return make_list(std::move(parts));
  }
  if (name == "replace" && a.size() == 2 && str_arg(0) && str_arg(1)) {
    const std::string& from = *str_arg(0);
    if (from.empty()) return s;
    std::string out;
    size_t start = 0;
    for (size_t at; (at = s.find(from, start)) != std::string::npos; start = at + from.size()) {
      out += s.substr(start, at - start) + *str_arg(1);
    }
    return out + s.substr(start);
  }
  if (name == "substring" && (a.size() == 1 || a.size() == 2)) {
    auto* b = std::get_if<int64_t>(&a[0].v);
    int64_t runes = static_cast<int64_t>(rune_count(s));
    int64_t e = runes;
    if (a.size() == 2) {
      auto* ep = std::get_if<int64_t>(&a[1].v);
      if (ep == nullptr) return no_overload();
      e = *ep;
    }
    if (b == nullptr) return no_overload();
    if (*b < 0 || *b > runes || e < *b || e > runes) {
      return make_error("index out of range: " + std::to_string(*b < 0 || *b > runes ? *b : e));
    }
    size_t from = byte_offset(s, static_cast<size_t>(*b)), to = byte_offset(s, static_cast<size_t>(e));
    return s.substr(from, to - from);
  }
  return no_overload();
}

Value list_method(const std::string& name, const List& items, const std::vector<Value>& a) {
  if (name == "size" && a.empty()) return static_cast<int64_t>(items.size());
  if ((name == "indexOf" || name == "lastIndexOf") && a.size() == 1) {
    for (size_t k = 0; k < items.size(); ++k) {
      size_t i = name == "indexOf" ? k : items.size() - 1 - k;
      if (equal(items[i], a[0])) return static_cast<int64_t>(i);
    }
    return int64_t{-1};
  }
  if (name == "join" && a.size() <= 1) {
    std::string sep = a.empty() ? "" : (as_string(a[0]) ? *as_string(a[0]) : "");
    if (!a.empty() && !as_string(a[0])) return no_overload();
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!as_string(items[i])) return no_overload();
      if (i > 0) out += sep;
      out += *as_string(items[i]);
    }
    return out;
  }
  if (name == "sum" && a.empty()) {
    Value total = int64_t{0};
    if (!items.empty() && std::holds_alternative<double>(items[0].v)) total = 0.0;
    if (!items.empty() && std::holds_alternative<uint64_t>(items[0].v)) total = uint64_t{0};
    for (const Value& x : items) {
      total = arithmetic("+", total, x);
      if (total.is_error()) return total;
    }
    return total;
  }
  if ((name == "min" || name == "max") && a.empty()) {
    if (items.empty()) return make_error(name + " called on empty list");
    Value best = items[0];
    for (const Value& x : items) {
      Value less = compare("<", x, best);
      if (less.is_error()) return less;
      if (std::get<bool>(less.v) == (name == "min")) best = x;
    }
    return best;
  }
  if (name == "isSorted" && a.empty()) {
    for (size_t i = 1; i < items.size(); ++i) {
      Value gt = compare(">", items[i - 1], items[i]);
      if (gt.is_error()) return gt;
      if (std::get<bool>(gt.v)) return false;
    }
    return true;
  }
  return no_overload();
}

Value call_global(const std::string& name, const std::vector<Value>& a) {
  for (const Value& v : a) {
    if (v.is_error()) return v;
  }
  if (name == "size" && a.size() == 1) return size_of(a[0]);
  if (name == "int" && a.size() == 1) return to_int(a[0]);
  if (name == "uint" && a.size() == 1) {
    if (auto* u = std::get_if<uint64_t>(&a[0].v)) return *u;
    if (auto* i = std::get_if<int64_t>(&a[0].v)) {
      if (*i < 0) return make_error("unsigned integer overflow");
      return static_cast<uint64_t>(*i);
    }
    if (auto* d = std::get_if<double>(&a[0].v)) {
      if (!std::isfinite(*d) || *d < 0 || *d >= 1.8446744073709552e19) return make_error("unsigned integer overflow");
      return static_cast<uint64_t>(*d);
    }
    if (auto* s = as_string(a[0])) {
      errno = 0;
      char* end = nullptr;
      unsigned long long n = std::strtoull(s->c_str(), &end, 10);
      if (s->empty() || *end != '\0' || errno == ERANGE || (*s)[0] == '-') {
        return make_error("cannot convert " + quote_string(*s) + " to uint");
      }
      return static_cast<uint64_t>(n);
    }
    return no_overload();
  }
  if (name == "double" && a.size() == 1) {
    if (auto* i = std::get_if<int64_t>(&a[0].v)) return static_cast<double>(*i);
    if (auto* u = std::get_if<uint64_t>(&a[0].v)) return static_cast<double>(*u);
    if (auto* d = std::get_if<double>(&a[0].v)) return *d;
    if (auto* s = as_string(a[0])) {
      char* end = nullptr;
      double d = std::strtod(s->c_str(), &end);
      if (s->empty() || *end != '\0') return make_error("cannot convert " + quote_string(*s) + " to double");
      return d;
    }
    return no_overload();
  }
  if (name == "string" && a.size() == 1) return to_string_value(a[0]);
  if (name == "bool" && a.size() == 1) {
    if (auto* b = std::get_if<bool>(&a[0].v)) return *b;
    if (auto* s = as_string(a[0])) {
      if (*s == "true" || *s == "TRUE" || *s == "True" || *s == "t" || *s == "1") return true;
      if (*s == "false" || *s == "FALSE" || *s == "False" || *s == "f" || *s == "0") return false;
      return make_error("cannot convert " + quote_string(*s) + " to bool");
    }
    return no_overload();
  }
  if (name == "dyn" && a.size() == 1) return a[0];
  if (name == "matches" && a.size() == 2 && as_string(a[0]) && as_string(a[1])) {
    return regex_matches(*as_string(a[0]), *as_string(a[1]));
  }
  if (name == "optional.of" && a.size() == 1) return wrap_optional(a[0]);
  if (name == "optional.none" && a.empty()) return wrap_optional(std::nullopt);
  if (name == "optional.ofNonZeroValue" && a.size() == 1) {
    const Value& v = a[0];
    bool zero = std::holds_alternative<NullValue>(v.v) || (as_string(v) && as_string(v)->empty()) ||
                (as_list(v) && as_list(v)->items->empty()) || (as_map(v) && as_map(v)->entries->empty()) ||
                (std::holds_alternative<bool>(v.v) && !std::get<bool>(v.v)) ||
                (is_number(v) && compare_numbers(v, Value(int64_t{0})) == 0);
    return wrap_optional(zero ? std::nullopt : std::optional<Value>(v));
  }
  return make_error("no such overload: " + name);
}

Value call_method(const std::string& name, const Value& target, const std::vector<Value>& a) {
  if (auto* o = std::get_if<OptionalValue>(&target.v)) {
    if (name == "hasValue" && a.empty()) return o->value != nullptr;
    if (name == "value" && a.empty()) {
      if (o->value == nullptr) return make_error("optional.none() dereference");
      return *o->value;
    }
    if (name == "orValue" && a.size() == 1) return o->value ? *o->value : a[0];
    if (name == "or" && a.size() == 1) return o->value ? target : a[0];
    return no_overload();
  }
  for (const Value& v : a) {
    if (v.is_error()) return v;
  }
  if (auto* s = as_string(target)) return string_method(name, *s, a);
  if (auto* l = as_list(target)) return list_method(name, *l->items, a);
  if (auto* m = as_map(target); m != nullptr && name == "size" && a.empty()) {
    return static_cast<int64_t>(m->entries->size());
  }
  return no_overload();
}

// all, exists, exists_one, map, filter over a list's elements or a map's keys.
Value comprehension(const Node& n, Scope& s) {
  Value range = eval(*n.kids[0], s);
  if (range.is_error()) return range;
  List elems;
  if (auto* l = as_list(range)) {
    elems = *l->items;
  } else if (auto* m = as_map(range)) {
    for (const auto& kv : *m->entries) elems.push_back(kv.first);
  } else {
    return no_overload();
  }
  const std::string& macro = n.name;
  List out;
  int64_t matches = 0;
  std::optional<Value> deferred_error;  // all/exists: an error only counts if no element decides
  for (const Value& e : elems) {
    s.locals.emplace_back(n.var2, e);
    Value r = eval(*n.kids[1], s);
    Value transformed;
    bool take = true;
    if (macro == "map" && n.kids.size() == 3) {
      if (r.is_error()) {
        s.locals.pop_back();
        return r;
      }
      if (!std::holds_alternative<bool>(r.v)) {
        s.locals.pop_back();
        return no_overload();
      }
      take = std::get<bool>(r.v);
      if (take) transformed = eval(*n.kids[2], s);
    } else if (macro == "map") {
      transformed = r;
    }
    s.locals.pop_back();
    if (macro == "map") {
      if (!take) continue;
      if (transformed.is_error()) return transformed;
      out.push_back(std::move(transformed));
      continue;
    }
    if (r.is_error()) {
      if (macro == "all" || macro == "exists") {
        if (!deferred_error) deferred_error = r;
        continue;
      }
      return r;
    }
    auto* b = std::get_if<bool>(&r.v);
    if (b == nullptr) return no_overload();
    if (macro == "all" && !*b) return false;
    if (macro == "exists" && *b) return true;
    if (macro == "exists_one" && *b) ++matches;
    if (macro == "filter" && *b) out.push_back(e);
  }
  if (macro == "all" || macro == "exists") {
    if (deferred_error) return *deferred_error;
    return macro == "all";
  }
  if (macro == "exists_one") return matches == 1;
  return make_list(std::move(out));
}

// The optional-typed view of a value for `?.`/`[?]` chains: optional targets are unwrapped.
Value eval_optional_access(const Node& n, Scope& s) {
  Value target = eval(*n.kids[0], s);
  if (target.is_error()) return target;
  if (auto* o = std::get_if<OptionalValue>(&target.v)) {
    if (o->value == nullptr) return target;
    // Copied out first: assigning to `target` releases the optional that owns the value.
    Value inner = *o->value;
    target = std::move(inner);
  }
  if (n.kind == NodeKind::Select) {
    if (auto* m = as_map(target)) {
      const Value* v = map_find(*m, Value(n.name));
      return wrap_optional(v ? std::optional<Value>(*v) : std::nullopt);
    }
    return no_overload();
  }
  Value idx = eval(*n.kids[1], s);
  if (idx.is_error()) return idx;
  if (auto* m = as_map(target)) {
    const Value* v = map_find(*m, idx);
    return wrap_optional(v ? std::optional<Value>(*v) : std::nullopt);
  }
  if (auto* l = as_list(target)) {
    auto* i = std::get_if<int64_t>(&idx.v);
    if (i == nullptr) return no_overload();
    if (*i < 0 || static_cast<size_t>(*i) >= l->items->size()) return wrap_optional(std::nullopt);
    return wrap_optional((*l->items)[static_cast<size_t>(*i)]);
  }
  return no_overload();
}

bool chain_is_optional(const Node& n) {
  if (n.optional) return true;
  if ((n.kind == NodeKind::Select || n.kind == NodeKind::Index) && !n.test_only) return chain_is_optional(*n.kids[0]);
  return false;
}

Value eval(const Node& n, Scope& s) {
  switch (n.kind) {
    case NodeKind::Literal:
      return n.literal;
    case NodeKind::Ident: {
      const Value* v = s.find(n.name);
      if (v == nullptr) return make_error("undeclared reference to '" + n.name + "'");
      return *v;
    }
    case NodeKind::Select:
      if (chain_is_optional(n)) {
        if (n.optional) return eval_optional_access(n, s);
        // a.?b.c: c selected inside the optional; none stays none.
        Value t = eval(*n.kids[0], s);
        if (auto* o = std::get_if<OptionalValue>(&t.v)) {
          if (o->value == nullptr) return t;
          Value inner = select_field(*o->value, n.name, false);
          if (inner.is_error()) return inner;
          return wrap_optional(inner);
        }
        return select_field(t, n.name, n.test_only);
      }
      return select_field(eval(*n.kids[0], s), n.name, n.test_only);
    case NodeKind::Index:
      if (n.optional) return eval_optional_access(n, s);
      if (chain_is_optional(n)) {
        Value t = eval(*n.kids[0], s);
        if (auto* o = std::get_if<OptionalValue>(&t.v)) {
          if (o->value == nullptr) return t;
          Value inner = index_value(*o->value, eval(*n.kids[1], s));
          if (inner.is_error()) return inner;
          return wrap_optional(inner);
        }
        return index_value(t, eval(*n.kids[1], s));
      }
      return index_value(eval(*n.kids[0], s), eval(*n.kids[1], s));
    case NodeKind::Call: {
      std::vector<Value> args;
      size_t first = n.has_target ? 1 : 0;
      for (size_t i = first; i < n.kids.size(); ++i) args.push_back(eval(*n.kids[i], s));
      if (!n.has_target) return call_global(n.name, args);
      Value target = eval(*n.kids[0], s);
      if (target.is_error()) return target;
      return call_method(n.name, target, args);
    }
    case NodeKind::List: {
      List items;
      for (const auto& k : n.kids) {
        Value v = eval(*k, s);
        if (v.is_error()) return v;
        items.push_back(std::move(v));
      }
      return make_list(std::move(items));
    }
    case NodeKind::Map: {
      MapEntries entries;
      for (size_t i = 0; i + 1 < n.kids.size(); i += 2) {
        Value k = eval(*n.kids[i], s);
        if (k.is_error()) return k;
        Value v = eval(*n.kids[i + 1], s);
        if (v.is_error()) return v;
        for (const auto& e : entries) {
          if (equal(e.first, k)) return make_error("Failed with repeated key");
        }
        entries.emplace_back(std::move(k), std::move(v));
      }
      return make_map(std::move(entries));
    }
    case NodeKind::Unary: {
      Value v = eval(*n.kids[0], s);
      if (v.is_error()) return v;
      if (n.name == "!") {
        if (auto* b = std::get_if<bool>(&v.v)) return !*b;
        return no_overload();
      }
      if (auto* i = std::get_if<int64_t>(&v.v)) {
        if (*i == std::numeric_limits<int64_t>::min()) return make_error("integer overflow");
        return -*i;
      }
      if (auto* d = std::get_if<double>(&v.v)) return -*d;
      return no_overload();
    }
    case NodeKind::Binary: {
      Value a = eval(*n.kids[0], s);
      if (a.is_error()) return a;
      Value b = eval(*n.kids[1], s);
      if (b.is_error()) return b;
      if (n.name == "in") return membership(a, b);
      if (n.name == "+" || n.name == "-" || n.name == "*" || n.name == "/" || n.name == "%") {
        return arithmetic(n.name, a, b);
      }
      return compare(n.name, a, b);
    }
    case NodeKind::And:
    case NodeKind::Or: {
      bool absorbing = n.kind == NodeKind::Or;  // true || x, false && x
      Value a = eval(*n.kids[0], s);
      if (auto* b = std::get_if<bool>(&a.v); b != nullptr && *b == absorbing) return absorbing;
      Value c = eval(*n.kids[1], s);
      if (auto* b = std::get_if<bool>(&c.v); b != nullptr && *b == absorbing) return absorbing;
      if (a.is_error()) return a;
      if (c.is_error()) return c;
      if (!std::holds_alternative<bool>(a.v) || !std::holds_alternative<bool>(c.v)) return no_overload();
      return !absorbing;
    }
    case NodeKind::Ternary: {
      Value c = eval(*n.kids[0], s);
      if (c.is_error()) return c;
      auto* b = std::get_if<bool>(&c.v);
      if (b == nullptr) return no_overload();
      return eval(*n.kids[*b ? 1 : 2], s);
    }
    case NodeKind::Comprehension:
      return comprehension(n, s);
  }
  return no_overload();
}

bool references_ident(const Node& n, std::string_view id, std::vector<std::string>& bound) {
  if (n.kind == NodeKind::Ident && n.name == id &&
      std::find(bound.begin(), bound.end(), n.name) == bound.end()) {
    return true;
  }
  if (n.kind == NodeKind::Comprehension) {
    if (references_ident(*n.kids[0], id, bound)) return true;
    bound.push_back(n.var2);
    bool found = false;
    for (size_t i = 1; i < n.kids.size() && !found; ++i) found = references_ident(*n.kids[i], id, bound);
    bound.pop_back();
    return found;
  }
  for (const auto& k : n.kids) {
    if (references_ident(*k, id, bound)) return true;
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------- public API

std::string Value::type_name() const {
  switch (v.index()) {
    case 0: return "null_type";
    case 1: return "bool";
    case 2: return "int";
    case 3: return "uint";
    case 4: return "double";
    case 5: return "string";
    case 6: return "list";
    case 7: return "map";
    case 8: return "optional_type";
    default: return "error";
  }
}

std::string Value::debug() const {
  if (std::holds_alternative<NullValue>(v)) return "null";
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* u = std::get_if<uint64_t>(&v)) return std::to_string(*u) + "u";
  if (auto* d = std::get_if<double>(&v)) return double_text(*d);
  if (auto* s = std::get_if<std::string>(&v)) return quote_string(*s);
  if (auto* l = std::get_if<ListValue>(&v)) {
    std::string out = "[";
    for (size_t i = 0; i < l->items->size(); ++i) out += (i ? ", " : "") + (*l->items)[i].debug();
    return out + "]";
  }
  if (auto* m = std::get_if<MapValue>(&v)) {
    std::string out = "{";
    for (size_t i = 0; i < m->entries->size(); ++i) {
      out += (i ? ", " : "") + (*m->entries)[i].first.debug() + ": " + (*m->entries)[i].second.debug();
    }
    return out + "}";
  }
  if (auto* o = std::get_if<OptionalValue>(&v)) {
    return o->value ? "optional.of(" + o->value->debug() + ")" : "optional.none()";
  }
  return "error(" + std::get<ErrorValue>(v).message + ")";
}

Value make_list(List items) { return ListValue{std::make_shared<const List>(std::move(items))}; }
Value make_map(MapEntries entries) { return MapValue{std::make_shared<const MapEntries>(std::move(entries))}; }
Value make_error(std::string message) { return ErrorValue{std::move(message)}; }

Value from_json(const json::Value& v) {
  static const json::Value no_schema;
  return from_json(v, no_schema);
}

Value from_json(const json::Value& v, const json::Value& schema) {
  auto sub = [&schema](const char* key) -> const json::Value& {
    static const json::Value none;
    if (!schema.IsObject()) return none;
    auto it = schema.FindMember(key);
    return it == schema.MemberEnd() ? none : it->value;
  };
  if (v.IsNull()) return NullValue{};
  if (v.IsBool()) return v.GetBool();
  if (v.IsString()) return std::string(v.GetString(), v.GetStringLength());
  if (v.IsNumber()) {
    const json::Value& type = sub("type");
    bool want_double = type.IsString() && std::string_view(type.GetString()) == "number";
    if (!want_double && v.IsInt64()) return v.GetInt64();
    if (!want_double && v.IsUint64()) return v.GetUint64();
    return v.GetDouble();
  }
  if (v.IsArray()) {
    List items;
    items.reserve(v.Size());
    for (const auto& x : v.GetArray()) items.push_back(from_json(x, sub("items")));
    return make_list(std::move(items));
  }
  MapEntries entries;
  const json::Value& props = sub("properties");
  const json::Value& additional = sub("additionalProperties");
  for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
    const json::Value* field_schema = &additional;
    if (props.IsObject()) {
      auto p = props.FindMember(it->name);
      if (p != props.MemberEnd()) field_schema = &p->value;
    }
    entries.emplace_back(std::string(it->name.GetString(), it->name.GetStringLength()),
                         from_json(it->value, *field_schema));
  }
  return make_map(std::move(entries));
}

bool equal(const Value& a, const Value& b) {
  if (is_number(a) && is_number(b)) return compare_numbers(a, b) == 0;
  if (a.v.index() != b.v.index()) return false;
  if (auto* l = as_list(a)) {
    const List& x = *l->items;
    const List& y = *as_list(b)->items;
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!equal(x[i], y[i])) return false;
    }
    return true;
  }
  if (auto* m = as_map(a)) {
    const MapValue& other = *as_map(b);
    if (m->entries->size() != other.entries->size()) return false;
    for (const auto& [k, v] : *m->entries) {
      const Value* w = map_find(other, k);
      if (w == nullptr || !equal(v, *w)) return false;
    }
    return true;
  }
  if (auto* o = std::get_if<OptionalValue>(&a.v)) {
    const OptionalValue& p = std::get<OptionalValue>(b.v);
    if (!o->value || !p.value) return !o->value && !p.value;
    return equal(*o->value, *p.value);
  }
  if (auto* x = as_string(a)) return *x == *as_string(b);
  if (auto* x = std::get_if<bool>(&a.v)) return *x == std::get<bool>(b.v);
  return std::holds_alternative<NullValue>(a.v);  // null == null; errors equal nothing
}

Result<Program, ParseError> Program::parse(std::string_view source) {
  auto make_error_report = [&](const SyntaxFailure& f) {
    ParseError e;
    size_t line_start = 0;
    for (size_t i = 0; i < f.pos && i < source.size(); ++i) {
      if (source[i] == '\n') {
        ++e.line;
        line_start = i + 1;
      }
    }
    e.column = static_cast<int>(rune_count(source.substr(line_start, f.pos - line_start))) + 1;
    e.message = f.message;
    size_t line_end = source.find('\n', line_start);
    std::string_view text = source.substr(line_start, line_end == std::string_view::npos ? std::string_view::npos
                                                                                          : line_end - line_start);
    e.full = "ERROR: <input>:" + std::to_string(e.line) + ":" + std::to_string(e.column) + ": Syntax error: " +
             f.message + "\n | " + std::string(text) + "\n | " + std::string(static_cast<size_t>(e.column - 1), '.') +
             "^";
    return e;
  };
  auto toks = Lexer(source).run();
  if (!toks) return fail(make_error_report(toks.error()));
  auto root = Parser(std::move(*toks)).parse_all();
  if (!root) return fail(make_error_report(root.error()));
  Program p;
  p.root_ = std::move(*root);
  p.source_ = std::string(source);
  return p;
}

Value Program::evaluate(const std::map<std::string, Value, std::less<>>& variables) const {
  Scope s{variables, {}};
  return eval(*root_, s);
}

bool Program::references(std::string_view identifier) const {
  std::vector<std::string> bound;
  return references_ident(*root_, identifier, bound);
}

}  // namespace unitrain::localcluster::cel

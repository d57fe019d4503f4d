#include "core/json/field_mask.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

namespace unitrain::json {

const FieldMask::Member* FieldMask::Node::find(std::string_view name) const {
  auto it = std::lower_bound(members.begin(), members.end(), name,
                             [](const Member& m, std::string_view n) { return m.name < n; });
  return it != members.end() && it->name == name ? &*it : nullptr;
}

namespace {

using Node = FieldMask::Node;
using Member = FieldMask::Member;

bool special(char c) { return c == ',' || c == '{' || c == '}' || c == '!' || c == '*'; }
bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<std::shared_ptr<const Node>> parse() {
    auto node = list();
    if (!node) return node;
    skip_space();
    if (pos_ != text_.size()) return fail(error(fmt::format("unexpected '{}'", text_[pos_])));
    return node;
  }

 private:
  Error error(std::string what) const {
    return Error(fmt::format("field mask '{}': position {}: {}", text_, pos_, what));
  }
  void skip_space() {
    while (pos_ < text_.size() && space(text_[pos_])) ++pos_;
  }
  bool at(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }

  Result<std::string> name() {
    skip_space();
    std::string out;
    while (pos_ < text_.size() && !special(text_[pos_]) && !space(text_[pos_])) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out += text_[pos_++];
    }
    if (out.empty()) return fail(error("member name expected"));
    return out;
  }

  Result<std::shared_ptr<const Node>> list() {
    auto node = std::make_shared<Node>();
    for (;;) {
      if (at('*')) {
        ++pos_;
        node->others = true;
      } else {
        Member m;
        if (at('!')) {
          ++pos_;
          m.dropped = true;
        }
        auto n = name();
        if (!n) return fail(n.error());
        m.name = std::move(*n);
        if (!m.dropped && at('{')) {
          ++pos_;
          auto inner = list();
          if (!inner) return inner;
          if (!at('}')) return fail(error("'}' expected"));
          ++pos_;
          m.inner = std::move(*inner);
        }
        if (std::any_of(node->members.begin(), node->members.end(), [&](const Member& x) { return x.name == m.name; }))
          return fail(error(fmt::format("'{}' named twice", m.name)));
        node->members.push_back(std::move(m));
      }
      if (!at(',')) break;
      ++pos_;
    }
    std::sort(node->members.begin(), node->members.end(), [](const Member& a, const Member& b) { return a.name < b.name; });
    return std::shared_ptr<const Node>(std::move(node));
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// What a node keeps of one member: nothing, the whole value, or what an inner node keeps.
struct Keeps {
  bool any = false;
  std::shared_ptr<const Node> inner;  // null with `any`: whole
};

Keeps keeps(const Node& node, const std::string& name) {
  if (const Member* m = node.find(name)) return m->dropped ? Keeps{} : Keeps{true, m->inner};
  return node.others ? Keeps{true, nullptr} : Keeps{};
}

std::shared_ptr<const Node> merge(const Node& a, const Node& b) {
  auto out = std::make_shared<Node>();
  out->others = a.others || b.others;
  std::vector<std::string> names;
  for (const auto& m : a.members) names.push_back(m.name);
  for (const auto& m : b.members) names.push_back(m.name);
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  for (const auto& name : names) {
    const Keeps x = keeps(a, name), y = keeps(b, name);
    Member m;
    m.name = name;
    if (!x.any && !y.any) {
      if (!out->others) continue;
      m.dropped = true;
    } else if (x.any && y.any) {
      m.inner = x.inner && y.inner ? merge(*x.inner, *y.inner) : nullptr;
    } else {
      m.inner = x.any ? x.inner : y.inner;
    }
    out->members.push_back(std::move(m));
  }
  return out;
}

void print_name(std::string& out, const std::string& name) {
  for (char c : name) {
    if (special(c) || space(c) || c == '\\') out += '\\';
    out += c;
  }
}

void print(std::string& out, const Node& node) {
  bool first = true;
  auto sep = [&] {
    if (!first) out += ',';
    first = false;
  };
  if (node.others) {
    sep();
    out += '*';
  }
  for (const auto& m : node.members) {
    sep();
    if (m.dropped) out += '!';
    print_name(out, m.name);
    if (m.inner) {
      out += '{';
      print(out, *m.inner);
      out += '}';
    }
  }
}

}  // namespace

Result<FieldMask> FieldMask::parse(std::string_view text) {
  auto root = Parser(text).parse();
  if (!root) return fail(root.error());
  return FieldMask(std::move(*root));
}

FieldMask FieldMask::nothing() { return FieldMask(std::make_shared<const Node>()); }

FieldMask FieldMask::merged(const FieldMask& other) const { return FieldMask(merge(*root_, *other.root_)); }

FieldMask FieldMask::under(std::string_view name) const {
  auto node = std::make_shared<Node>();
  node->members.push_back(Member{std::string(name), false, root_});
  return FieldMask(std::move(node));
}

std::string FieldMask::to_string() const {
  std::string out;
  print(out, *root_);
  return out;
}

}  // namespace unitrain::json

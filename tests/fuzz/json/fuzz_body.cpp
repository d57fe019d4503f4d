#include "tests/fuzz/json/fuzz_body.h"

#include <string_view>

#include "core/api/quantity.h"
#include "core/json/json.h"

namespace unitrain::fuzz {

namespace {

void check(bool invariant) {
  if (!invariant) __builtin_trap();
}

void exercise_document(const json::Document& d) {
  const std::string compact = d.dump();
  const std::string sorted = json::canonical(d.root());
  check(json::equal(d.root(), d.root()));
  auto again = json::Document::parse(compact);
  check(again.has_value());
  check(json::canonical(again->root()) == sorted);
  // YAML output must at least read back; strings with invalid UTF-8 may not survive exactly.
  (void)json::parse_yaml(json::to_yaml(d.root()));
}

void exercise_patches(const json::Document& target, const json::Document& patch) {
  json::Document merged = target;
  json::apply_merge_patch(merged, patch.root());
  (void)merged.dump();

  json::Document diff = json::create_merge_patch(target.root(), merged.root());
  json::Document replayed = target;
  json::apply_merge_patch(replayed, diff.root());
  check(replayed == merged);

  json::Document patched = target;
  const std::string before = target.dump();
  if (!json::apply_json_patch(patched, patch.root())) check(patched.dump() == before);

  json::Document strategic = target;
  if (!json::apply_strategic_merge_patch(strategic, patch.root(), json::kubernetes_merge_key))
    check(strategic.dump() == before);
}

}  // namespace

void json_yaml_one_input(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (auto d = json::Document::parse(text)) exercise_document(*d);
  if (auto docs = json::parse_yaml(text)) {
    for (const auto& d : *docs) exercise_document(d);
  }

  // "target\npatch": both as JSON.
  const size_t split = text.find('\n');
  if (split != std::string_view::npos) {
    auto target = json::Document::parse(text.substr(0, split));
    auto patch = json::Document::parse(text.substr(split + 1));
    if (target && patch) exercise_patches(*target, *patch);
  }

  if (size < 256) {
    if (auto q = api::Quantity::parse(text)) {
      auto again = api::Quantity::parse(q->to_string());
      check(again.has_value());
      check(*again == *q);
    }
  }
}

}  // namespace unitrain::fuzz

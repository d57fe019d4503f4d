// Label and field selectors over arbitrary text (as sent in labelSelector=/fieldSelector=, or as a
// metav1.LabelSelector JSON). Invariants: parsing never crashes and errors say something; a parsed
// label selector prints (to_string) a form that parses back to the same selector; its JSON form,
// when it has one, reads back to a selector that matches exactly the same label sets; a field
// selector that parses binds or refuses with the API server's message, and matching never throws.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/api/labels.h"
#include "localcluster/builtin_resources.h"
#include "localcluster/field_selector.h"
#include "tests/fuzz/invariant.h"

namespace {

namespace api = unitrain::api;
namespace json = unitrain::json;
namespace lc = unitrain::localcluster;
using unitrain::fuzz::require;

const lc::ResourceInfo& pods() {
  static const lc::ResourceInfo* r = [] {
    for (const auto& info : lc::builtin_resources())
      if (info.group.empty() && info.resource == "pods") return &info;
    __builtin_trap();
  }();
  return *r;
}

// Label sets a selector's own terms make interesting: each key with each of its values, absent,
// and with a value no term names.
std::vector<api::Labels> probes(const api::LabelSelector& s) {
  std::vector<api::Labels> out{{}};
  api::Labels all_first;
  for (const auto& r : s.requirements()) {
    for (const auto& v : r.values) out.push_back({{r.key, v}});
    out.push_back({{r.key, "zz-other"}});
    all_first[r.key] = r.values.empty() ? "1" : r.values.front();
  }
  out.push_back(all_first);
  return out;
}

void label_selector(std::string_view text) {
  auto s = api::LabelSelector::parse(text);
  if (!s) {
    require(!s.error().message.empty());
    return;
  }
  const std::string printed = s->to_string();
  auto reparsed = api::LabelSelector::parse(printed);
  require(reparsed.has_value());
  require(*reparsed == *s);
  require(reparsed->to_string() == printed);
  const auto labels = probes(*s);
  auto as_json = s->to_json();
  if (!as_json) return;  // '>' and '<' have no JSON form
  auto from_json = api::LabelSelector::from_json(as_json->root());
  require(from_json.has_value());
  for (const auto& l : labels) require(from_json->matches(l) == s->matches(l));
}

void label_selector_json(std::string_view text) {
  auto d = json::Document::parse(text);
  if (!d) return;
  auto s = api::LabelSelector::from_json(d->root(), "spec.selector");
  if (!s) {
    require(s.error().message.find("spec.selector") != std::string::npos);
    return;
  }
  for (const auto& l : probes(*s)) (void)s->matches(l);
  (void)s->to_string();
}

void field_selector(std::string_view text) {
  auto s = lc::FieldSelector::parse(text);
  if (!s) {
    require(!s.error().message.empty());
    return;
  }
  if (auto bound = s->bind(pods()); !bound) {
    require(bound.error().message.find("field label not supported: ") == 0);
    return;
  }
  auto pod = json::Document::parse(
      R"({"metadata":{"name":"a","namespace":"default"},"spec":{"nodeName":"n"},"status":{"phase":"Running"}})");
  require(pod.has_value());
  (void)s->matches(pod->root());
  for (const auto& r : s->requirements()) require(!r.pointer.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  label_selector(text);
  label_selector_json(text);
  field_selector(text);
  return 0;
}

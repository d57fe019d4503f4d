// What a framework module loaded at run time answers, read by the host: the first input byte picks
// which answer (registration, config, validation, slots, observed children, pod group, desired
// objects, status proposal, resources, core wording), the rest is its JSON. A module is foreign
// code, so its answers are untrusted input. Invariants: reading never crashes; a refusal names
// what is wrong; what is accepted is stable — written back and read again, it gives the same
// document (the x_from(x_json(v)) == v promise of wire.h, checked from the wire side).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/framework/abi/wire.h"
#include "tests/fuzz/invariant.h"

namespace json = unitrain::json;
namespace wire = unitrain::framework::wire;
using unitrain::fuzz::require;

namespace {

// Reads `doc` with `read`; when accepted, writes it with `write`, reads that again and requires the
// second writing to equal the first.
template <class Read, class Write>
void round_trip(const json::Value& doc, Read read, Write write) {
  auto first = read(doc);
  if (!first) {
    require(!first.error().message.empty());
    return;
  }
  const json::Document written = write(*first);
  auto second = read(written.root());
  require(second.has_value());
  require(json::dump(write(*second).root()) == json::dump(written.root()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  auto doc = json::Document::parse(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  if (!doc) return 0;
  const json::Value& v = doc->root();
  switch (data[0] % 10) {
    case 0: round_trip(v, wire::registration_from, wire::registration_json); break;
    case 1: round_trip(v, wire::config_from, wire::config_json); break;
    case 2: round_trip(v, wire::validation_from, wire::validation_json); break;
    case 3: round_trip(v, wire::slots_from, wire::slots_json); break;
    case 4: round_trip(v, wire::pod_group_from, wire::pod_group_json); break;
    case 5: round_trip(v, wire::desired_from, wire::desired_json); break;
    case 6: round_trip(v, wire::status_from, wire::status_json); break;
    case 7:
      round_trip(v, [](const json::Value& d) { return wire::resources_from(d, "resources"); }, wire::resources_json);
      break;
    case 8: round_trip(v, wire::wording_from, wire::wording_json); break;
    default: {
      // Observed children arrive inside a request the host writes; a module echoes nothing back,
      // but the conformance kit reads fixtures with the same reader.
      auto observed = wire::observed_from(v);
      if (!observed) require(!observed.error().message.empty());
      break;
    }
  }
  return 0;
}

// The client's watch decoder over arbitrary response bodies. The first input byte picks how the
// body arrives (chunk sizes) and the frame limit; the rest is the body. Invariant: framing does
// not depend on where the transport split the bytes, so the events and the error (or the clean
// end) fed in chunks equal those fed at once; an event the decoder returns is one of the five
// types with an object, and once failed the decoder stays failed.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/kube/watch_decoder.h"
#include "tests/fuzz/invariant.h"

namespace {

using unitrain::fuzz::require;
namespace kube = unitrain::kube;
namespace json = unitrain::json;

struct Outcome {
  std::vector<std::string> events;  // "<type> <object JSON>"
  std::optional<std::string> error;
  bool ended_cleanly = false;
  friend bool operator==(const Outcome&, const Outcome&) = default;
};

void drain(kube::WatchDecoder& d, Outcome& out) {
  while (!out.error) {
    auto next = d.next();
    if (!next) {
      out.error = next.error().message;
      // Failed for good: the next call reports the same error.
      auto again = d.next();
      require(!again && again.error().message == *out.error);
      return;
    }
    if (!*next) return;
    const kube::WatchEvent& ev = **next;
    require(ev.type == kube::WatchEvent::Type::Added || ev.type == kube::WatchEvent::Type::Modified ||
            ev.type == kube::WatchEvent::Type::Deleted || ev.type == kube::WatchEvent::Type::Bookmark ||
            ev.type == kube::WatchEvent::Type::Error);
    out.events.push_back(std::to_string(static_cast<int>(ev.type)) + " " + json::dump(ev.object.root()));
  }
}

// Through a mask and, with `codes`, writing each stored object's text as it parses: the text
// reads back as the event's object and is what writing that object gives.
Outcome decode_masked(std::string_view body, const std::shared_ptr<const json::StringCodes>& codes) {
  static const auto fields = std::make_shared<const json::FieldMask>(
      json::FieldMask::parse("kind,metadata{name,labels,ownerReferences{uid}},status").value());
  kube::WatchDecoder d(fields);
  if (codes) d.write_text_with(std::make_shared<const json::CurrentCodes>(codes));
  Outcome out;
  d.feed(body);
  while (!out.error) {
    auto next = d.next();
    if (!next) {
      out.error = next.error().message;
      break;
    }
    if (!*next) break;
    const kube::WatchEvent& ev = **next;
    out.events.push_back(std::to_string(static_cast<int>(ev.type)) + " " + json::dump(ev.object.root()));
    if (!ev.text.codes) continue;
    require(ev.text.codes == codes);
    require(ev.type == kube::WatchEvent::Type::Added || ev.type == kube::WatchEvent::Type::Modified);
    rapidjson::StringBuffer scratch;
    require(ev.text.text.bytes() == json::CodedText::write(ev.object.root(), *codes, scratch).bytes());
    auto back = ev.text.text.read(*codes);
    require(back && back->dump() == json::dump(ev.object.root()));
  }
  return out;
}

Outcome decode(std::string_view body, size_t chunk, size_t max_frame) {
  kube::WatchDecoder d(nullptr, max_frame);
  Outcome out;
  for (size_t at = 0; at < body.size() && !out.error; at += chunk) {
    d.feed(body.substr(at, chunk));
    drain(d, out);
  }
  if (!out.error) {
    auto end = d.finish();
    if (end) {
      out.ended_cleanly = true;
      require(d.buffered() == 0 || body.find_first_not_of(" \t\r\n", body.size() - d.buffered()) == std::string_view::npos);
    } else {
      out.error = end.error().message;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t selector = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  // A small limit (selector bit 7) reaches the frame-too-large path with small inputs.
  const size_t max_frame = (selector & 0x80) != 0 ? 16 + (selector & 0x3f) * 4 : size_t{256} << 20;
  const size_t chunk = 1 + (selector & 0x0f);

  const Outcome whole = decode(body, body.size() + 1, max_frame);
  const Outcome split = decode(body, chunk, max_frame);
  const Outcome bytewise = decode(body, 1, max_frame);
  require(split.events == whole.events && split.ended_cleanly == whole.ended_cleanly);
  require(bytewise.events == whole.events && bytewise.ended_cleanly == whole.ended_cleanly);
  require(split.error.has_value() == whole.error.has_value() && bytewise.error.has_value() == whole.error.has_value());

  // Writing the cache's text in the parse changes nothing the parse decides.
  static const auto codes = std::make_shared<const json::StringCodes>(
      std::vector<std::string>{"metadata", "name", "labels", "status", "Running", "training.kubeflow.org/job-name"});
  const Outcome masked = decode_masked(body, nullptr);
  const Outcome written = decode_masked(body, codes);
  require(written.events == masked.events && written.error == masked.error);
  return 0;
}

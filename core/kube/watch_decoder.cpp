#include "core/kube/watch_decoder.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

namespace unitrain::kube {

std::shared_ptr<const json::FieldMask> written_fields() {
  static const auto fields = std::make_shared<const json::FieldMask>(
      json::FieldMask::parse("apiVersion,kind,metadata{name,namespace,uid,resourceVersion,generation}").value());
  return fields;
}

json::FieldMask list_fields(const json::FieldMask& item_fields) {
  return json::FieldMask::parse("apiVersion,kind,metadata").value().merged(item_fields.under("items"));
}

std::optional<WatchEvent::Type> parse_watch_event_type(std::string_view s) {
  if (s == "ADDED") return WatchEvent::Type::Added;
  if (s == "MODIFIED") return WatchEvent::Type::Modified;
  if (s == "DELETED") return WatchEvent::Type::Deleted;
  if (s == "BOOKMARK") return WatchEvent::Type::Bookmark;
  if (s == "ERROR") return WatchEvent::Type::Error;
  return std::nullopt;
}

Result<WatchEvent> watch_event_from_json(json::Document frame) {
  json::Value& root = frame.root();
  if (!root.IsObject()) return fail("watch event: not a JSON object");
  auto type = root.FindMember("type");
  if (type == root.MemberEnd() || !type->value.IsString()) return fail("watch event: \"type\" missing or not a string");
  std::string_view ts(type->value.GetString(), type->value.GetStringLength());
  auto t = parse_watch_event_type(ts);
  if (!t) return fail(fmt::format("watch event: unknown type \"{}\"", ts));
  auto obj = root.FindMember("object");
  if (obj == root.MemberEnd() || !obj->value.IsObject())
    return fail(fmt::format("watch event {}: \"object\" missing or not an object", ts));
  WatchEvent ev;
  ev.type = *t;
  // Moving the subtree keeps the frame's allocator alive inside ev.object: swap the object out
  // into the frame's root so no deep copy of a possibly large object is made.
  json::Value moved(std::move(obj->value));
  root.Swap(moved);
  ev.object = std::move(frame);
  return ev;
}

WatchDecoder::WatchDecoder(std::shared_ptr<const json::FieldMask> object_fields, size_t max_frame_bytes)
    : max_frame_(max_frame_bytes) {
  if (object_fields) frame_fields_ = json::FieldMask::parse("type").value().merged(object_fields->under("object"));
}

void WatchDecoder::feed(std::string_view bytes) {
  if (failed_) return;
  if (start_ > 0 && start_ >= buf_.size() / 2) {
    // Drop consumed bytes once they are the larger part, so a long watch does not grow the
    // buffer and each byte moves O(1) times on average.
    buf_.erase(0, start_);
    consumed_ += start_;
    scan_ -= start_;
    start_ = 0;
  }
  buf_.append(bytes);
}

namespace {

// The bytes the frame scan stops at: outside a string `"`, braces and brackets; inside one `"`
// and the backslash. Everything else is skipped a byte per table lookup, without branching per
// kind of byte (the scan reads every byte of every event, and most of them are inside strings).
struct ScanTables {
  std::array<bool, 256> outside{};
  std::array<bool, 256> inside{};
  constexpr ScanTables() {
    for (unsigned char c : {'"', '{', '}', '[', ']'}) outside[c] = true;
    for (unsigned char c : {'"', '\\'}) inside[c] = true;
  }
};
constexpr ScanTables kScan;

}  // namespace

Result<std::optional<WatchEvent>> WatchDecoder::next() {
  if (failed_) return fail(*failed_);
  const char* data = buf_.data();
  const size_t size = buf_.size();
  while (scan_ < size) {
    if (depth_ == 0) {
      const char c = data[scan_];
      if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
        ++scan_;
        start_ = scan_;
        continue;
      }
      if (c != '{') {
        failed_ = Error(fmt::format("watch stream: unexpected byte 0x{:02x} at offset {} (expected '{{')",
                                    static_cast<unsigned char>(c), consumed_ + scan_));
        return fail(*failed_);
      }
      start_ = scan_;
      depth_ = 1;
      ++scan_;
      continue;
    }
    // Inside a frame: bytes past the limit are not looked at; reaching it with more bytes
    // waiting is the error.
    const size_t limit = std::min(size, start_ + max_frame_);
    size_t i = scan_;
    bool closed = false;
    while (i < limit) {
      if (in_string_) {
        if (escape_) {
          escape_ = false;
          ++i;
          continue;
        }
        while (i < limit && !kScan.inside[static_cast<unsigned char>(data[i])]) ++i;
        if (i == limit) break;
        if (data[i++] == '\\') escape_ = true;
        else in_string_ = false;
        continue;
      }
      while (i < limit && !kScan.outside[static_cast<unsigned char>(data[i])]) ++i;
      if (i == limit) break;
      const char c = data[i++];
      if (c == '"') in_string_ = true;
      else if (c == '{' || c == '[') ++depth_;
      else if (--depth_ == 0) {
        closed = true;
        break;
      }
    }
    scan_ = i;
    if (!closed) {
      if (scan_ < size) {
        failed_ = Error(fmt::format("watch stream: frame at offset {} exceeds {} bytes", consumed_ + start_, max_frame_));
        return fail(*failed_);
      }
      break;
    }
    std::string_view frame(data + start_, scan_ - start_);
    const size_t frame_offset = consumed_ + start_;
    start_ = scan_;
    json::WrittenText text;
    if (frame_fields_ && text_codes_) text.codes = text_codes_->get();
    auto doc = text.codes ? json::CodedText::parse_writing_member(frame, *frame_fields_, "object", *text.codes, text_scratch_, text.text)
               : frame_fields_ ? json::Document::parse(frame, *frame_fields_)
                               : json::Document::parse(frame);
    // An ERROR event's object is a metav1.Status, not the watched kind: read it whole.
    if (doc && frame_fields_ && json::get_string(doc->root(), "/type") == "ERROR") doc = json::Document::parse(frame);
    if (!doc) {
      failed_ = Error(fmt::format("watch stream: frame at offset {}: {}", frame_offset, doc.error().message));
      return fail(*failed_);
    }
    auto ev = watch_event_from_json(std::move(*doc));
    if (!ev) {
      failed_ = Error(fmt::format("watch stream: frame at offset {}: {}", frame_offset, ev.error().message));
      return fail(*failed_);
    }
    if (text.codes && (ev->type == WatchEvent::Type::Added || ev->type == WatchEvent::Type::Modified) && !text.text.empty())
      ev->text = std::move(text);
    return std::optional<WatchEvent>(std::move(*ev));
  }
  return std::optional<WatchEvent>{};
}

Status WatchDecoder::finish() const {
  if (failed_) return fail(*failed_);
  if (depth_ != 0 || scan_ != buf_.size() || start_ != buf_.size())
    return fail(fmt::format("watch stream ended inside an event at offset {} ({} bytes of a partial frame)",
                            consumed_ + start_, buf_.size() - start_));
  return {};
}

}  // namespace unitrain::kube

// Incremental decoder of a watch response body: a sequence of JSON objects
// {"type":"ADDED","object":{...}} that may arrive split at any byte. The API server writes one
// per line, but framing here only relies on JSON structure (string/escape-aware brace depth),
// so any whitespace or none between objects works. With a field mask, each event's object is
// decoded straight into what the mask keeps (Document::parse(text, mask)): the full object is
// never built.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/base/result.h"
#include "core/json/coded_text.h"
#include "core/json/field_mask.h"
#include "core/kube/client.h"

namespace unitrain::kube {

// What to decode of a List response whose items keep `item_fields`: the List's own apiVersion,
// kind and metadata (resourceVersion, continue) whole, each item through the mask.
json::FieldMask list_fields(const json::FieldMask& item_fields);

// "ADDED" -> Added ...; nullopt for anything else.
std::optional<WatchEvent::Type> parse_watch_event_type(std::string_view s);
// Converts one decoded frame {"type":..,"object":..} into an event; errors name what is wrong.
Result<WatchEvent> watch_event_from_json(json::Document frame);

class WatchDecoder {
 public:
  // A frame larger than this is a protocol error rather than a reason to grow without bound.
  // `object_fields` null: whole objects.
  explicit WatchDecoder(std::shared_ptr<const json::FieldMask> object_fields = nullptr,
                        size_t max_frame_bytes = size_t{256} << 20);

  // With a field mask: also write each Added or Modified object's coded text with the codes
  // current when it is decoded (WatchEvent::text), in the same pass as its parse.
  void write_text_with(std::shared_ptr<const json::CurrentCodes> codes) { text_codes_ = std::move(codes); }

  void feed(std::string_view bytes);
  // The next complete event, nullopt when more bytes are needed. After an error the decoder
  // stays failed (a watch stream cannot be resynchronised).
  Result<std::optional<WatchEvent>> next();
  // Called at end of stream: an error when a partial frame is left over.
  Status finish() const;
  // Bytes received but not yet returned as events.
  size_t buffered() const { return buf_.size() - start_; }

 private:
  std::string buf_;
  size_t start_ = 0;     // first byte of the current (incomplete) frame or of unscanned input
  size_t scan_ = 0;      // next byte to scan
  size_t consumed_ = 0;  // total bytes dropped from the front, for offsets in errors
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  size_t max_frame_;
  std::optional<json::FieldMask> frame_fields_;  // "type" and object_fields under "object"
  std::shared_ptr<const json::CurrentCodes> text_codes_;
  rapidjson::StringBuffer text_scratch_;  // the text writer's buffer, reused
  std::optional<Error> failed_;
};

}  // namespace unitrain::kube

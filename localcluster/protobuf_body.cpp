#include "localcluster/protobuf_body.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>

#include "core/api/time.h"
#include "core/base/base64.h"
#include "localcluster/builtin_types.h"
#include "localcluster/protobuf_wire.h"

namespace unitrain::localcluster {
namespace {

using proto::Cardinality;
using proto::FieldType;
using proto::WireField;
using proto::WireReader;
using proto::WireType;

constexpr std::string_view kMagic{"k8s\0", 4};
// Seconds of Go's zero time.Time (0001-01-01T00:00:00Z) since the Unix epoch: an unset
// metav1.Time, which JSON leaves out (null).
constexpr int64_t kZeroTimeSeconds = -62135596800;

Status decode_into(const proto::Message& m, std::string_view bytes, json::Value& out, json::Allocator& a, int depth);

Status wrong_wire(const proto::Message& m, const proto::Field& f) {
  return fail("protobuf: " + std::string(m.name) + "." + std::string(f.name) + ": unexpected wire type");
}

// Go's time.Duration.String(): "1h2m3.5s", "150ms", "0s".
std::string go_duration(int64_t ns) {
  if (ns == 0) return "0s";
  std::string sign = ns < 0 ? "-" : "";
  uint64_t u = ns < 0 ? uint64_t(0) - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  auto fraction = [](uint64_t v, uint64_t unit) {
    std::string s = std::to_string(v / unit);
    uint64_t rest = v % unit;
    if (rest == 0) return s;
    std::string digits = std::to_string(rest + unit).substr(1);
    while (!digits.empty() && digits.back() == '0') digits.pop_back();
    return s + "." + digits;
  };
  if (u < 1000) return sign + std::to_string(u) + "ns";
  if (u < 1000000) return sign + fraction(u, 1000) + "µs";
  if (u < 1000000000) return sign + fraction(u, 1000000) + "ms";
  std::string out;
  const uint64_t h = u / 3600000000000ull, mnt = (u / 60000000000ull) % 60;
  if (h > 0) out += std::to_string(h) + "h";
  if (h > 0 || mnt > 0) out += std::to_string(mnt) + "m";
  out += fraction(u % 60000000000ull, 1000000000) + "s";
  return sign + out;
}

// The JSON value of a message of a special kind; `present` false when JSON leaves it out.
Status decode_special(JsonForm kind, const proto::Message& m, std::string_view bytes, json::Value& out,
                      bool& present, json::Allocator& a, int depth) {
  WireReader r(bytes);
  int64_t ints[4] = {0, 0, 0, 0};
  std::string_view strings[4];
  json::Value items(rapidjson::kArrayType);
  json::Value schema;  // JSONSchemaPropsOr*: the schema alternative, when set
  for (;;) {
    auto f = r.next();
    if (!f) return fail(std::move(f).error());
    if (!*f) break;
    const WireField& w = **f;
    if (kind == JsonForm::Array && w.number == 1) {
      json::Value item;
      const proto::Field& fld = fields_of(m)[0];
      if (fld.type == FieldType::String && w.type == WireType::Bytes) {
        item = json::str(w.bytes, a);
      } else if (fld.type == FieldType::Message && w.type == WireType::Bytes) {
        item.SetObject();
        if (auto s = decode_into(message_of(fld), w.bytes, item, a, depth + 1); !s) return s;
      } else {
        return wrong_wire(m, fld);
      }
      items.PushBack(item, a);
      continue;
    }
    if (kind == JsonForm::SchemaOrArray || kind == JsonForm::SchemaOrBool || kind == JsonForm::SchemaOrStringArray) {
      // OrArray: schema 1, jSONSchemas 2; OrBool: allows 1, schema 2; OrStringArray: schema 1, property 2.
      const proto::Field* fld = field_of(m, w.number);
      if (fld == nullptr) continue;
      if (fld->type == FieldType::Message && fld->cardinality == Cardinality::Single) {
        if (w.type != WireType::Bytes) return wrong_wire(m, *fld);
        schema.SetObject();
        if (auto s = decode_into(message_of(*fld), w.bytes, schema, a, depth + 1); !s) return s;
      } else if (fld->cardinality == Cardinality::Repeated) {
        if (w.type != WireType::Bytes) return wrong_wire(m, *fld);
        json::Value item;
        if (fld->type == FieldType::Message) {
          item.SetObject();
          if (auto s = decode_into(message_of(*fld), w.bytes, item, a, depth + 1); !s) return s;
        } else {
          item = json::str(w.bytes, a);
        }
        items.PushBack(item, a);
      } else if (w.type == WireType::Varint) {
        ints[1] = static_cast<int64_t>(w.value);  // allows
      }
      continue;
    }
    if (w.number >= 1 && w.number <= 3) {
      if (w.type == WireType::Varint) ints[w.number] = static_cast<int64_t>(w.value);
      else if (w.type == WireType::Bytes) strings[w.number] = w.bytes;
    }
  }
  present = true;
  switch (kind) {
    case JsonForm::Time:
    case JsonForm::MicroTime: {
      if (ints[1] == kZeroTimeSeconds && ints[2] == 0) {
        present = false;
        return {};
      }
      auto t = api::TimePoint(std::chrono::duration_cast<api::Clock::duration>(std::chrono::seconds(ints[1]) +
                                                                               std::chrono::nanoseconds(ints[2])));
      out = json::str(kind == JsonForm::Time ? api::format_time(t) : api::format_micro_time(t), a);
      return {};
    }
    case JsonForm::Duration: out = json::str(go_duration(ints[1]), a); return {};
    case JsonForm::Quantity: out = json::str(strings[1], a); return {};
    case JsonForm::IntOrString:
      if (ints[1] == 0) out.SetInt64(static_cast<int32_t>(ints[2]));
      else out = json::str(strings[3], a);
      return {};
    case JsonForm::RawExtension:
    case JsonForm::FieldsV1: {
      if (strings[1].empty()) {
        present = false;
        return {};
      }
      if (strings[1].starts_with(kMagic)) {
        auto inner = decode_protobuf_object(strings[1]);
        if (!inner) return fail(inner.error().message);
        out = json::clone(inner->root(), a);
        return {};
      }
      auto doc = json::Document::parse(strings[1]);
      if (!doc) return fail("protobuf: " + std::string(m.name) + ": raw is not JSON: " + doc.error().message);
      out = json::clone(doc->root(), a);
      return {};
    }
    case JsonForm::RawJson: {
      auto doc = json::Document::parse(strings[1]);
      if (!doc) return fail("protobuf: " + std::string(m.name) + ": raw is not JSON: " + doc.error().message);
      out = json::clone(doc->root(), a);
      return {};
    }
    // The schema when set, else the other alternative (Go's MarshalJSON of these types).
    case JsonForm::SchemaOrArray:
    case JsonForm::SchemaOrStringArray:
      if (schema.IsObject()) out = std::move(schema);
      else if (!items.Empty()) out = std::move(items);
      else present = false;
      return {};
    case JsonForm::SchemaOrBool:
      if (schema.IsObject()) out = std::move(schema);
      else out.SetBool(ints[1] != 0);
      return {};
    case JsonForm::Array: out = std::move(items); return {};
    case JsonForm::Object: break;
  }
  return {};
}

// A float as Go's encoding/json writes it: whole numbers without a fraction (a CRD schema's
// `maximum: 10` stays 10, not 10.0).
void set_number(json::Value& out, double d) {
  if (std::trunc(d) == d && std::fabs(d) < 1e15) out.SetInt64(static_cast<int64_t>(d));
  else out.SetDouble(d);
}

// One value of field `f` from wire field `w`; `present` false when JSON leaves it out.
Status decode_value(const proto::Message& m, const proto::Field& f, const WireField& w, json::Value& out,
                    bool& present, json::Allocator& a, int depth) {
  present = true;
  switch (f.type) {
    case FieldType::String:
      if (w.type != WireType::Bytes) return wrong_wire(m, f);
      out = json::str(w.bytes, a);
      return {};
    case FieldType::Bytes:
      if (w.type != WireType::Bytes) return wrong_wire(m, f);
      out = json::str(base64_encode(w.bytes), a);
      return {};
    case FieldType::Int32:
      if (w.type != WireType::Varint) return wrong_wire(m, f);
      out.SetInt(static_cast<int32_t>(static_cast<uint32_t>(w.value)));
      return {};
    case FieldType::Int64:
      if (w.type != WireType::Varint) return wrong_wire(m, f);
      out.SetInt64(static_cast<int64_t>(w.value));
      return {};
    case FieldType::Bool:
      if (w.type != WireType::Varint) return wrong_wire(m, f);
      out.SetBool(w.value != 0);
      return {};
    case FieldType::Double:
      if (w.type != WireType::Fixed64) return wrong_wire(m, f);
      set_number(out, std::bit_cast<double>(w.value));
      return {};
    case FieldType::Float:
      if (w.type != WireType::Fixed32) return wrong_wire(m, f);
      set_number(out, std::bit_cast<float>(static_cast<uint32_t>(w.value)));
      return {};
    case FieldType::Message: {
      if (w.type != WireType::Bytes) return wrong_wire(m, f);
      const proto::Message& sub = message_of(f);
      if (auto kind = json_form(sub); kind != JsonForm::Object) {
        return decode_special(kind, sub, w.bytes, out, present, a, depth);
      }
      out.SetObject();
      return decode_into(sub, w.bytes, out, a, depth + 1);
    }
  }
  return {};
}

Status decode_map_entry(const proto::Message& m, const proto::Field& f, std::string_view entry, json::Value& map,
                        json::Allocator& a, int depth) {
  WireReader r(entry);
  std::string_view key;
  json::Value value;
  bool has_value = false;
  for (;;) {
    auto next = r.next();
    if (!next) return fail(std::move(next).error());
    if (!*next) break;
    if ((*next)->number == 1 && (*next)->type == WireType::Bytes) key = (*next)->bytes;
    if ((*next)->number == 2) {
      bool present = false;
      if (auto s = decode_value(m, f, **next, value, present, a, depth); !s) return s;
      has_value = present;
    }
  }
  if (!has_value) {
    // An absent value is the type's zero value.
    if (f.type == FieldType::String || f.type == FieldType::Bytes) value = json::str("", a);
    else if (f.type == FieldType::Message) value.SetObject();
    else if (f.type == FieldType::Bool) value.SetBool(false);
    else value.SetInt(0);
  }
  auto existing = map.FindMember(json::Value(rapidjson::StringRef(key.data(), static_cast<rapidjson::SizeType>(key.size()))));
  if (existing != map.MemberEnd()) existing->value = std::move(value);
  else map.AddMember(json::str(key, a), value, a);
  return {};
}

// The zero value of a scalar: "", 0, false.
bool is_zero_scalar(const json::Value& v) {
  if (v.IsString()) return v.GetStringLength() == 0;
  if (v.IsBool()) return !v.GetBool();
  if (v.IsInt64()) return v.GetInt64() == 0;
  if (v.IsDouble()) return v.GetDouble() == 0;
  return false;
}

Status decode_into(const proto::Message& m, std::string_view bytes, json::Value& out, json::Allocator& a, int depth) {
  if (depth > 64) return fail("protobuf: " + std::string(m.name) + ": nested too deeply");
  WireReader r(bytes);
  for (;;) {
    auto next = r.next();
    if (!next) return fail(std::move(next).error());
    if (!*next) break;
    const WireField& w = **next;
    const proto::Field* f = field_of(m, w.number);
    if (f == nullptr) continue;  // a newer field: skipped, as Go's decoder does
    const auto name = rapidjson::StringRef(f->name.data(), static_cast<rapidjson::SizeType>(f->name.size()));
    auto slot = out.FindMember(json::Value(name));
    if (f->cardinality == Cardinality::Map) {
      if (w.type != WireType::Bytes) return wrong_wire(m, *f);
      if (slot == out.MemberEnd()) {
        out.AddMember(name, json::Value(rapidjson::kObjectType), a);
        slot = out.FindMember(json::Value(name));
      }
      if (auto s = decode_map_entry(m, *f, w.bytes, slot->value, a, depth); !s) return s;
      continue;
    }
    if (f->cardinality == Cardinality::Repeated) {
      if (slot == out.MemberEnd()) {
        out.AddMember(name, json::Value(rapidjson::kArrayType), a);
        slot = out.FindMember(json::Value(name));
      }
      const bool packed = w.type == WireType::Bytes && f->type != FieldType::String && f->type != FieldType::Bytes &&
                          f->type != FieldType::Message;
      if (packed) {
        // Packed scalars: the values one after another, without tags.
        std::string_view rest = w.bytes;
        while (!rest.empty()) {
          WireField one;
          one.number = w.number;
          if (f->type == FieldType::Double || f->type == FieldType::Float) {
            const size_t n = f->type == FieldType::Double ? 8 : 4;
            if (rest.size() < n) return fail("protobuf: " + std::string(m.name) + "." + std::string(f->name) + ": truncated");
            one.type = n == 8 ? WireType::Fixed64 : WireType::Fixed32;
            for (size_t i = 0; i < n; ++i) one.value |= uint64_t(static_cast<unsigned char>(rest[i])) << (8 * i);
            rest.remove_prefix(n);
          } else {
            auto v = proto::take_varint(rest);
            if (!v) return fail("protobuf: " + std::string(m.name) + "." + std::string(f->name) + ": " + v.error().message);
            one.type = WireType::Varint;
            one.value = *v;
          }
          json::Value item;
          bool present = false;
          if (auto s = decode_value(m, *f, one, item, present, a, depth); !s) return s;
          slot->value.PushBack(item, a);
        }
        continue;
      }
      json::Value item;
      bool present = false;
      if (auto s = decode_value(m, *f, w, item, present, a, depth); !s) return s;
      if (!present) item.SetNull();
      slot->value.PushBack(item, a);
      continue;
    }
    if (f->inline_fields) {
      // An embedded struct JSON flattens (Volume's VolumeSource, a selector's LocalObjectReference).
      if (w.type != WireType::Bytes) return wrong_wire(m, *f);
      if (auto s = decode_into(message_of(*f), w.bytes, out, a, depth + 1); !s) return s;
      continue;
    }
    json::Value value;
    bool present = false;
    if (auto s = decode_value(m, *f, w, value, present, a, depth); !s) return s;
    // Go's JSON leaves unset times and the zero value of an omitempty non-pointer scalar out, and
    // keeps the zero value of any other scalar; a message (IntOrString, Quantity) is never empty
    // to encoding/json. The last occurrence wins.
    if (!present || (f->type != FieldType::Message && f->omit_empty && is_zero_scalar(value))) {
      if (slot != out.MemberEnd()) out.RemoveMember(slot);
      continue;
    }
    if (slot != out.MemberEnd()) slot->value = std::move(value);
    else out.AddMember(name, value, a);
  }
  return {};
}

}  // namespace

StoreResult<json::Document> decode_protobuf_object(std::string_view body) {
  const auto bad = [](const std::string& why) {
    return fail(errors::bad_request("the object provided is unrecognized: " + why));
  };
  if (!body.starts_with(kMagic)) return bad("protobuf: the body does not start with the \"k8s\\x00\" prefix");
  // runtime.Unknown: typeMeta (apiVersion, kind) = 1, raw = 2, contentEncoding = 3, contentType = 4.
  WireReader r(body.substr(kMagic.size()));
  std::string_view api_version, kind, raw, encoding;
  for (;;) {
    auto next = r.next();
    if (!next) return bad(next.error().message);
    if (!*next) break;
    const WireField& w = **next;
    if (w.type != WireType::Bytes) continue;
    if (w.number == 1) {
      WireReader tm(w.bytes);
      for (;;) {
        auto t = tm.next();
        if (!t) return bad(t.error().message);
        if (!*t) break;
        if ((*t)->number == 1 && (*t)->type == WireType::Bytes) api_version = (*t)->bytes;
        if ((*t)->number == 2 && (*t)->type == WireType::Bytes) kind = (*t)->bytes;
      }
    } else if (w.number == 2) {
      raw = w.bytes;
    } else if (w.number == 3) {
      encoding = w.bytes;
    }
  }
  if (!encoding.empty()) return bad("protobuf: content encoding \"" + std::string(encoding) + "\" is not supported");
  if (kind.empty()) return bad("Object 'Kind' is missing in the protobuf envelope");
  const proto::Message* m = builtin_message(api_version, kind);
  if (m == nullptr) {
    return fail(errors::unsupported_media_type(
        "the body of the request was in an unknown format - accepted media types include: application/json, "
        "application/yaml (no protobuf form of " + std::string(api_version) + ", Kind=" + std::string(kind) + ")"));
  }
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  d.root().AddMember("apiVersion", json::str(api_version, a), a);
  d.root().AddMember("kind", json::str(kind, a), a);
  if (auto s = decode_into(*m, raw, d.root(), a, 0); !s) return bad(s.error().message);
  return d;
}

}  // namespace unitrain::localcluster

#include <algorithm>
#include <charconv>

#include <fmt/format.h>
#include <rapidjson/encodedstream.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "core/json/json.h"
#include "core/json/coded_text.h"
#include "core/json/coded_writer.h"
#include "core/json/field_mask.h"
#include "core/json/mask_filter.h"
#include "core/json/scratch_stack.h"

namespace unitrain::json {

namespace {
// First chunk of a document built in code; parsed and copied documents size theirs to the input.
constexpr std::size_t kSmallChunk = 1024;
constexpr std::size_t kLargestChunk = 64 * 1024;
std::size_t chunk_for(std::size_t bytes) { return std::clamp(bytes, kSmallChunk, kLargestChunk); }

// Bytes a deep copy of `v` takes in a RapidJSON pool: copies size member and element arrays
// exactly, and strings longer than the 13 characters a Value holds inline get their own block.
std::size_t footprint(const Value& v) {
  constexpr std::size_t kInlineChars = 13;
  auto aligned = [](std::size_t n) { return (n + 7) & ~std::size_t{7}; };
  if (v.IsString()) return v.GetStringLength() > kInlineChars ? aligned(v.GetStringLength() + 1) : 0;
  std::size_t bytes = 0;
  if (v.IsObject()) {
    bytes += v.MemberCount() * sizeof(Value::Member);
    for (const auto& m : v.GetObject()) bytes += footprint(m.name) + footprint(m.value);
  } else if (v.IsArray()) {
    bytes += v.Size() * sizeof(Value);
    for (const auto& e : v.GetArray()) bytes += footprint(e);
  }
  return bytes;
}

// A copy is usually kept (cached, compared): one chunk that fits it, small growth afterwards.
std::size_t chunk_for_copy(const Value& v) { return std::clamp(footprint(v), std::size_t{256}, kLargestChunk); }
}  // namespace

Document::Document(std::size_t chunk_bytes) : storage_(std::make_unique<Storage>(chunk_bytes)) {}

Document::Storage& Document::storage() {
  if (!storage_) storage_ = std::make_unique<Storage>(kSmallChunk);
  return *storage_;
}

const Value& Document::null_value() {
  static const Value null;
  return null;
}

Document Document::object() {
  Document d(kSmallChunk);
  d.storage_->doc.SetObject();
  return d;
}

Document Document::array() {
  Document d(kSmallChunk);
  d.storage_->doc.SetArray();
  return d;
}

namespace {

// A parse's scratch stacks (scratch_stack.h), sized so that parsing a Kubernetes object of a few
// KiB (a watch event, a cached object's text) needs no heap for them: the reader's holds the
// string being read (the longest: a container's command line) and its parse states, the
// document's the values of the containers still open.
constexpr std::size_t kReaderScratch = 2048;
constexpr std::size_t kDocumentScratch = 4096;
using ReaderStack = detail::ScratchStack<kReaderScratch>;
using DocumentStack = detail::ScratchStack<kDocumentScratch>;
// What a parse builds: a document on the target document's pool whose pending values are on a
// DocumentStack; its root moves into the target when done (populate()).
using BuildDocument = rapidjson::GenericDocument<rapidjson::UTF8<>, Allocator, DocumentStack>;

template <class Generator>
void populate(rapidjson::Document& into, Generator& gen) {
  DocumentStack stack;
  BuildDocument built(&into.GetAllocator(), kDocumentScratch, &stack);
  built.Populate(gen);
  static_cast<Value&>(into).Swap(built);
}

// Forwards SAX events to a Document (or a filter in front of one) while counting nesting, so a
// hostile input cannot make the recursive helpers (copy, dump, equal, canonical, patches)
// overflow the stack later.
template <class Sink>
struct DepthLimitedHandler {
  Sink& doc;
  int depth = 0;
  bool too_deep = false;

  bool Null() { return doc.Null(); }
  bool Bool(bool b) { return doc.Bool(b); }
  bool Int(int i) { return doc.Int(i); }
  bool Uint(unsigned i) { return doc.Uint(i); }
  bool Int64(int64_t i) { return doc.Int64(i); }
  bool Uint64(uint64_t i) { return doc.Uint64(i); }
  bool Double(double d) { return doc.Double(d); }
  bool number_out_of_range = false;

  // Numbers arrive as text (kParseNumbersAsStringsFlag): RapidJSON 1.1's own string-to-double
  // code is not correctly rounded for long mantissas (so dump() would not re-read to the same
  // value) and has undefined behaviour on huge exponents. std::from_chars is exact.
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
    const char* end = s + n;
    if (std::string_view(s, n).find_first_of(".eE") == std::string_view::npos) {
      int64_t i = 0;
      if (auto [p, ec] = std::from_chars(s, end, i); ec == std::errc() && p == end) return doc.Int64(i);
      uint64_t u = 0;
      if (auto [p, ec] = std::from_chars(s, end, u); ec == std::errc() && p == end) return doc.Uint64(u);
    }
    double d = 0;
    auto [p, ec] = std::from_chars(s, end, d);
    if (ec == std::errc() && p == end) return doc.Double(d);
    if (ec == std::errc::result_out_of_range && underflows(std::string_view(s, n)))
      return doc.Double(s[0] == '-' ? -0.0 : 0.0);
    number_out_of_range = true;
    return false;
  }
  // Whether an out-of-range number is tiny (its first significant digit sits far right of the
  // decimal point) rather than huge.
  static bool underflows(std::string_view num) {
    const size_t e = num.find_first_of("eE");
    const std::string_view mantissa = num.substr(0, e);
    const size_t first = mantissa.find_first_of("123456789");
    if (first == std::string_view::npos) return true;  // zero, whatever the exponent
    int64_t exponent = 0;
    if (e != std::string_view::npos) {
      std::string_view digits = num.substr(e + 1);
      if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), exponent);
      if (ec == std::errc::result_out_of_range) return digits[0] == '-';
    }
    const size_t dot = std::min(mantissa.find('.'), mantissa.size());
    // Power of ten of the first significant digit.
    const int64_t power = first < dot ? static_cast<int64_t>(dot - first) - 1 : -static_cast<int64_t>(first - dot);
    return power + exponent < 0;
  }

  bool String(const char* s, rapidjson::SizeType n, bool copy) { return doc.String(s, n, copy); }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) { return doc.Key(s, n, copy); }
  bool enter() {
    if (++depth > kMaxDepth) {
      too_deep = true;
      return false;
    }
    return true;
  }
  bool StartObject() { return enter() && doc.StartObject(); }
  bool EndObject(rapidjson::SizeType n) { --depth; return doc.EndObject(n); }
  bool StartArray() { return enter() && doc.StartArray(); }
  bool EndArray(rapidjson::SizeType n) { --depth; return doc.EndArray(n); }
};

// Sends a parse's events (what the mask kept) to the document being built and, while inside the
// value of the root's member `member`, to a CodedWriter too: the same events Accept() would send
// it from the document afterwards, so the text is the same.
struct MemberTee {
  BuildDocument& doc;
  detail::CodedWriter& writer;
  std::string_view member;
  int depth = 0;          // containers open
  bool at_member = false;  // the root's last key was `member`
  bool writing = false;   // inside its value
  bool wrote = false;

  // A scalar: the member's whole value, a scalar inside it, or neither.
  template <class Doc, class Out>
  bool scalar(Doc to_doc, Out to_writer) {
    if (writing || (depth == 1 && at_member)) {
      if (!writing) wrote = true;
      at_member = false;
      if (!to_writer()) return false;
    }
    return to_doc();
  }
  bool Null() { return scalar([&] { return doc.Null(); }, [&] { return writer.Null(); }); }
  bool Bool(bool b) { return scalar([&] { return doc.Bool(b); }, [&] { return writer.Bool(b); }); }
  bool Int(int i) { return scalar([&] { return doc.Int(i); }, [&] { return writer.Int(i); }); }
  bool Uint(unsigned u) { return scalar([&] { return doc.Uint(u); }, [&] { return writer.Uint(u); }); }
  bool Int64(int64_t i) { return scalar([&] { return doc.Int64(i); }, [&] { return writer.Int64(i); }); }
  bool Uint64(uint64_t u) { return scalar([&] { return doc.Uint64(u); }, [&] { return writer.Uint64(u); }); }
  bool Double(double d) { return scalar([&] { return doc.Double(d); }, [&] { return writer.Double(d); }); }
  bool String(const char* s, rapidjson::SizeType n, bool copy) {
    return scalar([&] { return doc.String(s, n, copy); }, [&] { return writer.String(s, n); });
  }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) {
    if (writing) {
      if (!writer.Key(s, n)) return false;
    } else if (depth == 1) {
      at_member = !wrote && std::string_view(s, n) == member;  // a repeated member is refused after the parse
    }
    return doc.Key(s, n, copy);
  }
  bool start(bool array) {
    if (!writing && depth == 1 && at_member) {
      writing = wrote = true;
      at_member = false;
    }
    ++depth;
    if (writing && !(array ? writer.StartArray() : writer.StartObject())) return false;
    return array ? doc.StartArray() : doc.StartObject();
  }
  bool end(bool array, rapidjson::SizeType n) {
    --depth;
    if (writing) {
      if (!(array ? writer.EndArray(n) : writer.EndObject(n))) return false;
      if (depth == 1) writing = false;
    }
    return array ? doc.EndArray(n) : doc.EndObject(n);
  }
  bool StartObject() { return start(false); }
  bool StartArray() { return start(true); }
  bool EndObject(rapidjson::SizeType n) { return end(false, n); }
  bool EndArray(rapidjson::SizeType n) { return end(true, n); }
};

struct TextGenerator {
  std::string_view text;
  const FieldMask* mask = nullptr;  // null: everything
  rapidjson::ParseResult result;
  bool too_deep = false;
  bool number_out_of_range = false;
  // With a mask: also write this member of the root (CodedText::parse_writing_member).
  detail::CodedWriter* member_writer = nullptr;
  std::string_view member;
  bool wrote_member = false;

  bool operator()(BuildDocument& doc) {
    if (!mask) return parse_into(doc);
    if (member_writer) {
      MemberTee tee{doc, *member_writer, member};
      detail::MaskFilter<MemberTee> filter(tee, mask->root());
      const bool ok = parse_into(filter);
      wrote_member = tee.wrote;
      return ok;
    }
    detail::MaskFilter<BuildDocument> filter(doc, mask->root());
    return parse_into(filter);
  }

  template <class Sink>
  bool parse_into(Sink& sink) {
    rapidjson::MemoryStream ms(text.data(), text.size());
    rapidjson::EncodedInputStream<rapidjson::UTF8<>, rapidjson::MemoryStream> is(ms);
    DepthLimitedHandler<Sink> handler{sink};
    ReaderStack stack;
    rapidjson::GenericReader<rapidjson::UTF8<>, rapidjson::UTF8<>, ReaderStack> reader(&stack, kReaderScratch);
    // Iterative: the parser itself uses no stack per nesting level. Without
    // kParseStopWhenDoneFlag, trailing garbage after the value is an error.
    result = reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseNumbersAsStringsFlag>(is, handler);
    too_deep = handler.too_deep;
    number_out_of_range = handler.number_out_of_range;
    // The stream reports a NUL byte as its end, so "{}\0junk" would pass without this check.
    if (!result.IsError() && is.Tell() < text.size())
      result.Set(rapidjson::kParseErrorDocumentRootNotSingular, is.Tell());
    return !result.IsError();
  }
};

std::string_view name_of(const Value::Member& m) { return {m.name.GetString(), m.name.GetStringLength()}; }

// Finds an object with a repeated member name. Lookups would see only the first of them while Go
// decoders (the API server) keep the last, so such input is rejected rather than guessed at.
bool find_duplicate_key(const Value& v, std::string& key, std::vector<std::string>& reversed_path) {
  if (v.IsObject()) {
    const auto n = v.MemberCount();
    if (n > 1 && n <= 8) {
      for (auto a = v.MemberBegin(); a != v.MemberEnd(); ++a)
        for (auto b = a + 1; b != v.MemberEnd(); ++b)
          if (name_of(*a) == name_of(*b)) {
            key = name_of(*a);
            return true;
          }
    } else if (n > 8) {
      std::vector<std::string_view> names;
      names.reserve(n);
      for (const auto& m : v.GetObject()) names.push_back(name_of(m));
      std::sort(names.begin(), names.end());
      auto dup = std::adjacent_find(names.begin(), names.end());
      if (dup != names.end()) {
        key = *dup;
        return true;
      }
    }
    for (const auto& m : v.GetObject()) {
      if (find_duplicate_key(m.value, key, reversed_path)) {
        reversed_path.push_back(escape_pointer_token(name_of(m)));
        return true;
      }
    }
  } else if (v.IsArray()) {
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      if (find_duplicate_key(v[i], key, reversed_path)) {
        reversed_path.push_back(std::to_string(i));
        return true;
      }
    }
  }
  return false;
}

}  // namespace

namespace {

// What went wrong in a parse, as its error; ok when the document is good. Text from elsewhere
// is checked for repeated member names too (`check_duplicates`); text this process wrote from a
// document (CodedText) cannot hold any the document did not.
Status parse_outcome(const TextGenerator& gen, const Value& root, bool check_duplicates = true) {
  if (gen.too_deep) {
    return fail(fmt::format("invalid JSON at offset {}: nesting deeper than {} levels",
                            gen.result.Offset(), kMaxDepth));
  }
  if (gen.number_out_of_range) {
    return fail(fmt::format("invalid JSON at offset {}: {}", gen.result.Offset(),
                            rapidjson::GetParseError_En(rapidjson::kParseErrorNumberTooBig)));
  }
  if (gen.result.IsError()) {
    return fail(fmt::format("invalid JSON at offset {}: {}", gen.result.Offset(),
                            rapidjson::GetParseError_En(gen.result.Code())));
  }
  if (!check_duplicates) return {};
  std::string key;
  std::vector<std::string> reversed_path;
  if (find_duplicate_key(root, key, reversed_path)) {
    std::string path;
    for (auto it = reversed_path.rbegin(); it != reversed_path.rend(); ++it) path += "/" + *it;
    return fail(fmt::format("invalid JSON: duplicate key \"{}\" in {}", key, path.empty() ? "/" : path));
  }
  return {};
}

}  // namespace

Result<Document> Document::parse(std::string_view text) {
  // Parsed values take about as many bytes as their text (strings copied, 16-byte nodes).
  Document d(chunk_for(text.size()));
  TextGenerator gen{text, nullptr, {}, false, false, nullptr, {}, false};
  populate(d.storage_->doc, gen);
  if (auto s = parse_outcome(gen, d.storage_->doc); !s) return fail(s.error());
  return d;
}

Result<Document> Document::parse(std::string_view text, const FieldMask& mask) {
  // A mask keeps a small part of what it reads: start small, the pool grows as needed.
  Document d(kSmallChunk);
  TextGenerator gen{text, &mask, {}, false, false, nullptr, {}, false};
  populate(d.storage_->doc, gen);
  if (auto s = parse_outcome(gen, d.storage_->doc); !s) return fail(s.error());
  return d;
}

Result<Document> CodedText::read(const StringCodes& codes, const FieldMask* fields) const {
  std::string expanded;
  std::string_view text = text_;
  if (!codes.empty()) text = expanded = codes.expand(text_);
  // Sized like Document::parse() sizes the document of a text or of a mask's part of one.
  Document d(fields ? kSmallChunk : chunk_for(text.size()));
  TextGenerator gen{text, fields, {}, false, false, nullptr, {}, false};
  populate(d.storage_->doc, gen);
  if (auto s = parse_outcome(gen, d.storage_->doc, false); !s) return fail(s.error());
  return d;
}

Result<Document> CodedText::parse_writing_member(std::string_view text, const FieldMask& mask, std::string_view member,
                                                 const StringCodes& codes, rapidjson::StringBuffer& scratch,
                                                 CodedText& member_text) {
  scratch.Clear();
  detail::CodedWriter writer(scratch, codes);
  Document d(kSmallChunk);
  TextGenerator gen{text, &mask, {}, false, false, &writer, member, false};
  populate(d.storage_->doc, gen);
  if (auto s = parse_outcome(gen, d.storage_->doc); !s) return fail(s.error());
  member_text = gen.wrote_member ? CodedText(std::string(scratch.GetString(), scratch.GetSize())) : CodedText();
  return d;
}

Document Document::project(const Value& v, const FieldMask& mask) {
  Document d(kSmallChunk);
  struct Generator {
    const Value& v;
    const FieldMask& mask;
    bool operator()(BuildDocument& doc) {
      detail::MaskFilter<BuildDocument> filter(doc, mask.root());
      return v.Accept(filter);
    }
  } gen{v, mask};
  populate(d.storage_->doc, gen);
  return d;
}

Document Document::copy_of(const Value& v) {
  Document d(chunk_for_copy(v));
  d.storage_->doc.CopyFrom(v, d.alloc());
  return d;
}

Document::Document(const Document& other) {
  if (!other.storage_) return;  // null, like the original
  storage_ = std::make_unique<Storage>(chunk_for_copy(other.storage_->doc));
  storage_->doc.CopyFrom(other.storage_->doc, storage_->pool);
}

Document& Document::operator=(const Document& other) {
  if (this != &other) *this = Document(other);
  return *this;
}

// A moved-from Document is null and holds no storage (see storage_): still usable, like any.
Document::Document(Document&& other) noexcept : storage_(std::move(other.storage_)) {}
Document& Document::operator=(Document&& other) noexcept {
  storage_ = std::move(other.storage_);
  return *this;
}
Document::~Document() = default;

std::string dump(const Value& v) {
  // The text is built in scratch (scratch_stack.h) and copied out once: objects the operator
  // writes (a pod, a status) fit it, so the result string is the one allocation.
  constexpr std::size_t kTextScratch = 4096;
  detail::ScratchStack<kTextScratch> text;
  detail::ScratchStack<detail::WriterLevels::kBytes> levels;
  using Buffer = rapidjson::GenericStringBuffer<rapidjson::UTF8<>, detail::ScratchStack<kTextScratch>>;
  Buffer buf(&text, kTextScratch);
  rapidjson::Writer<Buffer, rapidjson::UTF8<>, rapidjson::UTF8<>, detail::ScratchStack<detail::WriterLevels::kBytes>> w(buf, &levels);
  v.Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

std::string Document::dump() const { return json::dump(root()); }

std::string Document::pretty() const {
  rapidjson::StringBuffer buf;
  rapidjson::PrettyWriter<rapidjson::StringBuffer> w(buf);
  w.SetIndent(' ', 2);
  root().Accept(w);
  return {buf.GetString(), buf.GetSize()};
}

namespace {

bool numbers_equal(const Value& a, const Value& b) {
  if (a.IsInt64() && b.IsInt64()) return a.GetInt64() == b.GetInt64();
  if (a.IsUint64() && b.IsUint64()) return a.GetUint64() == b.GetUint64();
  return a.GetDouble() == b.GetDouble();
}

void write_canonical(const Value& v, rapidjson::Writer<rapidjson::StringBuffer>& w) {
  if (v.IsObject()) {
    std::vector<const Value::Member*> members;
    members.reserve(v.MemberCount());
    for (const auto& m : v.GetObject()) members.push_back(&m);
    std::sort(members.begin(), members.end(), [](const auto* x, const auto* y) {
      return std::string_view(x->name.GetString(), x->name.GetStringLength()) <
             std::string_view(y->name.GetString(), y->name.GetStringLength());
    });
    w.StartObject();
    for (const auto* m : members) {
      w.Key(m->name.GetString(), m->name.GetStringLength());
      write_canonical(m->value, w);
    }
    w.EndObject();
  } else if (v.IsArray()) {
    w.StartArray();
    for (const auto& e : v.GetArray()) write_canonical(e, w);
    w.EndArray();
  } else {
    v.Accept(w);
  }
}

}  // namespace

bool equal(const Value& a, const Value& b) {
  if (a.IsNumber() && b.IsNumber()) return numbers_equal(a, b);
  if (a.GetType() != b.GetType()) return false;
  switch (a.GetType()) {
    case rapidjson::kObjectType: {
      if (a.MemberCount() != b.MemberCount()) return false;
      for (const auto& m : a.GetObject()) {
        auto it = b.FindMember(m.name);
        if (it == b.MemberEnd() || !equal(m.value, it->value)) return false;
      }
      return true;
    }
    case rapidjson::kArrayType: {
      if (a.Size() != b.Size()) return false;
      for (rapidjson::SizeType i = 0; i < a.Size(); ++i)
        if (!equal(a[i], b[i])) return false;
      return true;
    }
    case rapidjson::kStringType:
      return std::string_view(a.GetString(), a.GetStringLength()) ==
             std::string_view(b.GetString(), b.GetStringLength());
    default:
      return a == b;  // null, true, false
  }
}

bool operator==(const Document& a, const Document& b) { return equal(a.root(), b.root()); }

std::string canonical(const Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  write_canonical(v, w);
  return {buf.GetString(), buf.GetSize()};
}

// ---- pointers ---------------------------------------------------------------------------------

std::string escape_pointer_token(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

bool PointerTokens::next(std::string_view& token) {
  if (done_) return false;
  rest_.remove_prefix(1);  // the '/'
  const size_t slash = rest_.find('/');
  const std::string_view raw = rest_.substr(0, slash);
  if (slash == std::string_view::npos) {
    done_ = true;
  }
  rest_.remove_prefix(raw.size());
  const size_t tilde = raw.find('~');
  if (tilde == std::string_view::npos) {
    token = raw;
    return true;
  }
  // Decoding never lengthens a token.
  char* out = inline_;
  if (raw.size() > kInlineToken) {
    long_.resize(raw.size());
    out = long_.data();
  }
  size_t n = raw.copy(out, tilde);
  for (size_t i = tilde; i < raw.size(); ++i) {
    if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
      out[n++] = raw[i + 1] == '0' ? '~' : '/';
      ++i;
    } else {
      out[n++] = raw[i];
    }
  }
  token = std::string_view(out, n);
  return true;
}

std::optional<std::vector<std::string>> split_pointer(std::string_view pointer) {
  PointerTokens walk(pointer);
  if (!walk.valid()) return std::nullopt;
  std::vector<std::string> tokens;
  std::string_view token;
  while (walk.next(token)) tokens.emplace_back(token);
  return tokens;
}

namespace {

std::optional<rapidjson::SizeType> parse_index(std::string_view token) {
  if (token.empty() || (token.size() > 1 && token[0] == '0')) return std::nullopt;
  rapidjson::SizeType idx = 0;
  auto [p, ec] = std::from_chars(token.data(), token.data() + token.size(), idx);
  if (ec != std::errc() || p != token.data() + token.size()) return std::nullopt;
  return idx;
}

// A member name to look up: RapidJSON compares a StringRef by length, so no terminator is needed.
// An empty token may have a null data pointer, which RapidJSON rejects.
Value name_ref(std::string_view token) {
  return token.empty() ? Value(rapidjson::StringRef("", 0))
                       : Value(rapidjson::StringRef(token.data(), static_cast<rapidjson::SizeType>(token.size())));
}

Value* step(Value* cur, std::string_view token) {
  if (cur->IsObject()) {
    auto it = cur->FindMember(name_ref(token));
    return it == cur->MemberEnd() ? nullptr : &it->value;
  }
  if (cur->IsArray()) {
    auto idx = parse_index(token);
    if (!idx || *idx >= cur->Size()) return nullptr;
    return &(*cur)[*idx];
  }
  return nullptr;
}

// The first `count` tokens of `pointer`, re-escaped: where a set() stopped, for its error.
std::string walked_prefix(std::string_view pointer, size_t count) {
  if (count == 0) return "/";
  std::string out;
  PointerTokens walk(pointer);
  std::string_view token;
  for (size_t i = 0; i < count && walk.next(token); ++i) {
    out += '/';
    out += escape_pointer_token(token);
  }
  return out;
}

}  // namespace

Value* find(Value& root, std::string_view pointer) {
  PointerTokens walk(pointer);
  if (!walk.valid()) return nullptr;
  Value* cur = &root;
  std::string_view token;
  while (walk.next(token)) {
    cur = step(cur, token);
    if (!cur) return nullptr;
  }
  return cur;
}

const Value* find(const Value& root, std::string_view pointer) {
  return find(const_cast<Value&>(root), pointer);
}

std::optional<std::string_view> get_string(const Value& root, std::string_view pointer) {
  const Value* v = find(root, pointer);
  if (!v || !v->IsString()) return std::nullopt;
  return std::string_view(v->GetString(), v->GetStringLength());
}

std::string string_at(const Value& root, std::string_view pointer) {
  return std::string(get_string(root, pointer).value_or(std::string_view{}));
}

std::vector<std::string> strings_at(const Value& root, std::string_view pointer) {
  std::vector<std::string> out;
  const Value* v = find(root, pointer);
  if (v == nullptr || !v->IsArray()) return out;
  for (const Value& s : v->GetArray()) {
    if (s.IsString()) out.emplace_back(view(s));
  }
  return out;
}

std::optional<int64_t> get_int(const Value& root, std::string_view pointer) {
  const Value* v = find(root, pointer);
  if (!v || !v->IsInt64()) return std::nullopt;
  return v->GetInt64();
}

std::optional<double> get_number(const Value& root, std::string_view pointer) {
  const Value* v = find(root, pointer);
  if (!v || !v->IsNumber()) return std::nullopt;
  return v->GetDouble();
}

std::optional<bool> get_bool(const Value& root, std::string_view pointer) {
  const Value* v = find(root, pointer);
  if (!v || !v->IsBool()) return std::nullopt;
  return v->GetBool();
}

Status set(Document& doc, std::string_view pointer, Value value) {
  PointerTokens walk(pointer);
  if (!walk.valid()) return fail(fmt::format("invalid JSON pointer '{}': must start with '/'", pointer));
  if (walk.at_end()) {
    doc.root() = std::move(value);
    return {};
  }
  Value* cur = &doc.root();
  if (cur->IsNull()) cur->SetObject();
  std::string_view t;
  for (size_t walked = 0; walk.next(t); ++walked) {
    const bool last = walk.at_end();
    if (cur->IsObject()) {
      auto it = cur->FindMember(name_ref(t));
      if (it == cur->MemberEnd()) {
        cur->AddMember(str(t, doc.alloc()), last ? Value() : Value(rapidjson::kObjectType), doc.alloc());
        it = cur->MemberEnd() - 1;
      }
      if (last) {
        it->value = std::move(value);
        return {};
      }
      cur = &it->value;
    } else if (cur->IsArray()) {
      auto idx = parse_index(t);
      if (!idx || *idx >= cur->Size())
        return fail(fmt::format("{}: array index '{}' out of range", walked_prefix(pointer, walked), t));
      if (last) {
        (*cur)[*idx] = std::move(value);
        return {};
      }
      cur = &(*cur)[*idx];
    } else {
      return fail(fmt::format("{}: is not an object or array", walked_prefix(pointer, walked)));
    }
    if (cur->IsNull()) cur->SetObject();
  }
  return {};
}

Status set_string(Document& doc, std::string_view pointer, std::string_view s) {
  return set(doc, pointer, str(s, doc.alloc()));
}
Status set_int(Document& doc, std::string_view pointer, int64_t n) { return set(doc, pointer, Value(n)); }
Status set_bool(Document& doc, std::string_view pointer, bool b) { return set(doc, pointer, Value(b)); }

bool remove(Document& doc, std::string_view pointer) {
  auto slash = pointer.rfind('/');
  if (slash == std::string_view::npos) return false;
  Value* parent = find(doc.root(), pointer.substr(0, slash));
  if (!parent) return false;
  PointerTokens walk(pointer.substr(slash));
  std::string_view t;
  if (!walk.next(t)) return false;
  if (parent->IsObject()) return parent->RemoveMember(name_ref(t));
  if (parent->IsArray()) {
    auto idx = parse_index(t);
    if (!idx || *idx >= parent->Size()) return false;
    parent->Erase(parent->Begin() + *idx);
    return true;
  }
  return false;
}

}  // namespace unitrain::json

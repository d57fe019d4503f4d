// Internal to core/json: the SAX filter behind Document::parse(text, mask) and
// Document::project(value, mask). It sits between an event source (RapidJSON's Reader, or a
// value's Accept) and the document being built, and passes on only what the mask keeps. An
// object or array under a mask is opened downstream only once something inside it is kept, so
// what the mask empties leaves no trace, and no key is sent before its value is known not to be
// dropped (a null inside braces).
#pragma once

#include <cstddef>
#include <memory_resource>
#include <string>
#include <vector>

#include <rapidjson/rapidjson.h>

#include "core/json/field_mask.h"

namespace unitrain::json::detail {

template <class Sink>
class MaskFilter {
 public:
  using Node = FieldMask::Node;
  using SizeType = rapidjson::SizeType;

  // Room for the depth and the pending keys of a Kubernetes object, inside the filter (which
  // lives in the frame of its parse): a parse allocates nothing for them unless it goes deeper.
  MaskFilter(Sink& out, const Node& root) : out_(out), root_(root) {
    frames_.reserve(16);
    arrays_.reserve(16);
    keys_.reserve(128);
  }
  MaskFilter(const MaskFilter&) = delete;
  MaskFilter& operator=(const MaskFilter&) = delete;

  bool Null() { return scalar(true, [&] { return out_.Null(); }); }
  bool Bool(bool b) { return scalar(false, [&] { return out_.Bool(b); }); }
  bool Int(int i) { return scalar(false, [&] { return out_.Int(i); }); }
  bool Uint(unsigned u) { return scalar(false, [&] { return out_.Uint(u); }); }
  bool Int64(int64_t i) { return scalar(false, [&] { return out_.Int64(i); }); }
  bool Uint64(uint64_t u) { return scalar(false, [&] { return out_.Uint64(u); }); }
  bool Double(double d) { return scalar(false, [&] { return out_.Double(d); }); }
  // Strings are always copied: the source's buffer (a parse buffer, a document that goes away)
  // does not outlive the event.
  bool String(const char* s, SizeType n, bool) { return scalar(false, [&] { return out_.String(s, n, true); }); }

  bool Key(const char* s, SizeType n, bool) {
    if (skip_ > 0) return true;
    Frame& top = frames_.back();
    if (top.node == nullptr) return out_.Key(s, n, true);  // inside a value kept whole
    const std::string_view name(s, n);
    const FieldMask::Member* m = top.node->find(name);
    if (m != nullptr ? m->dropped : !top.node->others) {
      skip_next_ = true;
      return true;
    }
    next_ = m != nullptr ? m->inner.get() : nullptr;
    pending_ = keys_.size();
    keys_.append(name);
    return true;
  }

  bool StartObject() { return start(false); }
  bool StartArray() { return start(true); }
  bool EndObject(SizeType) { return end(false); }
  bool EndArray(SizeType) { return end(true); }

 private:
  struct Frame {
    const Node* node;   // the mask of its members (object) or of its object elements (array); null: kept whole
    bool opened;        // sent downstream
    bool keyed;         // a member of an object: its key is keys_[key_at, key_end)
    size_t key_at = 0, key_end = 0;
    SizeType count = 0;  // members / elements sent downstream
  };

  // A value where the mask decides: at the top, as an object member or as an array element.
  enum class Place { Root, Member, Element, Whole };
  Place place() const {
    if (frames_.empty()) return Place::Root;
    const Frame& top = frames_.back();
    if (top.node == nullptr) return Place::Whole;
    return array_top() ? Place::Element : Place::Member;
  }
  bool array_top() const { return !arrays_.empty() && arrays_.back(); }

  template <class Send>
  bool scalar(bool is_null, Send send) {
    if (skip_ > 0) return true;
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    switch (place()) {
      case Place::Root:
        return send();
      case Place::Whole:
        ++frames_.back().count;
        return send();
      case Place::Element:
        if (!open_all()) return false;
        ++frames_.back().count;
        return send();
      case Place::Member: {
        const size_t at = pending_;
        if (is_null) {
          keys_.resize(at);
          return true;
        }
        if (!open_all()) return false;
        bool ok = out_.Key(keys_.data() + at, static_cast<SizeType>(keys_.size() - at), true);
        keys_.resize(at);
        ++frames_.back().count;
        return ok && send();
      }
    }
    return true;
  }

  bool start(bool array) {
    if (skip_ > 0 || skip_next_) {
      skip_next_ = false;
      ++skip_;
      return true;
    }
    const Place p = place();
    if (p == Place::Root) {
      // The top-level value: an object (or array) the mask applies to, sent at once.
      frames_.push_back(Frame{&root_, true, false});
      arrays_.push_back(array);
      return array ? out_.StartArray() : out_.StartObject();
    }
    if (p == Place::Whole) {
      ++frames_.back().count;
      frames_.push_back(Frame{nullptr, true, false});
      arrays_.push_back(array);
      return array ? out_.StartArray() : out_.StartObject();
    }
    if (p == Place::Element) {
      // An element of a masked array: objects get the array's mask, nested arrays pass it on.
      frames_.push_back(Frame{frames_.back().node, false, false});
      arrays_.push_back(array);
      return true;
    }
    // A member: kept whole, or masked and opened once something inside is kept.
    const size_t at = pending_;
    if (next_ == nullptr) {
      if (!open_all()) return false;
      const bool ok = out_.Key(keys_.data() + at, static_cast<SizeType>(keys_.size() - at), true);
      keys_.resize(at);
      ++frames_.back().count;
      frames_.push_back(Frame{nullptr, true, false});
      arrays_.push_back(array);
      return ok && (array ? out_.StartArray() : out_.StartObject());
    }
    frames_.push_back(Frame{next_, false, true, at, keys_.size()});
    arrays_.push_back(array);
    return true;
  }

  bool end(bool array) {
    if (skip_ > 0) {
      --skip_;
      return true;
    }
    Frame f = frames_.back();
    frames_.pop_back();
    arrays_.pop_back();
    if (f.keyed) keys_.resize(f.key_at);
    if (!f.opened) return true;  // nothing inside was kept: the container goes too
    return array ? out_.EndArray(f.count) : out_.EndObject(f.count);
  }

  // Sends the containers (and their keys) that were waiting for a first kept value.
  bool open_all() {
    size_t first = frames_.size();
    while (first > 0 && !frames_[first - 1].opened) --first;
    for (size_t i = first; i < frames_.size(); ++i) {
      Frame& f = frames_[i];
      if (f.keyed && !out_.Key(keys_.data() + f.key_at, static_cast<SizeType>(f.key_end - f.key_at), true))
        return false;
      if (!(arrays_[i] ? out_.StartArray() : out_.StartObject())) return false;
      f.opened = true;
      ++frames_[i - 1].count;
    }
    return true;
  }

  Sink& out_;
  const Node& root_;
  // Backs the three stacks below; past it they grow on the heap.
  alignas(std::max_align_t) unsigned char scratch_[1024];
  std::pmr::monotonic_buffer_resource scratch_resource_{scratch_, sizeof scratch_};
  std::pmr::vector<Frame> frames_{&scratch_resource_};
  std::pmr::vector<bool> arrays_{std::pmr::polymorphic_allocator<bool>(&scratch_resource_)};  // per frame: an array
  std::pmr::string keys_{&scratch_resource_};          // keys of frames not yet sent, then the pending member's key
  size_t pending_ = 0;        // where the pending member's key starts in keys_
  const Node* next_ = nullptr;  // the mask of the pending member (null: whole)
  bool skip_next_ = false;    // the pending member is not kept
  int skip_ = 0;              // depth inside a value that is not kept
};

}  // namespace unitrain::json::detail

// Which members of a JSON object to keep: a projection, as a tree of member names.
//
//   apiVersion,kind,metadata{name,labels,ownerReferences{uid,controller}},status{phase}
//
// A member named alone is kept whole. A member followed by braces keeps only the named members
// of its object, or of each object in its array. `*` keeps every member the braces do not name,
// and `!name` leaves one out: "*,metadata{*,!managedFields}" is the whole object but
// metadata.managedFields. Inside braces, a member whose value is null is left out, and so is an
// object or array the mask leaves empty (to Kubernetes' decoders, missing and empty are the same).
//
// Document::parse(text, mask) builds only what the mask keeps in one streaming pass (the rest of
// the text is read and checked but never built), Document::project(value, mask) copies it out of
// a document. Caches use them to hold the few fields their controllers read.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/result.h"

namespace unitrain::json {

class FieldMask {
 public:
  struct Node;
  struct Member {
    std::string name;
    bool dropped = false;               // `!name`
    std::shared_ptr<const Node> inner;  // null: kept whole
  };
  struct Node {
    bool others = false;          // `*`: members not named are kept whole
    std::vector<Member> members;  // sorted by name
    const Member* find(std::string_view name) const;
  };

  // Names may contain any character but , { } ! * and whitespace; a backslash escapes one.
  // Errors name the position: "field mask 'a{b': position 3: '}' expected".
  static Result<FieldMask> parse(std::string_view text);
  // The mask that keeps no member (there is no text for it): for a reader that wants nothing.
  static FieldMask nothing();
  bool keeps_nothing() const { return !root_->others && root_->members.empty(); }

  // Keeps whatever either mask keeps.
  FieldMask merged(const FieldMask& other) const;
  // The mask "name{<this>}": this mask applied to member `name` of an enclosing object.
  FieldMask under(std::string_view name) const;

  // The canonical text form (members sorted); parse(to_string()) gives an equal mask.
  std::string to_string() const;
  friend bool operator==(const FieldMask& a, const FieldMask& b) { return a.to_string() == b.to_string(); }

  const Node& root() const { return *root_; }

 private:
  explicit FieldMask(std::shared_ptr<const Node> root) : root_(std::move(root)) {}
  std::shared_ptr<const Node> root_;
};

}  // namespace unitrain::json

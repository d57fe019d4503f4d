// PassKey<Owner>: a constructor parameter only Owner can create.
//
// A class whose objects must come from its factory (create() checks inputs and returns a Result)
// makes its constructor public so std::make_unique/std::make_shared can call it, and takes a
// PassKey<Owner> first: code outside Owner cannot name a value of that type, so it still cannot
// construct the class directly, and no factory needs a raw `new`.
#pragma once

namespace unitrain {

template <class Owner>
class PassKey {
  friend Owner;
  PassKey() = default;  // not an aggregate (C++20): `PassKey<X>{}` outside X does not compile
};

}  // namespace unitrain

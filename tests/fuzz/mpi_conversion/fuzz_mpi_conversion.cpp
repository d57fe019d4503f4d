// MPIJob conversion over arbitrary objects. The first input byte picks the version to convert to;
// the rest is the object (JSON). Invariants: conversion never crashes; a converted object has the
// desired apiVersion and kind MPIJob; an object already at the desired version comes back
// unchanged; and converting back gives a byte-identical spec (the round trip the conversion
// promises, through the annotation that carries the fields one version lacks).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "frameworks/mpi/conversion/conversion.h"
#include "tests/fuzz/invariant.h"

namespace json = unitrain::json;
namespace conversion = unitrain::frameworks::mpi::conversion;
using unitrain::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view to = (data[0] & 1) != 0 ? "kubeflow.org/v2beta1" : "kubeflow.org/v1";
  auto object = json::Document::parse(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  if (!object) return 0;
  auto converted = conversion::convert(object->root(), to);
  if (!converted) {
    require(!converted.error().message.empty());
    return 0;
  }
  require(json::get_string(converted->root(), "/apiVersion") == to);
  require(json::get_string(converted->root(), "/kind") == std::string_view("MPIJob"));
  const auto from = json::get_string(object->root(), "/apiVersion");
  require(from.has_value());
  if (*from == to) {
    require(json::equal(converted->root(), object->root()));
    return 0;
  }
  auto back = conversion::convert(converted->root(), *from);
  require(back.has_value());
  const json::Value* spec = json::find(object->root(), "/spec");
  const json::Value* spec_back = json::find(back->root(), "/spec");
  require((spec == nullptr) == (spec_back == nullptr));
  if (spec != nullptr) require(json::dump(*spec) == json::dump(*spec_back));
  return 0;
}

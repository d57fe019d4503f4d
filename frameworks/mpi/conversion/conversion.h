// MPIJob conversion between kubeflow.org/v1 (training-operator) and kubeflow.org/v2beta1
// (mpi-operator), for one CRD serving both versions. Pure JSON, no API calls.
//
// The two specs share slotsPerWorker, runPolicy and mpiReplicaSpecs (replica specs, run policy and
// status have the same field names). Every other spec field exists in one version only; converting
// moves such fields into an annotation on the converted object, and converting back puts them
// where they were, so v1 -> v2beta1 -> v1 (and v2beta1 -> v1 -> v2beta1) give a byte-identical spec.
#pragma once

#include <string_view>

#include "core/base/result.h"
#include "core/framework/registry.h"
#include "core/json/json.h"

namespace unitrain::frameworks::mpi::conversion {

// On a v2beta1 object: the v1-only spec fields of the v1 object it came from. On a v1 object:
// the v2beta1-only spec fields. Value: {"order":[spec keys as written],"fields":{...}}.
inline constexpr std::string_view kV1FieldsAnnotation = "conversion.unitrain.io/mpijob-v1-fields";
inline constexpr std::string_view kV2beta1FieldsAnnotation = "conversion.unitrain.io/mpijob-v2beta1-fields";

// Converts an MPIJob (any of the two versions) to `to_api_version` ("kubeflow.org/v1" or
// "kubeflow.org/v2beta1"); an object already in that version is returned unchanged.
Result<json::Document> convert(const json::Value& object, std::string_view to_api_version);

// Registers `convert` for kind MPIJob of kubeflow.org with the framework registry, so the
// operator's /convert endpoint serves it whichever MPI modules are enabled.
Status register_mpi_conversion(framework::Registry& registry);

}  // namespace unitrain::frameworks::mpi::conversion

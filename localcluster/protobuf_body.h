// Kubernetes protobuf request bodies (application/vnd.kubernetes.protobuf), which kubectl's
// typed generators (`kubectl create configmap|secret|namespace|...`) and client-go's typed
// clients send: the "k8s\0" envelope (a runtime.Unknown carrying apiVersion, kind and the raw
// message), decoded by the generated field tables (protobuf_tables.h) into the JSON the rest of
// the server works with (built-in kinds and CustomResourceDefinitions). Custom resources have no
// protobuf form (415, as kube-apiserver answers).
#pragma once

#include <string_view>

#include "core/json/json.h"
#include "localcluster/api_errors.h"

namespace unitrain::localcluster {

inline constexpr std::string_view kProtobufMediaType = "application/vnd.kubernetes.protobuf";

// The object in an enveloped body, as JSON with apiVersion and kind first. A body that does not
// decode is a 400 naming the cause; a kind without a protobuf message a 415.
StoreResult<json::Document> decode_protobuf_object(std::string_view body);

}  // namespace unitrain::localcluster

// Keeps the webhook configurations an administrator installed (manifests/overlays/mpi-both) in
// line with what this operator serves: a module that is not enabled has no endpoint here, and a
// hook the API server still calls for it would fail every write of its kind ("failed calling
// webhook"). The operator's own hooks (named "*.training-operator.kubeflow.org") are therefore
// exactly the served ones: unserved hooks are dropped, served hooks that are missing are added
// with the client config of the hooks already there; hooks of others are left alone.
#pragma once

#include "core/base/result.h"
#include "core/json/json.h"
#include "core/kube/client.h"
#include "core/webhook/handler.h"

namespace unitrain::webhook {

inline constexpr std::string_view kOwnHookSuffix = ".training-operator.kubeflow.org";

// The `webhooks` array `configuration` (a {Validating,Mutating}WebhookConfiguration of `type`)
// should hold; equal to its current one when nothing needs to change. A missing hook's client
// config is modelled on the first of our hooks present (service or url, caBundle), else on
// `fallback_client_config`.
json::Document synced_webhooks(const json::Value& configuration, const Handler& handler, WebhookType type,
                               const json::Value& fallback_client_config);

// Reads both configurations (kValidatingConfigurationName, kMutatingConfigurationName) and writes
// the ones whose hooks differ from synced_webhooks(). A configuration that does not exist is left
// missing: without one the cluster runs no webhooks of ours at all.
Status sync_webhook_configurations(kube::Client& client, const Handler& handler, const json::Value& fallback_client_config);

}  // namespace unitrain::webhook

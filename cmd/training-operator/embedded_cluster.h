// --embedded-cluster: a local cluster (API server, store, scheduler, simulated kubelet, garbage
// collector, Job controller) in the operator's process, for users without a cluster. It serves
// before the manager runs (the API clients need its address); as the manager's first runnable it
// is stopped last. Its setup step, run after the webhook server, registers the webhook
// configurations, installs the enabled frameworks' CRDs and prints "kubeconfig <path>" on stdout.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cmd/training-operator/flags.h"
#include "cmd/training-operator/webhooks.h"
#include "core/base/passkey.h"
#include "core/base/result.h"
#include "core/framework/registry.h"
#include "core/kube/client.h"
#include "core/kube/config.h"
#include "core/manager/manager.h"
#include "localcluster/local_cluster.h"

namespace unitrain::operator_cmd {

class EmbeddedCluster final : public manager::Runnable {
 public:
  // Starts serving on --embedded-cluster's address and writes the kubeconfig (--kubeconfig-out).
  static Result<std::unique_ptr<EmbeddedCluster>> launch(const Flags& flags);

  // The connection the kubeconfig describes.
  Result<kube::RestConfig> rest_config() const;

  Status start(std::stop_token) override { return {}; }  // serving since launch()
  void stop() override { cluster_->stop(); }

  // The setup step: with `webhooks` (null under --disable-webhooks) its configurations point the
  // API server at them, and CRDs served in two versions convert through them.
  std::unique_ptr<manager::Runnable> setup(kube::Client& client, const framework::Registry& registry, const Flags& flags,
                                           const OperatorWebhooks* webhooks) const;

  // Only launch() can make the key; public so std::make_unique can call it.
  EmbeddedCluster(PassKey<EmbeddedCluster>, std::unique_ptr<localcluster::LocalCluster> cluster)
      : cluster_(std::move(cluster)) {}

 private:
  std::unique_ptr<localcluster::LocalCluster> cluster_;
};

// One CRD per (group, plural) of the enabled modules, from `dir`. A version-specific file
// "<group>_<plural>_<version>.yaml" is preferred when one module serves the CRD; otherwise
// "<group>_<plural>.yaml" is trimmed to the enabled modules' versions. Serving two versions needs
// the conversion webhook: `convert_url` ("https://127.0.0.1:PORT/convert") and `ca_cert`. Waits
// until each CRD serves (giving up when `stopping` is requested).
Status install_crds(kube::Client& client, const std::string& dir,
                    const std::vector<const framework::Registration*>& enabled, const std::string& convert_url,
                    const std::string& ca_cert, std::stop_token stopping);

}  // namespace unitrain::operator_cmd

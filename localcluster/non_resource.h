// Everything on the API server that is not a resource: health probes, /version, /metrics,
// discovery (/api, /apis, per group and version, aggregated), OpenAPI v3, and the local
// cluster's own /unitrain/faults and /unitrain/restart.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "localcluster/faults.h"
#include "localcluster/http_message.h"
#include "localcluster/metrics.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

struct NonResourceContext {
  const Store& store;
  const RequestMetrics& metrics;
  std::string git_version;      // what /version reports
  std::string server_address;   // host:port, for /api's serverAddressByClientCIDRs
};

// GET on a non-resource path (`segments` decoded); 404 for unknown paths, 405 for other methods.
HttpReply serve_non_resource(const HttpRequest& req, const std::vector<std::string>& segments,
                             const NonResourceContext& context);

// /unitrain/faults: GET shows the configuration and the counts of faults injected; PUT or POST
// replaces it. 404 without an injector.
HttpReply serve_faults_admin(const HttpRequest& req, FaultInjector* faults);
// /unitrain/restart: 202 to a POST when a restart can be requested (`available`), which the
// caller asks for once the reply is written.
HttpReply serve_restart_admin(const HttpRequest& req, bool available);

}  // namespace unitrain::localcluster

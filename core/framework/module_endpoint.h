// An HTTPS endpoint a module serves next to the webhooks (Kubeflow Trainer's status server): on
// every replica, leader or not, with the webhook certificate, on a port of its own. The operator
// owns the transport; the module answers requests and may call the API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace unitrain::kube {
class Client;
}

namespace unitrain::framework {

struct EndpointRequest {
  std::string_view method;         // "POST"
  std::string_view path;           // without the query
  std::string_view authorization;  // the Authorization header, "" when absent
  std::string_view body;
};

struct EndpointReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

class ModuleEndpoint {
 public:
  virtual ~ModuleEndpoint() = default;
  // For logs and messages: "status server".
  virtual std::string_view endpoint_name() const = 0;
  // The flag that sets the port, for messages ("--status-server-port").
  virtual std::string_view port_flag() const = 0;
  virtual uint16_t port() const = 0;  // 0: the kernel picks one
  // Called on the server's thread for every request; `client` is the operator's.
  virtual EndpointReply serve(const EndpointRequest& request, kube::Client& client) const = 0;
};

}  // namespace unitrain::framework

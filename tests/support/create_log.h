#pragma once
// A test client that records every create a controller makes, in order: a Client::create_all as
// one line ("pods: a b c", or "services: a b; pods: a b" for one of several resources), a lone
// create as "create pods/a". What it records tells a pipelined
// exchange from a run of single requests.

#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/api/meta.h"
#include "tests/support/forwarding_client.h"

namespace unitrain::testing {

class CreateLog : public ForwardingClient {
 public:
  using ForwardingClient::ForwardingClient;

  kube::ApiResult<json::Document> create(const kube::GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                         const kube::WriteOptions& opts = {}) override {
    note(fmt::format("create {}/{}", r.resource, api::name_of(obj)));
    return inner_.create(r, ns, obj, opts);
  }
  std::vector<kube::CreateOutcome> create_all(std::span<const kube::CreateRequest> creates,
                                              const kube::WriteOptions& opts = {}) override {
    std::string line;
    for (size_t i = 0; i < creates.size(); ++i) {
      if (i == 0 || !(*creates[i].resource == *creates[i - 1].resource))
        line += (i == 0 ? "" : "; ") + creates[i].resource->resource + ":";
      line += " " + std::string(api::name_of(*creates[i].object));
    }
    note(std::move(line));
    return send_all(creates, opts);
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }

 protected:
  // How a recorded create_all reaches the server; a test may answer some creates itself.
  virtual std::vector<kube::CreateOutcome> send_all(std::span<const kube::CreateRequest> creates,
                                                    const kube::WriteOptions& opts) {
    return inner_.create_all(creates, opts);
  }

 private:
  void note(std::string line) {
    std::lock_guard lock(mu_);
    lines_.push_back(std::move(line));
  }
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

}  // namespace unitrain::testing

#pragma once
// A test client that records every create a controller makes, in order: a Client::create_all as
// one line ("pods: a b c"), a lone create as "create pods/a". What it records tells a pipelined
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
  std::vector<kube::CreateOutcome> create_all(const kube::GroupVersionResource& r, std::span<const json::Document> objects,
                                              const kube::WriteOptions& opts = {}) override {
    std::string line = r.resource + ":";
    for (const auto& o : objects) line += " " + std::string(api::name_of(o.root()));
    note(std::move(line));
    return send_all(r, objects, opts);
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }

 protected:
  // How a recorded create_all reaches the server; a test may answer some creates itself.
  virtual std::vector<kube::CreateOutcome> send_all(const kube::GroupVersionResource& r,
                                                    std::span<const json::Document> objects,
                                                    const kube::WriteOptions& opts) {
    return inner_.create_all(r, objects, opts);
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

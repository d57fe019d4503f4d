#pragma once
// A kube::Client that passes every call to another one: the base of the test clients that change
// one call (refuse it, hold it, count it) in front of the fake or a real API server.

#include <memory>
#include <string_view>

#include "core/json/json.h"
#include "core/kube/client.h"

namespace unitrain::testing {

class ForwardingClient : public kube::Client {
 public:
  explicit ForwardingClient(kube::Client& inner) : inner_(inner) {}

  kube::ApiResult<json::Document> get(const kube::GroupVersionResource& r, std::string_view ns,
                                      std::string_view name) override {
    return inner_.get(r, ns, name);
  }
  kube::ApiResult<json::Document> list(const kube::GroupVersionResource& r, std::string_view ns,
                                       const kube::ListOptions& opts) override {
    return inner_.list(r, ns, opts);
  }
  kube::ApiResult<json::Document> create(const kube::GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                         const kube::WriteOptions& opts = {}) override {
    return inner_.create(r, ns, obj, opts);
  }
  kube::ApiResult<json::Document> update(const kube::GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                         const kube::WriteOptions& opts = {}) override {
    return inner_.update(r, ns, obj, opts);
  }
  kube::ApiResult<json::Document> update_status(const kube::GroupVersionResource& r, std::string_view ns,
                                                const json::Value& obj, const kube::WriteOptions& opts = {}) override {
    return inner_.update_status(r, ns, obj, opts);
  }
  kube::ApiResult<json::Document> patch(const kube::GroupVersionResource& r, std::string_view ns, std::string_view name,
                                        kube::PatchType type, std::string_view body, const kube::PatchOptions& opts = {},
                                        std::string_view subresource = {}) override {
    return inner_.patch(r, ns, name, type, body, opts, subresource);
  }
  kube::ApiResult<json::Document> remove(const kube::GroupVersionResource& r, std::string_view ns, std::string_view name,
                                         const kube::DeleteOptions& opts = {}) override {
    return inner_.remove(r, ns, name, opts);
  }
  kube::ApiResult<json::Document> delete_collection(const kube::GroupVersionResource& r, std::string_view ns,
                                                    const kube::ListOptions& selector,
                                                    const kube::DeleteOptions& opts = {}) override {
    return inner_.delete_collection(r, ns, selector, opts);
  }
  kube::ApiResult<std::unique_ptr<kube::WatchStream>> watch(const kube::GroupVersionResource& r, std::string_view ns,
                                                            const kube::WatchOptions& opts) override {
    return inner_.watch(r, ns, opts);
  }

 protected:
  kube::Client& inner_;
};

}  // namespace unitrain::testing

// A kube::Client decorator that counts requests by HTTP code and method for
// rest_client_requests_total. Successful calls count as the code the API returns for that verb
// (201 for create, 200 otherwise) because the Client interface does not carry the code of a
// success; failures use the ApiError's code, or "<error>" (as client-go does) when none arrived.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "core/kube/client.h"

namespace unitrain::operator_cmd {

class CountingClient final : public kube::Client {
 public:
  explicit CountingClient(kube::Client& inner) : inner_(inner) {}

  // {code, method} -> requests.
  std::map<std::pair<std::string, std::string>, uint64_t> counts() const {
    std::lock_guard lock(mu_);
    return counts_;
  }

  kube::ApiResult<json::Document> get(const kube::GroupVersionResource& r, std::string_view ns,
                                      std::string_view name) override {
    return record("GET", 200, inner_.get(r, ns, name));
  }
  kube::ApiResult<json::Document> list(const kube::GroupVersionResource& r, std::string_view ns,
                                       const kube::ListOptions& opts) override {
    return record("GET", 200, inner_.list(r, ns, opts));
  }
  kube::ApiResult<json::Document> create(const kube::GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                         const kube::WriteOptions& opts = {}) override {
    return record("POST", 201, inner_.create(r, ns, obj, opts));
  }
  kube::ApiResult<json::Document> update(const kube::GroupVersionResource& r, std::string_view ns, const json::Value& obj,
                                         const kube::WriteOptions& opts = {}) override {
    return record("PUT", 200, inner_.update(r, ns, obj, opts));
  }
  kube::ApiResult<json::Document> update_status(const kube::GroupVersionResource& r, std::string_view ns,
                                                const json::Value& obj, const kube::WriteOptions& opts = {}) override {
    return record("PUT", 200, inner_.update_status(r, ns, obj, opts));
  }
  kube::ApiResult<json::Document> patch(const kube::GroupVersionResource& r, std::string_view ns,
                                        std::string_view name, kube::PatchType type, std::string_view body,
                                        const kube::PatchOptions& opts = {},
                                        std::string_view subresource = {}) override {
    return record("PATCH", 200, inner_.patch(r, ns, name, type, body, opts, subresource));
  }
  kube::ApiResult<json::Document> remove(const kube::GroupVersionResource& r, std::string_view ns,
                                         std::string_view name, const kube::DeleteOptions& opts = {}) override {
    return record("DELETE", 200, inner_.remove(r, ns, name, opts));
  }
  kube::ApiResult<json::Document> delete_collection(const kube::GroupVersionResource& r, std::string_view ns,
                                                    const kube::ListOptions& selector,
                                                    const kube::DeleteOptions& opts = {}) override {
    return record("DELETE", 200, inner_.delete_collection(r, ns, selector, opts));
  }
  kube::ApiResult<std::unique_ptr<kube::WatchStream>> watch(const kube::GroupVersionResource& r,
                                                            std::string_view ns,
                                                            const kube::WatchOptions& opts) override {
    return record("GET", 200, inner_.watch(r, ns, opts));
  }

 private:
  template <class T>
  kube::ApiResult<T> record(const char* method, int ok_code, kube::ApiResult<T> result) {
    std::string code = result ? std::to_string(ok_code)
                              : (result.error().code ? std::to_string(result.error().code) : "<error>");
    std::lock_guard lock(mu_);
    ++counts_[{std::move(code), method}];
    return result;
  }

  kube::Client& inner_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, uint64_t> counts_;
};

}  // namespace unitrain::operator_cmd

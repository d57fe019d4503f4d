// Admission webhooks as kube-apiserver calls them: MutatingWebhookConfigurations (ordered by
// name, webhooks as listed, reinvoked when a later one changed the object) then
// ValidatingWebhookConfigurations, read from the store on every write; rules, matchPolicy
// Equivalent (through the conversion of the objects to the matched version), object and
// namespace selectors; AdmissionReview v1 requests, patches, warnings, denials and failure
// policies. Where in a write they run is ApiFront's (api_front.h).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "localcluster/conversion.h"
#include "localcluster/object_meta.h"
#include "localcluster/store.h"
#include "localcluster/webhook_client.h"

namespace unitrain::localcluster {

// What a request produced besides its object: admission warnings, sent as Warning headers.
struct CallNotes {
  std::vector<std::string> warnings;
};

enum class Operation { Create, Update, Delete };
const char* operation_name(Operation op);  // "CREATE", "UPDATE", "DELETE"

// One webhook of a Mutating- or ValidatingWebhookConfiguration.
struct Webhook {
  std::string name;
  bool mutating = false;
  json::Document spec;  // the webhook entry of the configuration
  bool fail_closed = true;
  bool equivalent = true;
  bool reinvoke = false;
  std::chrono::seconds timeout{10};
  bool dry_run_safe = false;  // sideEffects None or NoneOnDryRun
};

// Does a rule's resource ("pods", "pods/status", "*", "*/*", "pods/*", "*/status") cover
// resource/subresource?
bool resource_rule_matches(std::string_view rule, std::string_view resource, std::string_view subresource);
// Does one RuleWithOperations match the operation on group/version/resource/subresource?
bool rule_matches(const json::Value& rule, Operation op, const std::string& group, const std::string& version,
                  const std::string& resource, std::string_view subresource, bool namespaced);

// The request being admitted.
struct AdmissionAttributes {
  const ResourceInfo* resource = nullptr;
  std::string subresource;
  std::string ns;
  std::string name;
  Operation op = Operation::Create;
  std::string options_kind;  // CreateOptions, UpdateOptions, PatchOptions, DeleteOptions
  json::Document options;    // extra fields of the options (propagationPolicy, fieldManager)
  bool dry_run = false;
};

AdmissionAttributes admission_attributes(const ResourceInfo& r, std::string_view ns, std::string_view name,
                                         std::string_view subresource, Operation op, const char* options_kind,
                                         bool dry_run);

// kube-apiserver never sends webhook configurations to webhooks: a broken webhook must not lock
// out its own repair.
bool is_webhook_configuration(const ResourceInfo& r);

struct MatchingWebhooks {
  std::vector<Webhook> mutating;
  std::vector<Webhook> validating;
  bool empty() const { return mutating.empty() && validating.empty(); }
};

class AdmissionWebhooks {
 public:
  AdmissionWebhooks(ConvertingStore& versions, WebhookCaller& caller, UuidSource& uuids);

  // The webhooks whose rules could apply to this request (selectors are checked per call).
  MatchingWebhooks matching(const AdmissionAttributes& at);
  // Mutating webhooks in order; a patch changes `object` in place. DELETE passes no objects.
  StoreResult<void> mutate(const std::vector<Webhook>& hooks, const AdmissionAttributes& at, json::Document* object,
                           const json::Document* old_object, CallNotes& notes);
  StoreResult<void> validate(const std::vector<Webhook>& hooks, const AdmissionAttributes& at,
                             const json::Document* object, const json::Document* old_object, CallNotes& notes);

 private:
  std::vector<Webhook> configured(bool mutating);
  // The version of the request's resource a webhook's rules match: the resource itself, or with
  // matchPolicy Equivalent another served version of the same custom resource.
  std::optional<ResourceInfo> matched_resource(const Webhook& h, const AdmissionAttributes& at);
  bool selectors_match(const Webhook& h, const AdmissionAttributes& at, const json::Value* object,
                       const json::Value* old_object);
  json::Document review_request(const AdmissionAttributes& at, const ResourceInfo& matched, const std::string& uid,
                                const json::Value* object, const json::Value* old_object);
  // Calls one webhook about `object` (which a mutating webhook's patch changes in place).
  // Returns whether it was called; errors are denials and (with failurePolicy Fail) call
  // failures.
  StoreResult<bool> call(const Webhook& h, const AdmissionAttributes& at, json::Document* object,
                         const json::Document* old_object, CallNotes& notes, bool* changed);

  ConvertingStore& versions_;
  WebhookCaller& caller_;
  UuidSource& uuids_;
};

}  // namespace unitrain::localcluster

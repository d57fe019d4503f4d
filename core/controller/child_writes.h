// Deletes of one job's children during one reconcile pass, the way every step needs them: a pod
// or replica Service delete raises its expectation first (and lowers it again when no watch event
// will come), records the event the framework's reference operator records, and runs in
// parallel on the controller's write pool where there is more than one. Also the pass's one way
// to record an event and a decision.
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/controller/expectations.h"
#include "core/controller/job_controller.h"
#include "core/controller/pass_log.h"
#include "core/controller/write_pool.h"
#include "core/framework/descriptor.h"
#include "core/framework/plugin.h"
#include "core/kube/client.h"

namespace unitrain::controller {

class ChildWrites {
 public:
  ChildWrites(kube::Client& client, Expectations& expectations, EventSink& events, WritePool* pool,
              const framework::FrameworkPlugin& plugin, bool delete_services_with_pods, const json::Value& job,
              PassLog& log);

  // A Kubernetes event on the job.
  void event(std::string_view type, std::string_view reason, std::string message) const;
  // The event a wording carries, if it carries one (an empty event_type records nothing).
  void event(const framework::CoreWording& wording) const;
  // The event the framework records for what the pass did to a child, if any.
  void child_event(framework::ChildEvent e, const framework::ChildSubject& subject) const;
  PassLog& log() const { return log_; }

  // DELETE with background propagation; NotFound counts as done. `expectation_key` (may be
  // empty) is the pods or services key the informer's delete event lowers.
  std::optional<kube::ApiError> delete_object(const kube::GroupVersionResource& resource, std::string_view name,
                                              std::string_view expectation_key);
  // Deletes `pods` (skipping ones already terminating) and, training-operator style, each one's
  // same-named Service among `services`, in parallel.
  std::optional<kube::ApiError> delete_pods(const std::vector<const json::Value*>& pods,
                                            const std::vector<const json::Value*>& services);
  // A Service this pass already deleted (one goes with its pod, so pruning must not delete it again).
  bool service_deleted(std::string_view name) const;

  // The pods / services expectation key of the replica type `child` (a pod or a replica
  // Service, both labelled with it) belongs to.
  std::string pods_key(const json::Value& child) const;
  std::string services_key(const json::Value& child) const;
  // The value of the descriptor's replica-type label ("worker"), "" when unlabelled.
  std::string replica_type_of(const json::Value& child) const;

 private:
  kube::Client& client_;
  Expectations& expectations_;
  EventSink& events_;
  WritePool* pool_;
  const framework::FrameworkPlugin& plugin_;
  const framework::FrameworkDescriptor& descriptor_;
  bool delete_services_with_pods_;
  PassLog& log_;
  const json::Value& job_;
  std::string ns_, name_;
  mutable std::mutex deleted_mu_;  // deletes run on the write pool
  std::set<std::string, std::less<>> deleted_services_;
};

}  // namespace unitrain::controller

// What the local cluster's scheduler knows of pods, kept up to date from watch events so that a
// scheduling pass costs what changed, not the whole cluster:
//  - the requests bound to each node (non-terminal pods with a nodeName),
//  - each gang group's member counts (total, bound, running, succeeded, failed),
//  - the pending pods (unbound, not deleting, phase Pending, served by this scheduler) in two
//    queues, as kube-scheduler keeps them: "active" (new or changed since the last pass, to try)
//    and "parked" (tried and left unbound). Parked pods go back to active only when something could
//    let them fit: capacity freed on a node (a bound pod ended, left or moved), a node changed, or
//    their gang group changed. Between those events their fit can only get worse, so retrying
//    them would change nothing.
// A pass takes the active pods plus the parked members of their gang groups (a gang binds all or
// nothing), in creation order.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace unitrain::localcluster::controllers {

// Requests in milli-units (cpu millicores, memory milli-bytes, gpus milli), pods as a count.
struct Resources {
  int64_t cpu = 0, mem = 0, gpu = 0, pods = 0;
  Resources& operator+=(const Resources& o);
  Resources& operator-=(const Resources& o);
  bool operator==(const Resources&) const = default;
};

struct GroupStats {
  int64_t total = 0, bound = 0, running = 0, succeeded = 0, failed = 0;
  bool operator==(const GroupStats&) const = default;
};

// The scheduling-relevant facts of one pod.
struct PodFacts {
  std::string ns, name, uid, scheduler, node, phase;
  std::string group;  // gang group key, "" when the pod is not a gang member
  bool deleting = false;
  bool served = false;  // its schedulerName is one this scheduler serves now
  Resources req;
  bool terminal() const { return phase == "Succeeded" || phase == "Failed"; }
  std::string_view scheduler_name() const {
    return scheduler.empty() ? std::string_view("default-scheduler") : std::string_view(scheduler);
  }
};

enum class SchedulingQueue { None, Active, Parked };

struct TrackedPod : PodFacts {
  uint64_t seq = 0;            // creation order: the queue order
  SchedulingQueue queue = SchedulingQueue::None;
  std::string scheduled_cond;  // "status|reason|message" of PodScheduled as last seen or written
};

class SchedulerAccounting {
 public:
  // Adds the pod or replaces its facts (a new uid counts as a new pod, at the end of the queue).
  // Returns the stored state (stable until the pod is erased).
  TrackedPod& upsert(const std::string& key, PodFacts facts);
  void erase(const std::string& key);
  TrackedPod* find(const std::string& key);
  // The scheduler bound the pod (before its watch event confirms it).
  void bind(TrackedPod& pod, const std::string& node);
  // The set of served schedulerNames changed: re-decide every pod's `served` (O(all pods); only
  // when a PodGroup CRD appears).
  template <typename Serves>
  void reclassify(Serves serves) {
    std::vector<std::pair<const std::string*, PodFacts>> changed;
    for (auto& [key, p] : pods_)
      if (bool s = serves(p); s != p.served) {
        PodFacts next = p;
        next.served = s;
        changed.emplace_back(&key, std::move(next));
      }
    for (auto& [key, facts] : changed) upsert(*key, std::move(facts));
  }

  // A node appeared, went or changed what it offers: every parked pod may fit now.
  void capacity_changed() {
    capacity_freed_ = true;
    activate_all();
  }
  // The gang group's object changed (created, deleted, minMember, phase): its parked members retry.
  void group_changed(const std::string& group);

  // The pods to try in this pass, in creation order; they stay pending (parked) until bound.
  std::vector<TrackedPod*> take_work();
  bool has_work() const { return !active_.empty(); }
  // The gang groups whose member counts changed since the last call.
  std::vector<std::string> take_changed_groups();
  // Whether capacity was freed or nodes changed since the last call (Volcano's queued groups may
  // be admitted now).
  bool take_capacity_freed();

  const Resources& used_on(const std::string& node) const;
  GroupStats stats_of(const std::string& group) const;
  size_t pod_count() const { return pods_.size(); }
  size_t active_count() const { return active_.size(); }
  size_t parked_count() const { return parked_.size(); }

 private:
  void update(TrackedPod& p, PodFacts next);
  void account(const TrackedPod& p, int sign);  // adds (+1) or takes away (-1) p's share
  void unlink(TrackedPod& p);                   // p leaves: its share, its queue, its group
  void enqueue(TrackedPod& p, SchedulingQueue q);
  void activate_all();

  std::unordered_map<std::string, TrackedPod> pods_;
  std::map<uint64_t, TrackedPod*> active_, parked_;
  std::unordered_map<std::string, Resources> used_;
  std::unordered_map<std::string, GroupStats> stats_;
  std::unordered_map<std::string, std::map<uint64_t, TrackedPod*>> members_;  // group -> its pods
  std::unordered_set<std::string> changed_groups_;
  bool capacity_freed_ = false;
  uint64_t next_seq_ = 0;
};

}  // namespace unitrain::localcluster::controllers

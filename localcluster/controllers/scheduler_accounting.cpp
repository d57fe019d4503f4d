#include "localcluster/controllers/scheduler_accounting.h"

#include <optional>
#include <utility>

namespace unitrain::localcluster::controllers {

Resources& Resources::operator+=(const Resources& o) {
  cpu += o.cpu;
  mem += o.mem;
  gpu += o.gpu;
  pods += o.pods;
  return *this;
}

Resources& Resources::operator-=(const Resources& o) {
  cpu -= o.cpu;
  mem -= o.mem;
  gpu -= o.gpu;
  pods -= o.pods;
  return *this;
}

namespace {

bool is_pending(const PodFacts& p) {
  return p.node.empty() && !p.deleting && (p.phase.empty() || p.phase == "Pending") && p.served;
}

// Holds a node's resources while the pod runs there.
bool holds_node(const PodFacts& p) { return !p.node.empty() && !p.terminal(); }

// The pod's share of its gang group's counts; none when it has no group or is being deleted.
std::optional<GroupStats> group_share(const PodFacts& p) {
  if (p.group.empty() || p.deleting) return std::nullopt;
  GroupStats s;
  s.total = 1;
  s.bound = !p.node.empty() && p.phase != "Failed";
  s.running = p.phase == "Running";
  s.succeeded = p.phase == "Succeeded";
  s.failed = p.phase == "Failed";
  return s;
}

void add_stats(GroupStats& into, const GroupStats& s, int sign) {
  into.total += sign * s.total;
  into.bound += sign * s.bound;
  into.running += sign * s.running;
  into.succeeded += sign * s.succeeded;
  into.failed += sign * s.failed;
}

}  // namespace

TrackedPod* SchedulerAccounting::find(const std::string& key) {
  auto it = pods_.find(key);
  return it == pods_.end() ? nullptr : &it->second;
}

TrackedPod& SchedulerAccounting::upsert(const std::string& key, PodFacts facts) {
  auto [it, inserted] = pods_.try_emplace(key);
  TrackedPod& p = it->second;
  if (!inserted && p.uid == facts.uid) {
    update(p, std::move(facts));
    return p;
  }
  if (!inserted) {
    unlink(p);
    p = TrackedPod{};
  }
  p.seq = next_seq_++;
  static_cast<PodFacts&>(p) = std::move(facts);
  account(p, +1);
  if (!p.group.empty()) members_[p.group].emplace(p.seq, &p);
  if (group_share(p)) changed_groups_.insert(p.group);
  if (is_pending(p)) enqueue(p, SchedulingQueue::Active);
  return p;
}

void SchedulerAccounting::erase(const std::string& key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) return;
  unlink(it->second);
  pods_.erase(it);
}

void SchedulerAccounting::bind(TrackedPod& pod, const std::string& node) {
  PodFacts next = pod;
  next.node = node;
  update(pod, std::move(next));
}

void SchedulerAccounting::update(TrackedPod& p, PodFacts next) {
  const bool held = holds_node(p);
  const std::string old_node = p.node;
  const std::string old_group = p.group;
  const auto old_share = group_share(p);
  const bool was_pending = is_pending(p);

  account(p, -1);
  if (p.group != next.group && !p.group.empty()) {
    auto m = members_.find(p.group);
    m->second.erase(p.seq);
    if (m->second.empty()) members_.erase(m);
  }
  static_cast<PodFacts&>(p) = std::move(next);
  account(p, +1);
  if (p.group != old_group && !p.group.empty()) members_[p.group].emplace(p.seq, &p);

  const bool freed = held && (!holds_node(p) || p.node != old_node);
  const auto share = group_share(p);
  if (old_group != p.group || old_share != share) {
    if (old_share) changed_groups_.insert(old_group);
    if (share) changed_groups_.insert(p.group);
  }
  const bool now_pending = is_pending(p);
  if (!now_pending)
    enqueue(p, SchedulingQueue::None);
  else if (!was_pending)
    enqueue(p, SchedulingQueue::Active);
  if (freed) {
    capacity_freed_ = true;
    activate_all();
  }
}

void SchedulerAccounting::account(const TrackedPod& p, int sign) {
  if (holds_node(p)) {
    auto u = used_.try_emplace(p.node).first;
    if (sign > 0) {
      u->second += p.req;
    } else {
      u->second -= p.req;
      if (u->second.pods == 0) used_.erase(u);
    }
  }
  if (auto share = group_share(p)) {
    auto s = stats_.try_emplace(p.group).first;
    add_stats(s->second, *share, sign);
    if (s->second.total == 0) stats_.erase(s);
  }
}

void SchedulerAccounting::unlink(TrackedPod& p) {
  if (holds_node(p)) {
    capacity_freed_ = true;
    activate_all();
  }
  if (group_share(p)) changed_groups_.insert(p.group);
  account(p, -1);
  enqueue(p, SchedulingQueue::None);
  if (!p.group.empty()) {
    auto m = members_.find(p.group);
    m->second.erase(p.seq);
    if (m->second.empty()) members_.erase(m);
  }
}

void SchedulerAccounting::enqueue(TrackedPod& p, SchedulingQueue q) {
  if (p.queue == q) return;
  if (p.queue == SchedulingQueue::Active) active_.erase(p.seq);
  if (p.queue == SchedulingQueue::Parked) parked_.erase(p.seq);
  p.queue = q;
  if (q == SchedulingQueue::Active) active_.emplace(p.seq, &p);
  if (q == SchedulingQueue::Parked) parked_.emplace(p.seq, &p);
}

void SchedulerAccounting::activate_all() {
  for (auto& [seq, p] : parked_) p->queue = SchedulingQueue::Active;
  active_.merge(parked_);
}

void SchedulerAccounting::group_changed(const std::string& group) {
  auto m = members_.find(group);
  if (m == members_.end()) return;
  for (auto& [seq, p] : m->second)
    if (p->queue == SchedulingQueue::Parked) enqueue(*p, SchedulingQueue::Active);
}

std::vector<TrackedPod*> SchedulerAccounting::take_work() {
  std::map<uint64_t, TrackedPod*> work;
  work.swap(active_);
  std::unordered_set<std::string_view> groups;
  for (auto& [seq, p] : work)
    if (!p->group.empty()) groups.insert(p->group);
  for (std::string_view g : groups) {
    auto m = members_.find(std::string(g));
    if (m == members_.end()) continue;
    for (auto& [seq, p] : m->second)
      if (p->queue == SchedulingQueue::Parked) work.emplace(seq, p);
  }
  std::vector<TrackedPod*> out;
  out.reserve(work.size());
  for (auto& [seq, p] : work) {
    p->queue = SchedulingQueue::None;  // enqueue() below moves it from wherever it was
    parked_.erase(seq);
    enqueue(*p, SchedulingQueue::Parked);
    out.push_back(p);
  }
  return out;
}

std::vector<std::string> SchedulerAccounting::take_changed_groups() {
  std::vector<std::string> out(changed_groups_.begin(), changed_groups_.end());
  changed_groups_.clear();
  return out;
}

bool SchedulerAccounting::take_capacity_freed() { return std::exchange(capacity_freed_, false); }

const Resources& SchedulerAccounting::used_on(const std::string& node) const {
  static const Resources kNone;
  auto it = used_.find(node);
  return it == used_.end() ? kNone : it->second;
}

GroupStats SchedulerAccounting::stats_of(const std::string& group) const {
  auto it = stats_.find(group);
  return it == stats_.end() ? GroupStats{} : it->second;
}

}  // namespace unitrain::localcluster::controllers

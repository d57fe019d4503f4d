#include <catch2/catch.hpp>

#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "localcluster/controllers/scheduler_accounting.h"

using namespace unitrain::localcluster::controllers;

namespace {

PodFacts pod(std::string name, std::string node = "", std::string phase = "Pending", std::string group = "") {
  PodFacts p;
  p.ns = "ns";
  p.name = name;
  p.uid = "uid-" + name;
  p.node = std::move(node);
  p.phase = std::move(phase);
  p.group = std::move(group);
  p.served = true;
  p.req = Resources{100, 1000, 0, 1};
  return p;
}

std::vector<std::string> names(const std::vector<TrackedPod*>& pods) {
  std::vector<std::string> out;
  for (const auto* p : pods) out.push_back(p->name);
  return out;
}

using Names = std::vector<std::string>;

// The same figures the scheduler used to compute by walking every pod on each pass.
struct FullScan {
  std::map<std::string, Resources> used;
  std::map<std::string, GroupStats> stats;
  std::set<std::string> pending;

  explicit FullScan(const std::map<std::string, PodFacts>& pods) {
    for (const auto& [key, p] : pods) {
      if (!p.node.empty() && !p.terminal()) used[p.node] += p.req;
      if (!p.group.empty() && !p.deleting) {
        GroupStats& s = stats[p.group];
        ++s.total;
        if (!p.node.empty() && p.phase != "Failed") ++s.bound;
        if (p.phase == "Running") ++s.running;
        if (p.phase == "Succeeded") ++s.succeeded;
        if (p.phase == "Failed") ++s.failed;
      }
      if (p.node.empty() && !p.deleting && (p.phase.empty() || p.phase == "Pending") && p.served) pending.insert(key);
    }
  }
};

}  // namespace

TEST_CASE("node usage and group counts follow every change as a full scan computes them", "[scheduler]") {
  std::mt19937 rng(18);
  auto pick = [&](const std::vector<std::string>& from) { return from[rng() % from.size()]; };
  const std::vector<std::string> keys = {"a", "b", "c", "d", "e", "f", "g", "h"};
  const std::vector<std::string> nodes = {"", "", "n1", "n2", "n3"};
  const std::vector<std::string> phases = {"", "Pending", "Running", "Succeeded", "Failed"};
  const std::vector<std::string> groups = {"", "v|ns/g1", "p|ns/g2"};

  SchedulerAccounting acc;
  std::map<std::string, PodFacts> model;
  for (int step = 0; step < 5000; ++step) {
    std::string key = "ns/" + pick(keys);
    int op = static_cast<int>(rng() % 10);
    if (op == 0) {
      acc.erase(key);
      model.erase(key);
    } else if (op == 1 && model.count(key) && model[key].node.empty()) {
      std::string node = pick({"n1", "n2", "n3"});
      acc.bind(*acc.find(key), node);
      model[key].node = node;
    } else if (op == 2) {
      bool served = rng() % 2;
      acc.reclassify([&](const PodFacts& p) { return p.name < "e" || served; });
      for (auto& [k, p] : model) p.served = p.name < "e" || served;
    } else {
      PodFacts f = pod(key.substr(3), pick(nodes), pick(phases), pick(groups));
      f.deleting = rng() % 6 == 0;
      f.served = rng() % 5 != 0;
      f.req.cpu = 100 * (1 + static_cast<int64_t>(rng() % 4));
      if (rng() % 4 == 0) f.uid += "-" + std::to_string(step);  // deleted and recreated under the name
      if (auto it = model.find(key); it != model.end() && it->second.uid == f.uid) f.req = it->second.req;
      acc.upsert(key, f);
      model[key] = f;
    }
    if (rng() % 7 == 0) (void)acc.take_work();

    FullScan expected(model);
    for (const auto& n : {"n1", "n2", "n3"}) {
      INFO("step " << step << " node " << n);
      Resources want = expected.used.count(n) ? expected.used[n] : Resources{};
      REQUIRE(acc.used_on(n) == want);
    }
    for (const auto& g : {"v|ns/g1", "p|ns/g2"}) {
      INFO("step " << step << " group " << g);
      GroupStats want = expected.stats.count(g) ? expected.stats[g] : GroupStats{};
      REQUIRE(acc.stats_of(g) == want);
    }
    REQUIRE(acc.active_count() + acc.parked_count() == expected.pending.size());
    for (const auto& k : expected.pending) REQUIRE(acc.find(k)->queue != SchedulingQueue::None);
    REQUIRE(acc.pod_count() == model.size());
  }
}

TEST_CASE("a pass takes new pending pods in creation order, a pod left unbound is not retried for nothing",
          "[scheduler]") {
  SchedulerAccounting acc;
  acc.upsert("ns/b", pod("b"));
  acc.upsert("ns/a", pod("a"));
  acc.upsert("ns/running", pod("running", "n1", "Running"));
  REQUIRE(names(acc.take_work()) == Names{"b", "a"});
  REQUIRE(acc.parked_count() == 2);

  // Another pod arriving, a status update of a parked pod, a pod starting: none frees capacity.
  acc.upsert("ns/c", pod("c"));
  PodFacts b = pod("b");
  b.phase = "";
  acc.upsert("ns/b", b);
  acc.upsert("ns/other", pod("other", "n2", "Pending"));
  acc.upsert("ns/other", pod("other", "n2", "Running"));
  REQUIRE(names(acc.take_work()) == Names{"c"});
  REQUIRE(acc.take_work().empty());
  REQUIRE_FALSE(acc.take_capacity_freed());
}

TEST_CASE("capacity freed on a node or a node change puts every parked pod back in the queue", "[scheduler]") {
  SchedulerAccounting acc;
  acc.upsert("ns/running", pod("running", "n1", "Running"));
  acc.upsert("ns/waiting", pod("waiting"));
  acc.upsert("ns/later", pod("later"));
  REQUIRE(acc.take_work().size() == 2);

  SECTION("a bound pod ends") {
    acc.upsert("ns/running", pod("running", "n1", "Succeeded"));
    REQUIRE(acc.used_on("n1") == Resources{});
  }
  SECTION("a bound pod is deleted") {
    acc.erase("ns/running");
  }
  SECTION("a bound pod is replaced by a new one of the same name") {
    PodFacts again = pod("running");
    again.uid = "uid-2";
    acc.upsert("ns/running", again);
  }
  SECTION("a node changed") {
    acc.capacity_changed();
  }
  REQUIRE(acc.take_capacity_freed());
  auto work = names(acc.take_work());
  REQUIRE(std::set<std::string>(work.begin(), work.end()).count("waiting"));
  REQUIRE(std::set<std::string>(work.begin(), work.end()).count("later"));
}

TEST_CASE("a gang member arriving brings its group's parked members into the pass, not other pods", "[scheduler]") {
  SchedulerAccounting acc;
  acc.upsert("ns/m0", pod("m0", "", "Pending", "p|ns/gang"));
  acc.upsert("ns/solo", pod("solo"));
  acc.upsert("ns/m1", pod("m1", "", "Pending", "p|ns/gang"));
  REQUIRE(names(acc.take_work()) == Names{"m0", "solo", "m1"});

  acc.upsert("ns/m2", pod("m2", "", "Pending", "p|ns/gang"));
  REQUIRE(names(acc.take_work()) == Names{"m0", "m1", "m2"});

  // The group's object changing (e.g. created, or minMember lowered) retries its members only.
  acc.group_changed("p|ns/gang");
  REQUIRE(names(acc.take_work()) == Names{"m0", "m1", "m2"});
  acc.group_changed("p|ns/other");
  REQUIRE(acc.take_work().empty());
}

TEST_CASE("binding moves a pod out of the queue and onto its node's and group's counts", "[scheduler]") {
  SchedulerAccounting acc;
  acc.upsert("ns/m0", pod("m0", "", "Pending", "v|ns/gang"));
  acc.upsert("ns/m1", pod("m1", "", "Pending", "v|ns/gang"));
  (void)acc.take_changed_groups();
  auto work = acc.take_work();
  acc.bind(*work[0], "n1");
  REQUIRE(acc.used_on("n1") == Resources{100, 1000, 0, 1});
  REQUIRE(acc.stats_of("v|ns/gang") == GroupStats{2, 1, 0, 0, 0});
  REQUIRE(acc.take_changed_groups() == std::vector<std::string>{"v|ns/gang"});
  REQUIRE(acc.parked_count() == 1);
  REQUIRE_FALSE(acc.take_capacity_freed());

  // The watch event confirming the bind changes nothing more.
  acc.upsert("ns/m0", pod("m0", "n1", "Pending", "v|ns/gang"));
  REQUIRE(acc.take_changed_groups().empty());
  REQUIRE(acc.used_on("n1") == Resources{100, 1000, 0, 1});

  // Deleting (deletionTimestamp set) takes a member out of its group's counts, not off its node.
  PodFacts leaving = pod("m0", "n1", "Running", "v|ns/gang");
  leaving.deleting = true;
  acc.upsert("ns/m0", leaving);
  REQUIRE(acc.stats_of("v|ns/gang") == GroupStats{1, 0, 0, 0, 0});
  REQUIRE(acc.used_on("n1") == Resources{100, 1000, 0, 1});
}

TEST_CASE("pods of a scheduler not served wait outside the queue until it is served", "[scheduler]") {
  SchedulerAccounting acc;
  PodFacts v = pod("v");
  v.scheduler = "volcano";
  v.served = false;
  acc.upsert("ns/v", v);
  acc.upsert("ns/d", pod("d"));
  REQUIRE(names(acc.take_work()) == Names{"d"});
  acc.reclassify([](const PodFacts&) { return true; });
  REQUIRE(names(acc.take_work()) == Names{"v"});
}

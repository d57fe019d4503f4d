// The checked-in manifests against the modules: every built-in framework's own CRD is in
// manifests/crds (the same document) and installed by its kustomization, and both the ClusterRole
// and the namespaced Role grant what the core needs on its kind and the rules its registration
// asks for. Nothing here names a kind: adding a module without its manifests fails here.
#include <algorithm>
#include <filesystem>

#include <catch2/catch.hpp>

#include "cmd/training-operator/controllers.h"
#include "cmd/training-operator/frameworks.h"
#include "cmd/training-operator/manifests.h"
#include "core/framework/registry.h"
#include "core/json/json.h"
#include "tests/support/local_cluster.h"

namespace fs = std::filesystem;
using namespace unitrain;

namespace {

const fs::path kManifests = fs::path(UNITRAIN_SOURCE_DIR) / "manifests";

json::Document only_document(const std::string& yaml, const std::string& what) {
  auto docs = json::parse_yaml(yaml);
  INFO(what);
  REQUIRE(docs);
  REQUIRE(docs->size() == 1);
  return std::move((*docs)[0]);
}

std::vector<std::string> strings(const json::Value& rule, std::string_view member) {
  std::vector<std::string> out;
  if (const json::Value* a = json::find(rule, member); a != nullptr && a->IsArray())
    for (const auto& s : a->GetArray()) out.emplace_back(json::view(s));
  return out;
}

bool contains_all(const std::vector<std::string>& have, const std::vector<std::string>& want) {
  return std::all_of(want.begin(), want.end(),
                     [&](const auto& w) { return std::find(have.begin(), have.end(), w) != have.end(); });
}

// Whether one rule of `role` grants `verbs` on every resource of `resources` in `group`.
bool grants(const json::Value& role, const std::string& group, const std::vector<std::string>& resources,
            const std::vector<std::string>& verbs) {
  for (const auto& rule : json::find(role, "/rules")->GetArray())
    if (contains_all(strings(rule, "/apiGroups"), {group}) && contains_all(strings(rule, "/resources"), resources) &&
        contains_all(strings(rule, "/verbs"), verbs))
      return true;
  return false;
}

}  // namespace

TEST_CASE("manifests/crds holds and installs every built-in framework's own CRD") {
  framework::Registry registry;
  REQUIRE(operator_cmd::register_frameworks(registry));
  const auto kustomization = only_document(testing::read_text((kManifests / "crds" / "kustomization.yaml").string()), "kustomization");
  std::vector<std::string> listed_names;
  for (const auto& file : strings(kustomization.root(), "/resources")) {
    const auto crd = only_document(testing::read_text((kManifests / "crds" / file).string()), file);
    listed_names.push_back(json::string_at(crd.root(), "/metadata/name"));
  }
  for (const auto& r : registry.all()) {
    INFO(r.descriptor.name);
    REQUIRE_FALSE(r.crds.empty());
    const auto own = only_document(r.crds.front(), r.descriptor.name + "'s CRD");
    const std::string name = json::string_at(own.root(), "/metadata/name");
    CHECK(name == r.descriptor.plural + "." + r.descriptor.group);
    bool found = false;
    for (const auto& entry : fs::directory_iterator(kManifests / "crds")) {
      if (entry.path().filename() == "kustomization.yaml") continue;
      auto docs = json::parse_yaml(testing::read_text(entry.path().string()));
      if (docs && docs->size() == 1 && (*docs)[0] == own) found = true;
    }
    CHECK(found);
    CHECK(std::find(listed_names.begin(), listed_names.end(), name) != listed_names.end());
  }
}

TEST_CASE("the operator's ClusterRole and Role grant every built-in framework what it needs") {
  framework::Registry registry;
  REQUIRE(operator_cmd::register_frameworks(registry));
  for (const auto& file : {kManifests / "rbac" / "cluster" / "cluster_role.yaml", kManifests / "rbac" / "namespaced" / "role.yaml"}) {
    const auto role = only_document(testing::read_text(file.string()), file.string());
    for (const auto& r : registry.all()) {
      const auto& d = r.descriptor;
      INFO(file.string() << ": " << d.name);
      CHECK(grants(role.root(), d.group, {d.plural}, {"list", "watch", "patch", "delete"}));
      CHECK(grants(role.root(), d.group, {d.plural + "/status"}, {"update"}));
      CHECK(grants(role.root(), d.group, {d.plural + "/finalizers"}, {"update"}));
      for (const auto& p : r.permissions) {
        INFO(p.why);
        for (const auto& group : p.api_groups) CHECK(grants(role.root(), group, p.resources, p.verbs));
      }
    }
  }
}

TEST_CASE("the files under manifests/ that list the kinds are what `training-operator manifests` generates") {
  framework::Registry registry;
  REQUIRE(operator_cmd::register_frameworks(registry));
  auto every = registry.resolve({"*"});
  REQUIRE(every);
  auto files = operator_cmd::generate_manifests(registry, *every);
  REQUIRE(files);
  REQUIRE(files->size() > 4);  // the kustomization, two roles, the webhooks, then the CRDs
  for (const auto& f : *files) {
    INFO("manifests/" << f.path << " differs from `training-operator manifests`: run scripts/generate-manifests");
    CHECK(testing::read_text((kManifests / f.path).string()) == f.text);
  }
}

TEST_CASE("training-operator manifests: only the enabled modules, and a clear error for an unknown one") {
  framework::Registry registry;
  REQUIRE(operator_cmd::register_frameworks(registry));
  const auto& first = registry.all().front().descriptor;
  auto files = operator_cmd::generate_manifests(registry, {first.name});
  REQUIRE(files);
  for (const auto& f : *files) {
    INFO(f.path);
    for (const auto& r : registry.all()) {
      if (r.descriptor.plural == first.plural && r.descriptor.group == first.group) continue;
      CHECK(f.text.find(r.descriptor.plural) == std::string::npos);
    }
  }
  CHECK(files->front().text.find(operator_cmd::crd_file_name(first, "")) != std::string::npos);
  CHECK_FALSE(operator_cmd::generate_manifests(registry, {}));
  CHECK_FALSE(registry.resolve({"no-such-kind"}));
}

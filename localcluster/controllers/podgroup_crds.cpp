#include "localcluster/controllers/podgroup_crds.h"

#include "localcluster/controllers/controller_base.h"

namespace unitrain::localcluster::controllers {

Status install_podgroup_crds(Store& store, PodGroupCrds which) {
  auto crds = resource(store, "apiextensions.k8s.io", "v1", "customresourcedefinitions");
  if (!crds) return fail("install PodGroup CRDs: the store does not serve customresourcedefinitions");
  auto docs = json::parse_yaml(podgroup_crds_yaml());
  if (!docs) return fail("podgroup_crds.yaml: " + docs.error().message);
  for (auto& doc : *docs) {
    std::string name(str_at(doc.root(), "/metadata/name"));
    std::string_view group = str_at(doc.root(), "/spec/group");
    if (group == "scheduling.volcano.sh" && !which.volcano) continue;
    if (group == "scheduling.x-k8s.io" && !which.scheduler_plugins) continue;
    auto created = store.create(*crds, "", std::move(doc));
    if (!created && created.error().code != 409)
      return fail("install CRD " + name + ": " + created.error().message);
  }
  return {};
}

}  // namespace unitrain::localcluster::controllers

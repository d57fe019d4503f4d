#include "frameworks/mpi/conversion/conversion.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace unitrain::frameworks::mpi::conversion {

namespace {

using json::Value;
using json::view;

constexpr std::string_view kV1 = "kubeflow.org/v1";
constexpr std::string_view kV2beta1 = "kubeflow.org/v2beta1";

// Spec fields each version knows (training-operator v1.8 MPIJobSpec; mpi-operator v0.8 MPIJobSpec).
constexpr std::array<std::string_view, 5> kV1Fields{"slotsPerWorker", "cleanPodPolicy", "mpiReplicaSpecs",
                                                    "mainContainer", "runPolicy"};
constexpr std::array<std::string_view, 7> kV2beta1Fields{"slotsPerWorker",   "runLauncherAsWorker",
                                                         "runPolicy",        "mpiReplicaSpecs",
                                                         "sshAuthMountPath", "launcherCreationPolicy",
                                                         "mpiImplementation"};

// The v2beta1-only fields the v2beta1 schema of the CRD defaults (manifests/crds, as
// mpi-operator's CRD does), with those defaults. The API server fills them into every object it
// stores, so a job written as v1 has them too; converting such a job back to v1 need not carry
// a default, since the API server fills it in again when the job is written back as v1: only the
// other values travel in the annotation, and a job written and read as v1 carries none.
struct SchemaDefault {
  std::string_view field;
  std::string_view value;  // JSON
};
constexpr std::array<SchemaDefault, 4> kV2beta1SchemaDefaults{{{"runLauncherAsWorker", "false"},
                                                               {"sshAuthMountPath", "\"/root/.ssh\""},
                                                               {"launcherCreationPolicy", "\"AtStartup\""},
                                                               {"mpiImplementation", "\"OpenMPI\""}}};

// The schema default of `field` in `api_version`; a null document when it has none.
json::Document schema_default(std::string_view api_version, std::string_view field) {
  if (api_version != kV2beta1) return json::Document();
  for (const auto& d : kV2beta1SchemaDefaults)
    if (d.field == field) return std::move(*json::Document::parse(d.value));
  return json::Document();
}

bool is_schema_default(std::string_view api_version, std::string_view field, const Value& value) {
  const json::Document d = schema_default(api_version, field);
  return !d.root().IsNull() && json::equal(d.root(), value);
}

bool known_in(std::string_view api_version, std::string_view field) {
  if (api_version == kV1) return std::find(kV1Fields.begin(), kV1Fields.end(), field) != kV1Fields.end();
  return std::find(kV2beta1Fields.begin(), kV2beta1Fields.end(), field) != kV2beta1Fields.end();
}

// The annotation that carries fields of `api_version` while the object is in the other version.
std::string_view annotation_for(std::string_view api_version) {
  return api_version == kV1 ? kV1FieldsAnnotation : kV2beta1FieldsAnnotation;
}

// Parses the stash annotation `name` off `annotations` (removing it). Null document when absent.
Result<json::Document> take_stash(Value* annotations, std::string_view name) {
  if (annotations == nullptr || !annotations->IsObject()) return json::Document();
  auto it = annotations->FindMember(Value(rapidjson::StringRef(name.data(), name.size())));
  if (it == annotations->MemberEnd()) return json::Document();
  if (!it->value.IsString()) return fail(fmt::format("metadata.annotations[{}]: must be a string", name));
  auto parsed = json::Document::parse(view(it->value));
  if (!parsed) return fail(fmt::format("metadata.annotations[{}]: {}", name, parsed.error().message));
  const Value& root = parsed->root();
  const Value* order = json::find(root, "/order");
  const Value* fields = json::find(root, "/fields");
  if (!root.IsObject() || order == nullptr || !order->IsArray() || fields == nullptr || !fields->IsObject())
    return fail(fmt::format("metadata.annotations[{}]: must be {{\"order\":[...],\"fields\":{{...}}}}", name));
  for (const auto& k : order->GetArray())
    if (!k.IsString()) return fail(fmt::format("metadata.annotations[{}]: order must list strings", name));
  annotations->EraseMember(it);
  return parsed;
}

}  // namespace

Result<json::Document> convert(const Value& object, std::string_view to_api_version) {
  if (to_api_version != kV1 && to_api_version != kV2beta1)
    return fail(fmt::format("MPIJob: cannot convert to {}; served versions are {} and {}", to_api_version, kV1,
                            kV2beta1));
  auto from = json::get_string(object, "/apiVersion");
  if (!from || (*from != kV1 && *from != kV2beta1))
    return fail(fmt::format("MPIJob: apiVersion {} is not {} or {}",
                            from ? fmt::format("\"{}\"", *from) : std::string("(missing)"), kV1, kV2beta1));
  // The webhook picks this conversion by kind; a direct caller may not, and a TFJob relabelled
  // as a v2beta1 object is no MPIJob.
  if (auto kind = json::get_string(object, "/kind"); kind != std::string_view("MPIJob"))
    return fail(fmt::format("MPIJob: kind {} is not MPIJob", kind ? fmt::format("\"{}\"", *kind) : std::string("(missing)")));
  json::Document out = json::Document::copy_of(object);
  if (*from == to_api_version) return out;
  const std::string source(*from);
  auto& a = out.alloc();
  out.root()["apiVersion"].SetString(to_api_version.data(), static_cast<rapidjson::SizeType>(to_api_version.size()), a);

  Value* annotations = json::find(out.root(), "/metadata/annotations");
  const bool had_annotations = annotations != nullptr && annotations->IsObject();
  auto restore = take_stash(annotations, annotation_for(to_api_version));
  if (!restore) return fail(std::move(restore.error()));
  // A stash naming the source version is stale (copied along with the object); it is rebuilt below.
  auto stale = take_stash(annotations, annotation_for(source));
  if (!stale) return fail(std::move(stale.error()));

  Value* spec = json::find(out.root(), "/spec");
  Value stashed(rapidjson::kObjectType);
  Value order(rapidjson::kArrayType);
  if (spec != nullptr && spec->IsObject()) {
    Value kept(rapidjson::kObjectType);
    for (auto& m : spec->GetObject()) {
      order.PushBack(Value(m.name, a), a);
      if (known_in(to_api_version, view(m.name)))
        kept.AddMember(Value(m.name, a), Value(m.value, a), a);
      else if (!is_schema_default(source, view(m.name), m.value))
        stashed.AddMember(Value(m.name, a), Value(m.value, a), a);
    }
    Value rebuilt(rapidjson::kObjectType);
    if (!restore->root().IsNull()) {
      // Back in the version the fields came from: put every key where it was written.
      Value& fields = restore->root()["fields"];
      for (const auto& k : restore->root()["order"].GetArray()) {
        if (rebuilt.HasMember(k)) continue;
        if (auto it = kept.FindMember(k); it != kept.MemberEnd())
          rebuilt.AddMember(Value(k, a), Value(it->value, a), a);
        else if (auto f = fields.FindMember(k); f != fields.MemberEnd())
          rebuilt.AddMember(Value(k, a), Value(f->value, a), a);
        else if (json::Document d = schema_default(to_api_version, view(k)); !d.root().IsNull())
          rebuilt.AddMember(Value(k, a), Value(d.root(), a), a);  // left out as a default: back in its place
      }
    }
    for (auto& m : kept.GetObject())
      if (!rebuilt.HasMember(m.name)) rebuilt.AddMember(Value(m.name, a), Value(m.value, a), a);
    *spec = std::move(rebuilt);
  }

  if (!stashed.ObjectEmpty()) {
    Value stash(rapidjson::kObjectType);
    stash.AddMember("order", order, a);
    stash.AddMember("fields", stashed, a);
    const std::string text = json::dump(stash);
    if (auto s = json::set_string(out, fmt::format("/metadata/annotations/{}", json::escape_pointer_token(
                                                       annotation_for(source))), text);
        !s)
      return fail(fmt::format("MPIJob: {}", s.error().message));
  } else if (had_annotations) {
    annotations = json::find(out.root(), "/metadata/annotations");
    if (annotations != nullptr && annotations->ObjectEmpty() && (!restore->root().IsNull() || !stale->root().IsNull()))
      json::remove(out, "/metadata/annotations");
  }
  return out;
}

Status register_mpi_conversion(framework::Registry& registry) {
  framework::ConversionRegistration r;
  r.group = "kubeflow.org";
  r.kind = "MPIJob";
  r.plural = "mpijobs";
  r.versions = {"v1", "v2beta1"};
  r.convert = &convert;
  return registry.add_conversion(std::move(r));
}

}  // namespace unitrain::frameworks::mpi::conversion

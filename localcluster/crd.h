// CustomResourceDefinitions: reading an apiextensions.k8s.io/v1 CRD into what the store serves
// (one ResourceInfo per served version, schemas, subresources, printer columns), defaulting and
// validating the CRD itself, and the status kube-apiserver's controllers would set.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/json/json.h"
#include "localcluster/schema.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

struct CrdVersion {
  std::string name;
  bool served = true;
  bool storage = false;
  json::Document schema;           // openAPIV3Schema, or null
  bool schema_has_defaults = false;
  json::Document printer_columns;  // additionalPrinterColumns array, or null
  bool has_status = false;
  bool has_scale = false;
  std::string spec_replicas_path;    // ".spec.replicas"
  std::string status_replicas_path;  // ".status.replicas"
  std::string label_selector_path;   // ".status.selector" (optional)
};

struct CrdDefinition {
  std::string name;  // <plural>.<group>
  std::string group;
  std::string plural, singular, kind, list_kind;
  bool namespaced = true;
  std::vector<std::string> short_names, categories;
  std::vector<CrdVersion> versions;
  std::string storage_version;
  bool conversion_webhook = false;  // spec.conversion.strategy Webhook

  const CrdVersion* version(std::string_view v) const;
  std::vector<ResourceInfo> resources() const;  // served versions only
  std::string storage_key() const { return group + "/" + plural; }
};

// Fills the defaults kube-apiserver sets on a CRD (names.singular, names.listKind,
// conversion.strategy None).
void default_crd(json::Document& crd);
// Validates and reads a (defaulted) CRD; field errors use the CRD's field paths.
Result<CrdDefinition, std::vector<FieldError>> parse_crd(const json::Value& crd);
// Sets status.conditions (NamesAccepted, Established), status.acceptedNames and
// status.storedVersions, keeping lastTransitionTime of conditions whose status did not change.
void set_crd_status(json::Document& crd, const CrdDefinition& def, const std::string& now);

// The CustomResourceDefinition object that defines `r`, when `r` is a custom resource.
std::optional<json::Document> find_crd_object(const Store& store, const ResourceInfo& r);

// A JSON Pointer from a CRD's `.spec.replicas`-style path.
std::string crd_path_to_pointer(std::string_view path);

}  // namespace unitrain::localcluster

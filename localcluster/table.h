// meta.k8s.io/v1 Table output: what `kubectl get` asks for (Accept: ...;as=Table;g=meta.k8s.io)
// and prints as is. Columns follow kube-apiserver's printers for the built-ins Unitrain uses and
// the CRD's additionalPrinterColumns for custom resources.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json/json.h"
#include "localcluster/store.h"

namespace unitrain::localcluster {

struct PrinterColumn {
  std::string name;
  std::string type;         // string integer number boolean date
  std::string format;       // "name" for the first column, else free text
  std::string description;
  int priority = 0;         // > 0: shown only with -o wide
  std::string json_path;    // ".spec.replicas"; empty for the built-in computed columns
};

enum class IncludeObject { None, Metadata, Object };

// additionalPrinterColumns of `version` in a CRD object.
std::vector<PrinterColumn> crd_printer_columns(const json::Value& crd, std::string_view version);

// The Table for a list (kind *List, rows in order) or a single object (one row).
// `crd_columns` replaces the generic Name/Age set when the resource is a custom resource.
json::Document make_table(const ResourceInfo& r, const json::Value& list_or_object,
                          const std::optional<std::vector<PrinterColumn>>& crd_columns, IncludeObject include,
                          std::chrono::system_clock::time_point now);

// Evaluates the subset of kubectl JSONPath used in printer columns: `.a.b`, `.a[0]`, `.a[-1:]`,
// `.a[*].b`, `.metadata.labels.app\.kubernetes\.io/name`. Returns the first value, if any.
const json::Value* eval_simple_jsonpath(const json::Value& root, std::string_view path);

// kube's HumanDuration ("42s", "5m3s", "3h", "12d", "2y30d").
std::string human_duration(std::chrono::seconds d);

}  // namespace unitrain::localcluster

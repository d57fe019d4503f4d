// Kept whole: kubectl's printer columns for every served kind, one small function per kind, as
// kubernetes/pkg/printers keeps them in one place.
#include "localcluster/table.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>
#include <variant>

#include <fmt/format.h>

#include "core/api/time.h"
#include "localcluster/content_negotiation.h"

namespace unitrain::localcluster {
namespace {

using json::Value;
using Clock = std::chrono::system_clock;

std::string_view sv(const Value* v) {
  return (v != nullptr && v->IsString()) ? std::string_view(v->GetString(), v->GetStringLength()) : std::string_view{};
}
std::string_view sget(const Value& root, std::string_view ptr) { return json::get_string(root, ptr).value_or(""); }
int64_t iget(const Value& root, std::string_view ptr) { return json::get_int(root, ptr).value_or(0); }
std::string or_none(std::string_view s) { return s.empty() ? "<none>" : std::string(s); }

std::string age_of(const Value& obj, std::string_view ptr, Clock::time_point now) {
  auto t = api::parse_time(sget(obj, ptr));
  if (!t) return "<unknown>";
  return human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
}

// A cell is a string, an integer or JSON null (kubectl prints "<none>").
using Cell = std::variant<std::monostate, std::string, int64_t, const Value*>;

struct Printer {
  std::vector<PrinterColumn> columns;
  // Cells of one object, one per column.
  std::function<std::vector<Cell>(const Value& obj, Clock::time_point now)> row;
};

PrinterColumn col(std::string name, std::string type = "string", int priority = 0, std::string format = {}) {
  PrinterColumn c;
  c.name = std::move(name);
  c.type = std::move(type);
  c.priority = priority;
  c.format = std::move(format);
  return c;
}
PrinterColumn name_col() {
  PrinterColumn c = col("Name", "string", 0, "name");
  c.description = "Name must be unique within a namespace.";
  return c;
}
PrinterColumn age_col() {
  PrinterColumn c = col("Age");
  c.description = "CreationTimestamp is a timestamp representing the server time when this object was created.";
  return c;
}

std::vector<Cell> pod_row(const Value& p, Clock::time_point now) {
  int64_t total = 0;
  if (auto* cs = json::find(p, "/spec/containers"); cs != nullptr && cs->IsArray()) total = cs->Size();
  int64_t ready = 0, restarts = 0;
  std::string reason(sget(p, "/status/phase"));
  if (auto r = sget(p, "/status/reason"); !r.empty()) reason = r;
  if (auto* st = json::find(p, "/status/containerStatuses"); st != nullptr && st->IsArray()) {
    for (const auto& c : st->GetArray()) {
      restarts += json::get_int(c, "/restartCount").value_or(0);
      if (auto w = sget(c, "/state/waiting/reason"); !w.empty()) {
        reason = w;
      } else if (json::find(c, "/state/terminated") != nullptr) {
        if (auto t = sget(c, "/state/terminated/reason"); !t.empty()) {
          reason = t;
        } else if (auto sig = json::get_int(c, "/state/terminated/signal").value_or(0); sig != 0) {
          reason = fmt::format("Signal:{}", sig);
        } else {
          reason = fmt::format("ExitCode:{}", json::get_int(c, "/state/terminated/exitCode").value_or(0));
        }
      } else if (json::get_bool(c, "/ready").value_or(false) && json::find(c, "/state/running") != nullptr) {
        ++ready;
      }
    }
  }
  if (json::find(p, "/metadata/deletionTimestamp") != nullptr) {
    reason = sget(p, "/status/reason") == "NodeLost" ? "Unknown" : "Terminating";
  }
  return {std::string(sget(p, "/metadata/name")),
          fmt::format("{}/{}", ready, total),
          reason,
          std::to_string(restarts),
          age_of(p, "/metadata/creationTimestamp", now),
          or_none(sget(p, "/status/podIP")),
          or_none(sget(p, "/spec/nodeName")),
          or_none(sget(p, "/status/nominatedNodeName")),
          std::string("<none>")};
}

std::string selector_string(const Value* sel) {
  if (sel == nullptr || !sel->IsObject() || sel->MemberCount() == 0) return "<none>";
  std::map<std::string, std::string> sorted;
  for (const auto& m : sel->GetObject()) sorted[m.name.GetString()] = m.value.IsString() ? m.value.GetString() : "";
  std::string out;
  for (const auto& [k, v] : sorted) out += (out.empty() ? "" : ",") + k + "=" + v;
  return out;
}

std::vector<Cell> service_row(const Value& s, Clock::time_point now) {
  std::string type(sget(s, "/spec/type"));
  if (type.empty()) type = "ClusterIP";
  std::string external;
  if (auto* ips = json::find(s, "/spec/externalIPs"); ips != nullptr && ips->IsArray()) {
    for (const auto& ip : ips->GetArray()) external += (external.empty() ? "" : ",") + std::string(sv(&ip));
  }
  if (external.empty()) external = type == "LoadBalancer" ? "<pending>" : "<none>";
  if (type == "ExternalName") external = std::string(sget(s, "/spec/externalName"));
  std::string ports;
  if (auto* ps = json::find(s, "/spec/ports"); ps != nullptr && ps->IsArray()) {
    for (const auto& p : ps->GetArray()) {
      std::string proto(sget(p, "/protocol"));
      if (proto.empty()) proto = "TCP";
      std::string one = std::to_string(iget(p, "/port"));
      if (auto np = iget(p, "/nodePort"); np != 0) one += ":" + std::to_string(np);
      ports += (ports.empty() ? "" : ",") + one + "/" + proto;
    }
  }
  return {std::string(sget(s, "/metadata/name")),
          type,
          or_none(sget(s, "/spec/clusterIP")),
          external,
          or_none(ports),
          age_of(s, "/metadata/creationTimestamp", now),
          selector_string(json::find(s, "/spec/selector"))};
}

bool has_condition(const Value& obj, std::string_view type) {
  auto* cs = json::find(obj, "/status/conditions");
  if (cs == nullptr || !cs->IsArray()) return false;
  for (const auto& c : cs->GetArray()) {
    if (sget(c, "/type") == type && sget(c, "/status") == "True") return true;
  }
  return false;
}

std::vector<Cell> job_row(const Value& j, Clock::time_point now) {
  std::string status = "Running";
  if (has_condition(j, "Complete")) {
    status = "Complete";
  } else if (has_condition(j, "Failed")) {
    status = "Failed";
  } else if (json::find(j, "/metadata/deletionTimestamp") != nullptr) {
    status = "Terminating";
  } else if (has_condition(j, "SuccessCriteriaMet")) {
    status = "SuccessCriteriaMet";
  } else if (has_condition(j, "FailureTarget")) {
    status = "FailureTarget";
  } else if (has_condition(j, "Suspended")) {
    status = "Suspended";
  }
  int64_t succeeded = iget(j, "/status/succeeded");
  std::string completions;
  if (auto c = json::get_int(j, "/spec/completions")) {
    completions = fmt::format("{}/{}", succeeded, *c);
  } else {
    auto par = json::get_int(j, "/spec/parallelism").value_or(1);
    completions = par > 1 ? fmt::format("{}/1 of {}", succeeded, par) : fmt::format("{}/1", succeeded);
  }
  std::string duration;
  if (auto start = api::parse_time(sget(j, "/status/startTime"))) {
    auto end = api::parse_time(sget(j, "/status/completionTime")).value_or(now);
    duration = human_duration(std::chrono::duration_cast<std::chrono::seconds>(end - *start));
  }
  std::string names, images;
  if (auto* cs = json::find(j, "/spec/template/spec/containers"); cs != nullptr && cs->IsArray()) {
    for (const auto& c : cs->GetArray()) {
      names += (names.empty() ? "" : ",") + std::string(sget(c, "/name"));
      images += (images.empty() ? "" : ",") + std::string(sget(c, "/image"));
    }
  }
  return {std::string(sget(j, "/metadata/name")),
          status,
          completions,
          duration,
          age_of(j, "/metadata/creationTimestamp", now),
          names,
          images,
          selector_string(json::find(j, "/spec/selector/matchLabels"))};
}

int64_t member_count(const Value& obj, std::string_view ptr) {
  auto* v = json::find(obj, ptr);
  return (v != nullptr && v->IsObject()) ? v->MemberCount() : 0;
}

std::vector<Cell> event_row(const Value& e, Clock::time_point now) {
  std::string_view last = sget(e, "/lastTimestamp");
  if (last.empty()) last = sget(e, "/eventTime");
  if (last.empty()) last = sget(e, "/metadata/creationTimestamp");
  std::string last_seen = "<unknown>";
  if (auto t = api::parse_time(last)) {
    last_seen = human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
  }
  std::string kind(sget(e, "/involvedObject/kind"));
  std::transform(kind.begin(), kind.end(), kind.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string source(sget(e, "/source/component"));
  if (source.empty()) source = std::string(sget(e, "/reportingComponent"));
  std::string first_seen = "<unknown>";
  if (auto t = api::parse_time(sget(e, "/firstTimestamp"))) {
    first_seen = human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *t));
  }
  return {last_seen,
          std::string(sget(e, "/type")),
          std::string(sget(e, "/reason")),
          kind + "/" + std::string(sget(e, "/involvedObject/name")),
          std::string(sget(e, "/involvedObject/fieldPath")),
          source,
          std::string(sget(e, "/message")),
          first_seen,
          std::max<int64_t>(iget(e, "/count"), 1),
          std::string(sget(e, "/metadata/name"))};
}

// "RWO,ROX" as kubectl abbreviates access modes.
std::string access_modes(const Value* modes) {
  std::string out;
  if (modes == nullptr || !modes->IsArray()) return out;
  for (const auto& m : modes->GetArray()) {
    std::string_view v = sv(&m);
    std::string_view abbr = v == "ReadWriteOnce" ? "RWO" : v == "ReadOnlyMany" ? "ROX" : v == "ReadWriteMany" ? "RWX"
                          : v == "ReadWriteOncePod" ? "RWOP" : v;
    if (!out.empty()) out += ",";
    out += abbr;
  }
  return out;
}

// The containers, images and selector columns kubectl shows with -o wide.
std::vector<Cell> template_cells(const Value& o) {
  std::string names, images;
  if (auto* cs = json::find(o, "/spec/template/spec/containers"); cs != nullptr && cs->IsArray()) {
    for (const auto& c : cs->GetArray()) {
      names += (names.empty() ? "" : ",") + std::string(sget(c, "/name"));
      images += (images.empty() ? "" : ",") + std::string(sget(c, "/image"));
    }
  }
  return {names, images, selector_string(json::find(o, "/spec/selector"))};
}

std::optional<Printer> apps_printer(const std::string& res) {
  auto wide = [](std::vector<PrinterColumn> cols) {
    cols.push_back(col("Containers", "string", 1));
    cols.push_back(col("Images", "string", 1));
    cols.push_back(col("Selector", "string", 1));
    return cols;
  };
  auto row = [](std::vector<Cell> cells, const Value& o) {
    for (auto& c : template_cells(o)) cells.push_back(std::move(c));
    return cells;
  };
  if (res == "deployments")
    return Printer{wide({name_col(), col("Ready"), col("Up-to-date", "integer"), col("Available", "integer"), age_col()}),
                   [row](const Value& o, Clock::time_point now) {
                     return row({std::string(sget(o, "/metadata/name")),
                                 fmt::format("{}/{}", iget(o, "/status/readyReplicas"), json::get_int(o, "/spec/replicas").value_or(1)),
                                 iget(o, "/status/updatedReplicas"), iget(o, "/status/availableReplicas"),
                                 age_of(o, "/metadata/creationTimestamp", now)},
                                o);
                   }};
  if (res == "replicasets")
    return Printer{wide({name_col(), col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer"), age_col()}),
                   [row](const Value& o, Clock::time_point now) {
                     return row({std::string(sget(o, "/metadata/name")), json::get_int(o, "/spec/replicas").value_or(1),
                                 iget(o, "/status/replicas"), iget(o, "/status/readyReplicas"),
                                 age_of(o, "/metadata/creationTimestamp", now)},
                                o);
                   }};
  if (res == "statefulsets")
    return Printer{{name_col(), col("Ready"), age_col(), col("Containers", "string", 1), col("Images", "string", 1)},
                   [](const Value& o, Clock::time_point now) {
                     auto t = template_cells(o);
                     return std::vector<Cell>{std::string(sget(o, "/metadata/name")),
                                              fmt::format("{}/{}", iget(o, "/status/readyReplicas"),
                                                          json::get_int(o, "/spec/replicas").value_or(1)),
                                              age_of(o, "/metadata/creationTimestamp", now), t[0], t[1]};
                   }};
  if (res == "daemonsets")
    return Printer{wide({name_col(), col("Desired", "integer"), col("Current", "integer"), col("Ready", "integer"),
                         col("Up-to-date", "integer"), col("Available", "integer"), col("Node Selector"), age_col()}),
                   [row](const Value& o, Clock::time_point now) {
                     std::string sel;
                     if (auto* ns = json::find(o, "/spec/template/spec/nodeSelector"); ns != nullptr && ns->IsObject())
                       for (auto m = ns->MemberBegin(); m != ns->MemberEnd(); ++m)
                         sel += (sel.empty() ? "" : ",") + std::string(sv(&m->name)) + "=" + std::string(sv(&m->value));
                     return row({std::string(sget(o, "/metadata/name")), iget(o, "/status/desiredNumberScheduled"),
                                 iget(o, "/status/currentNumberScheduled"), iget(o, "/status/numberReady"),
                                 iget(o, "/status/updatedNumberScheduled"), iget(o, "/status/numberAvailable"),
                                 or_none(sel), age_of(o, "/metadata/creationTimestamp", now)},
                                o);
                   }};
  return std::nullopt;
}

std::optional<Printer> builtin_printer(const ResourceInfo& r) {
  const std::string& g = r.group;
  const std::string& res = r.resource;
  auto simple = [](std::vector<PrinterColumn> cols, auto fn) {
    return Printer{std::move(cols), std::move(fn)};
  };
  if (g.empty() && res == "pods") {
    return simple({name_col(), col("Ready"), col("Status"), col("Restarts"), age_col(), col("IP", "string", 1),
                   col("Node", "string", 1), col("Nominated Node", "string", 1), col("Readiness Gates", "string", 1)},
                  pod_row);
  }
  if (g.empty() && res == "services") {
    return simple({name_col(), col("Type"), col("Cluster-IP"), col("External-IP"), col("Port(s)"), age_col(),
                   col("Selector", "string", 1)},
                  service_row);
  }
  if (g == "batch" && res == "jobs") {
    return simple({name_col(), col("Status"), col("Completions"), col("Duration"), age_col(),
                   col("Containers", "string", 1), col("Images", "string", 1), col("Selector", "string", 1)},
                  job_row);
  }
  if (g.empty() && res == "events") {
    return simple({col("Last Seen"), col("Type"), col("Reason"), col("Object"), col("Subobject", "string", 1),
                   col("Source", "string", 1), col("Message"), col("First Seen", "string", 1),
                   col("Count", "integer", 1), col("Name", "string", 1, "name")},
                  event_row);
  }
  if (g.empty() && res == "namespaces") {
    return simple({name_col(), col("Status"), age_col()}, [](const Value& o, Clock::time_point now) {
      return std::vector<Cell>{std::string(sget(o, "/metadata/name")), std::string(sget(o, "/status/phase")),
                               age_of(o, "/metadata/creationTimestamp", now)};
    });
  }
  if (g.empty() && res == "nodes") {
    return simple({name_col(), col("Status"), col("Roles"), age_col(), col("Version")},
                  [](const Value& o, Clock::time_point now) {
                    std::string status = "Unknown";
                    if (auto* cs = json::find(o, "/status/conditions"); cs != nullptr && cs->IsArray()) {
                      for (const auto& c : cs->GetArray()) {
                        if (sget(c, "/type") == "Ready") status = sget(c, "/status") == "True" ? "Ready" : "NotReady";
                      }
                    }
                    if (json::get_bool(o, "/spec/unschedulable").value_or(false)) status += ",SchedulingDisabled";
                    return std::vector<Cell>{std::string(sget(o, "/metadata/name")), status, std::string("<none>"),
                                             age_of(o, "/metadata/creationTimestamp", now),
                                             std::string(sget(o, "/status/nodeInfo/kubeletVersion"))};
                  });
  }
  if (g.empty() && res == "configmaps") {
    return simple({name_col(), col("Data", "integer"), age_col()}, [](const Value& o, Clock::time_point now) {
      return std::vector<Cell>{std::string(sget(o, "/metadata/name")),
                               member_count(o, "/data") + member_count(o, "/binaryData"),
                               age_of(o, "/metadata/creationTimestamp", now)};
    });
  }
  if (g.empty() && res == "secrets") {
    return simple({name_col(), col("Type"), col("Data", "integer"), age_col()},
                  [](const Value& o, Clock::time_point now) {
                    return std::vector<Cell>{std::string(sget(o, "/metadata/name")), std::string(sget(o, "/type")),
                                             member_count(o, "/data"), age_of(o, "/metadata/creationTimestamp", now)};
                  });
  }
  if (g == "apiextensions.k8s.io" && res == "customresourcedefinitions") {
    return simple({name_col(), col("Created At", "date")}, [](const Value& o, Clock::time_point) {
      return std::vector<Cell>{std::string(sget(o, "/metadata/name")),
                               std::string(sget(o, "/metadata/creationTimestamp"))};
    });
  }
  if (g == "apps") {
    if (auto p = apps_printer(res)) return p;
  }
  if (g.empty() && res == "persistentvolumeclaims") {
    return simple({name_col(), col("Status"), col("Volume"), col("Capacity"), col("Access Modes"), col("StorageClass"),
                   col("VolumeAttributesClass"), age_col(), col("VolumeMode", "string", 1)},
                  [](const Value& o, Clock::time_point now) {
                    return std::vector<Cell>{std::string(sget(o, "/metadata/name")), std::string(sget(o, "/status/phase")),
                                             std::string(sget(o, "/spec/volumeName")),
                                             std::string(sget(o, "/status/capacity/storage")),
                                             access_modes(json::find(o, "/status/accessModes")),
                                             std::string(sget(o, "/spec/storageClassName")), std::string("<unset>"),
                                             age_of(o, "/metadata/creationTimestamp", now),
                                             std::string(sget(o, "/spec/volumeMode"))};
                  });
  }
  if (g.empty() && res == "persistentvolumes") {
    return simple({name_col(), col("Capacity"), col("Access Modes"), col("Reclaim Policy"), col("Status"), col("Claim"),
                   col("StorageClass"), col("VolumeAttributesClass"), col("Reason"), age_col(),
                   col("VolumeMode", "string", 1)},
                  [](const Value& o, Clock::time_point now) {
                    std::string claim;
                    if (auto n = sget(o, "/spec/claimRef/name"); !n.empty())
                      claim = fmt::format("{}/{}", sget(o, "/spec/claimRef/namespace"), n);
                    return std::vector<Cell>{std::string(sget(o, "/metadata/name")),
                                             std::string(sget(o, "/spec/capacity/storage")),
                                             access_modes(json::find(o, "/spec/accessModes")),
                                             std::string(sget(o, "/spec/persistentVolumeReclaimPolicy")),
                                             std::string(sget(o, "/status/phase")), claim,
                                             std::string(sget(o, "/spec/storageClassName")), std::string("<unset>"),
                                             std::string(sget(o, "/status/reason")),
                                             age_of(o, "/metadata/creationTimestamp", now),
                                             std::string(sget(o, "/spec/volumeMode"))};
                  });
  }
  if (g == "policy" && res == "poddisruptionbudgets") {
    return simple({name_col(), col("Min Available"), col("Max Unavailable"), col("Allowed Disruptions", "integer"), age_col()},
                  [](const Value& o, Clock::time_point now) {
                    auto bound = [&](const char* pointer) -> std::string {
                      const Value* v = json::find(o, pointer);
                      if (v == nullptr) return "N/A";
                      return v->IsInt64() ? std::to_string(v->GetInt64()) : std::string(sv(v));
                    };
                    return std::vector<Cell>{std::string(sget(o, "/metadata/name")), bound("/spec/minAvailable"),
                                             bound("/spec/maxUnavailable"), iget(o, "/status/disruptionsAllowed"),
                                             age_of(o, "/metadata/creationTimestamp", now)};
                  });
  }
  if (g == "apps" && res == "controllerrevisions") {
    return simple({name_col(), col("Controller"), col("Revision", "integer"), age_col()},
                  [](const Value& o, Clock::time_point now) {
                    std::string controller = "<none>";
                    if (const Value* refs = json::find(o, "/metadata/ownerReferences"); refs && refs->IsArray())
                      for (const auto& r : refs->GetArray())
                        if (json::get_bool(r, "/controller").value_or(false)) {
                          std::string kind(sget(r, "/kind")), api(sget(r, "/apiVersion"));
                          for (auto& ch : kind) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
                          auto slash = api.find('/');
                          controller = kind + (slash == std::string::npos ? "" : "." + api.substr(0, slash)) + "/" +
                                       std::string(sget(r, "/name"));
                        }
                    return std::vector<Cell>{std::string(sget(o, "/metadata/name")), controller,
                                             json::get_int(o, "/revision").value_or(0),
                                             age_of(o, "/metadata/creationTimestamp", now)};
                  });
  }
  if (g == "storage.k8s.io" && res == "storageclasses") {
    return simple({name_col(), col("Provisioner"), col("ReclaimPolicy"), col("VolumeBindingMode"),
                   col("AllowVolumeExpansion"), age_col()},
                  [](const Value& o, Clock::time_point now) {
                    std::string name(sget(o, "/metadata/name"));
                    if (sget(o, "/metadata/annotations/storageclass.kubernetes.io~1is-default-class") == "true")
                      name += " (default)";
                    return std::vector<Cell>{name, std::string(sget(o, "/provisioner")),
                                             std::string(sget(o, "/reclaimPolicy")),
                                             std::string(sget(o, "/volumeBindingMode")),
                                             std::string(json::get_bool(o, "/allowVolumeExpansion").value_or(false) ? "true" : "false"),
                                             age_of(o, "/metadata/creationTimestamp", now)};
                  });
  }
  if (g == "coordination.k8s.io" && res == "leases") {
    return simple({name_col(), col("Holder"), age_col()}, [](const Value& o, Clock::time_point now) {
      return std::vector<Cell>{std::string(sget(o, "/metadata/name")),
                               std::string(sget(o, "/spec/holderIdentity")),
                               age_of(o, "/metadata/creationTimestamp", now)};
    });
  }
  return std::nullopt;
}

Printer generic_printer() {
  return Printer{{name_col(), age_col()}, [](const Value& o, Clock::time_point now) {
                   return std::vector<Cell>{std::string(sget(o, "/metadata/name")),
                                            age_of(o, "/metadata/creationTimestamp", now)};
                 }};
}

Printer crd_printer(const std::vector<PrinterColumn>& columns) {
  if (columns.empty()) return generic_printer();
  std::vector<PrinterColumn> cols{name_col()};
  for (const auto& c : columns) cols.push_back(c);
  return Printer{cols, [columns](const Value& o, Clock::time_point now) {
                   std::vector<Cell> cells{std::string(sget(o, "/metadata/name"))};
                   for (const auto& c : columns) {
                     const Value* v = eval_simple_jsonpath(o, c.json_path);
                     if (v == nullptr || v->IsNull()) {
                       cells.emplace_back(std::monostate{});
                     } else if (c.type == "date" && v->IsString()) {
                       auto t = api::parse_time(sv(v));
                       cells.emplace_back(t ? human_duration(std::chrono::duration_cast<std::chrono::seconds>(now - *t))
                                            : std::string(sv(v)));
                     } else {
                       cells.emplace_back(v);
                     }
                   }
                   return cells;
                 }};
}

Value cell_value(const Cell& c, json::Allocator& a) {
  if (std::holds_alternative<std::string>(c)) return json::str(std::get<std::string>(c), a);
  if (std::holds_alternative<int64_t>(c)) return Value(std::get<int64_t>(c));
  if (std::holds_alternative<const Value*>(c)) return json::clone(*std::get<const Value*>(c), a);
  return Value();
}

Value row_object(const Value& obj, IncludeObject include, json::Allocator& a) {
  if (include == IncludeObject::Object) return json::clone(obj, a);
  return partial_object_metadata(obj, a);
}

}  // namespace

std::string human_duration(std::chrono::seconds d) {
  long long seconds = d.count();
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return fmt::format("{}s", seconds);
  long long minutes = seconds / 60;
  if (minutes < 10) {
    long long s = seconds % 60;
    return s == 0 ? fmt::format("{}m", minutes) : fmt::format("{}m{}s", minutes, s);
  }
  if (minutes < 60 * 3) return fmt::format("{}m", minutes);
  long long hours = minutes / 60;
  if (hours < 8) {
    long long m = minutes % 60;
    return m == 0 ? fmt::format("{}h", hours) : fmt::format("{}h{}m", hours, m);
  }
  if (hours < 48) return fmt::format("{}h", hours);
  if (hours < 24 * 8) {
    long long h = hours % 24;
    return h == 0 ? fmt::format("{}d", hours / 24) : fmt::format("{}d{}h", hours / 24, h);
  }
  if (hours < 24 * 365 * 2) return fmt::format("{}d", hours / 24);
  if (hours < 24 * 365 * 8) {
    long long dy = (hours / 24) % 365;
    return dy == 0 ? fmt::format("{}y", hours / 24 / 365) : fmt::format("{}y{}d", hours / 24 / 365, dy);
  }
  return fmt::format("{}y", hours / 24 / 365);
}

const Value* eval_simple_jsonpath(const Value& root, std::string_view path) {
  // Strip kubectl's optional braces: "{.spec.replicas}".
  if (path.size() >= 2 && path.front() == '{' && path.back() == '}') path = path.substr(1, path.size() - 2);
  std::vector<const Value*> current{&root};
  size_t i = 0;
  while (i < path.size() && !current.empty()) {
    std::vector<const Value*> next;
    if (path[i] == '.') {
      ++i;
      std::string key;
      while (i < path.size() && path[i] != '.' && path[i] != '[') {
        if (path[i] == '\\' && i + 1 < path.size()) ++i;
        key += path[i++];
      }
      if (key.empty()) continue;
      for (const Value* v : current) {
        if (!v->IsObject()) continue;
        auto it = v->FindMember(key.c_str());
        if (it != v->MemberEnd()) next.push_back(&it->value);
      }
    } else if (path[i] == '[') {
      size_t close = path.find(']', i);
      if (close == std::string_view::npos) return nullptr;
      std::string_view inside = path.substr(i + 1, close - i - 1);
      i = close + 1;
      for (const Value* v : current) {
        if (!v->IsArray()) continue;
        long n = static_cast<long>(v->Size());
        if (inside == "*") {
          for (const auto& e : v->GetArray()) next.push_back(&e);
          continue;
        }
        auto parse = [](std::string_view s, long fallback) {
          if (s.empty()) return fallback;
          long out = fallback;
          std::from_chars(s.data(), s.data() + s.size(), out);
          return out;
        };
        size_t colon = inside.find(':');
        long start, end;
        if (colon == std::string_view::npos) {
          start = parse(inside, 0);
          if (start < 0) start += n;
          end = start + 1;
        } else {
          start = parse(inside.substr(0, colon), 0);
          end = parse(inside.substr(colon + 1), n);
          if (start < 0) start += n;
          if (end < 0) end += n;
        }
        start = std::max(0L, start);
        end = std::min(n, end);
        for (long k = start; k < end; ++k) next.push_back(&(*v)[static_cast<rapidjson::SizeType>(k)]);
      }
    } else {
      return nullptr;
    }
    current = std::move(next);
  }
  return current.empty() ? nullptr : current.front();
}

std::vector<PrinterColumn> crd_printer_columns(const Value& crd, std::string_view version) {
  std::vector<PrinterColumn> out;
  auto* versions = json::find(crd, "/spec/versions");
  if (versions == nullptr || !versions->IsArray()) return out;
  for (const auto& v : versions->GetArray()) {
    if (sget(v, "/name") != version) continue;
    auto* cols = json::find(v, "/additionalPrinterColumns");
    if (cols == nullptr || !cols->IsArray()) return out;
    for (const auto& c : cols->GetArray()) {
      PrinterColumn pc;
      pc.name = std::string(sget(c, "/name"));
      pc.type = std::string(sget(c, "/type"));
      pc.format = std::string(sget(c, "/format"));
      pc.description = std::string(sget(c, "/description"));
      pc.priority = static_cast<int>(json::get_int(c, "/priority").value_or(0));
      pc.json_path = std::string(sget(c, "/jsonPath"));
      out.push_back(std::move(pc));
    }
  }
  return out;
}

json::Document make_table(const ResourceInfo& r, const Value& list_or_object,
                          const std::optional<std::vector<PrinterColumn>>& crd_columns, IncludeObject include,
                          Clock::time_point now) {
  Printer printer = crd_columns ? crd_printer(*crd_columns) : builtin_printer(r).value_or(generic_printer());
  json::Document d = json::Document::object();
  auto& a = d.alloc();
  d.root().AddMember("kind", "Table", a);
  d.root().AddMember("apiVersion", "meta.k8s.io/v1", a);
  Value meta(rapidjson::kObjectType);
  bool is_list = list_or_object.IsObject() && list_or_object.HasMember("items");
  if (is_list) {
    if (auto rv = json::get_string(list_or_object, "/metadata/resourceVersion")) {
      meta.AddMember("resourceVersion", json::str(*rv, a), a);
    }
    if (auto c = json::get_string(list_or_object, "/metadata/continue"); c && !c->empty()) {
      meta.AddMember("continue", json::str(*c, a), a);
    }
    if (auto n = json::get_int(list_or_object, "/metadata/remainingItemCount")) {
      meta.AddMember("remainingItemCount", Value(*n), a);
    }
  } else if (auto rv = json::get_string(list_or_object, "/metadata/resourceVersion")) {
    meta.AddMember("resourceVersion", json::str(*rv, a), a);
  }
  d.root().AddMember("metadata", meta, a);
  Value cols(rapidjson::kArrayType);
  for (const auto& c : printer.columns) {
    Value cd(rapidjson::kObjectType);
    cd.AddMember("name", json::str(c.name, a), a);
    cd.AddMember("type", json::str(c.type, a), a);
    cd.AddMember("format", json::str(c.format, a), a);
    cd.AddMember("description", json::str(c.description, a), a);
    cd.AddMember("priority", c.priority, a);
    cols.PushBack(cd, a);
  }
  d.root().AddMember("columnDefinitions", cols, a);
  Value rows(rapidjson::kArrayType);
  auto add_row = [&](const Value& obj) {
    Value row(rapidjson::kObjectType);
    Value cells(rapidjson::kArrayType);
    for (const auto& c : printer.row(obj, now)) cells.PushBack(cell_value(c, a), a);
    row.AddMember("cells", cells, a);
    if (include != IncludeObject::None) row.AddMember("object", row_object(obj, include, a), a);
    rows.PushBack(row, a);
  };
  if (is_list) {
    const Value& items = list_or_object["items"];
    if (items.IsArray()) {
      for (const auto& it : items.GetArray()) add_row(it);
    }
  } else {
    add_row(list_or_object);
  }
  d.root().AddMember("rows", rows, a);
  return d;
}

}  // namespace unitrain::localcluster

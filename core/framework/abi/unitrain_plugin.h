/*
 * The Unitrain plugin ABI: the whole contract between build/bin/training-operator and a
 * framework module loaded at run time (--framework-module, --framework-module-dir). Plain C:
 * no C++ type, no exception and no allocator crosses it.
 *
 * A module is a shared library exporting one function, UNITRAIN_PLUGIN_ENTRY_SYMBOL:
 *
 *   const unitrain_module_table* unitrain_plugin_entry(uint32_t host_abi_major,
 *                                                      uint32_t host_abi_minor,
 *                                                      const unitrain_host_table* host);
 *
 * The host calls it once after loading the library and gets the module's table back; the host
 * refuses a module whose abi_major differs from its own, naming both. Through the table it
 * reads the module's registration (descriptor, CRDs, option specs, RBAC rules, webhook needs)
 * and creates plugin instances, one per configuration, each with a table of hooks.
 *
 * Data crosses as JSON text (UTF-8, not NUL-terminated: pointer and size) in both directions.
 * What the host passes in stays the host's and is valid for the duration of the call. What a
 * function hands out in a unitrain_buffer is the module's: the host releases it with the
 * module's free_buffer, and nothing else.
 *
 * Every function that can fail returns a unitrain_status. On UNITRAIN_ERROR the `out` buffer
 * (when the function has one, else `error`) holds a message for people. A module never lets an
 * exception or a longjmp leave one of its functions.
 *
 * Versioning. Within a major version the tables only grow at the end, and every table starts
 * with its own size: each side reads a field of the other's table only when that table's
 * struct_size covers it, so a module and a host of any two minor versions of one major work
 * together. A minor version may add: fields at the end of a table (a new optional capability
 * is a nullable function pointer there), members of a JSON object (readers ignore members they
 * do not know), values of an enumeration-like string the reader already handles as unknown (a
 * core event a module does not word: UNITRAIN_UNSUPPORTED). Everything else bumps the major
 * version: removing, reordering or retyping a field, changing the meaning or the required
 * members of a JSON document, changing the entry point's signature or the frozen header of the
 * module table (struct_size, abi_major, abi_minor), making an optional function required.
 *
 * The JSON documents are described next to each function; docs/framework-authors.md has the
 * whole picture. The C++ SDK (core/framework/abi/module_export.h, installed as the
 * UnitrainPluginSDK CMake package) implements all of this from a framework::FrameworkPlugin.
 *
 * A module runs inside the operator's process: a module that crashes or corrupts memory takes
 * the operator down with it. Loading one is the cluster admin's decision and risk.
 */
#ifndef UNITRAIN_PLUGIN_H
#define UNITRAIN_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define UNITRAIN_PLUGIN_ABI_MAJOR 1
#define UNITRAIN_PLUGIN_ABI_MINOR 3
#define UNITRAIN_PLUGIN_ENTRY_SYMBOL "unitrain_plugin_entry"

#if defined(__GNUC__) || defined(__clang__)
#define UNITRAIN_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define UNITRAIN_PLUGIN_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes (an int32_t, so the size never depends on the compiler's enum choice). */
typedef int32_t unitrain_status;
#define UNITRAIN_OK 0
/* The function failed; its buffer holds the message. */
#define UNITRAIN_ERROR 1
/* The request could not be read (not JSON, a required member missing or of the wrong type). */
#define UNITRAIN_BAD_REQUEST 2
/* An optional function that has nothing to say for this request (a core event it does not
   word): the host does what it does for a module without the function. */
#define UNITRAIN_UNSUPPORTED 3

/* Text the module allocated; released only through the module table's free_buffer. */
typedef struct unitrain_buffer {
  char* data;
  size_t size;
} unitrain_buffer;

/* What the host offers a module. */
typedef struct unitrain_host_table {
  uint32_t struct_size;
  uint32_t abi_major;
  uint32_t abi_minor;
  uint32_t reserved;
  void* context; /* passed back to every host function */
  /* One line through the operator's logger; level 0 debug, 1 info, 2 warning, 3 error. The
     host copies the text before returning. */
  void (*log)(void* context, int32_t level, const char* message, size_t size);
} unitrain_host_table;

/* The host's PriorityClass values by name, for gang_pod_group: 0 when the class is unknown. */
typedef struct unitrain_priority_lookup {
  void* context; /* passed back to value_of */
  int32_t (*value_of)(void* context, const char* name, size_t size);
} unitrain_priority_lookup;

/* One plugin instance (a module's framework built with one configuration), opaque to the host. */
typedef struct unitrain_plugin unitrain_plugin;

/* The hooks of one instance. Required functions are never NULL; the optional capabilities
   (nullable) follow them. Every hook is pure: it answers from its arguments alone and may be
   called from several threads at once. */
typedef struct unitrain_plugin_table {
  uint32_t struct_size;
  uint32_t reserved;
  unitrain_plugin* self; /* the first argument of every function below */
  /* Ends the instance; the table is invalid afterwards. */
  void (*destroy)(unitrain_plugin* self);

  /* --- required hooks (ABI 1.0) --------------------------------------------------------- */
  /* job -> the job with the in-memory defaults applied. */
  unitrain_status (*set_defaults)(const unitrain_plugin* self, const char* job, size_t size, unitrain_buffer* out);
  /* {"job": {...}, "oldJob": {...} (absent on create)} ->
     {"errors": [{"type": "FieldValueInvalid", "field": "spec.x", "value": "<rendered>"
     (absent when the error shows no value), "detail": "..."}], "warnings": ["..."]}.
     "type" is the metav1 CauseType of the field error. */
  unitrain_status (*validate)(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out);
  /* job -> [{"replicaType": "Worker", "index": 0, "name": "<pod name>" (absent: <job>-<rt>-<i>)}] */
  unitrain_status (*pod_slots)(const unitrain_plugin* self, const char* job, size_t size, unitrain_buffer* out);
  /* {"job": {...}, "slot": {as above}, "pod": {the pod the core built}} -> the decorated pod. */
  unitrain_status (*decorate_pod)(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out);
  /* {"job": {...}, "observed": OBSERVED} -> [{"resource": {"group": "", "version": "v1",
     "resource": "services"}, "object": {...}, "update": "Never" | "WhenDiffers",
     "compared": ["/spec"], "useExisting": false, "afterPods": false, "statusClearedFirst":
     ["/status/startTime"], "ownedByJob": true (1.2; absent: true; false creates it without the
     job's controller owner reference)}]
     OBSERVED is {"pods": [...], "services": [...], "owned": {"<resource>.<group>": [...]}}. */
  unitrain_status (*desired_objects)(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out);
  /* {"job": {...}, "observed": OBSERVED} -> {"replicaStatuses": {"Worker": {"active": 1,
     "succeeded": 0, "failed": 0, "selector": "..." (optional)}}, "conditions": [{"type":
     "Running", "status": "True", "reason": "...", "message": "..."}], "events": [{"type":
     "Normal", "reason": "...", "message": "..."}] (optional; recorded once the status is
     written), "setCompletionTime": false, "completionTime": "<RFC 3339>" (optional)} */
  unitrain_status (*compute_status)(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out);
  /* -> [{"group": "autoscaling", "version": "v2", "resource": "horizontalpodautoscalers"}] */
  unitrain_status (*pruned_resources)(const unitrain_plugin* self, unitrain_buffer* out);

  /* --- optional capabilities (ABI 1.0; NULL: the core's default) -------------------------- */
  /* {"event": "Created" | "Suspended" | "SuspendedNotRunning" | "Resumed" |
     "BackoffLimitExceeded" | "DeadlineExceeded" | "ReplicaRestarting" | "ReplicaFailed" |
     "ValidationFailed", "job": {...}, "replicaType": "Worker"} -> {"reason": "...", "message":
     "..."}. Default: training-operator's wording. */
  unitrain_status (*wording)(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out);
  /* {"job": {...}, "object": {"kind": "Pod", "resource": "pods", "name": "..."}} ->
     {"reason": "...", "message": "..."}. Default: training-operator's. */
  unitrain_status (*foreign_object_wording)(const unitrain_plugin* self, const char* request, size_t size,
                                            unitrain_buffer* out);
  /* job -> *min_member, the PodGroup's minMember. Default: the sum of replicas. */
  unitrain_status (*gang_min_member)(const unitrain_plugin* self, const char* job, size_t size, int32_t* min_member,
                                     unitrain_buffer* error);
  /* -> the warning text (plain, not JSON) a deprecated kind returns on every admission. */
  unitrain_status (*deprecation_warning)(const unitrain_plugin* self, unitrain_buffer* out);
  /* Departures from training-operator's pipeline (framework::PipelineDepartures), asked once per
     instance: nonzero true, zero false. NULL: training-operator's answer (1, 1, 1, 1, 0). */
  int32_t (*ttl_deletes_job)(const unitrain_plugin* self);
  int32_t (*enforces_run_limits)(const unitrain_plugin* self);
  int32_t (*gang_holds_pod_creation)(const unitrain_plugin* self);
  int32_t (*delete_services_with_pods)(const unitrain_plugin* self);
  int32_t (*validates_defaulted)(const unitrain_plugin* self);
  /* {"event": "Created" | "CreateFailed" | "Deleted" | "DeleteFailed" | "ExitedWithCode" |
     "TemplateRestartPolicy" | "TemplateSchedulerName" | "PodGroupDeleting" | "AbnormalPod" |
     "JobDeleted" | "JobDeleteFailed", "job": {...}, "subject": {"kind": "Pod", "name": "...",
     "replicaType": "Worker", "detail": "...", "reason": "..."}} -> {"reason", "message",
     "eventType": "Normal" | "Warning" | "" (no event)}: the events about a job's children.
     Default: training-operator's. */
  unitrain_status (*child_event)(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out);
  /* More departures from training-operator's pipeline, asked once like the five above. NULL:
     training-operator's answer (0, 0, 0): reconcile on a child's create or delete only when it
     carries the replica-type label; no status on suspended passes; pods written in parallel. */
  int32_t (*reconciles_on_any_child)(const unitrain_plugin* self);
  int32_t (*status_while_suspended)(const unitrain_plugin* self);
  int32_t (*ordered_pod_writes)(const unitrain_plugin* self);
  /* The PodGroup the module asks for (framework::GangContribution), superseding gang_min_member
     where both are set: job -> {"minMember": 3, "queue": "", "priorityClass": "", "minResources":
     {"cpu": "2"} (absent: left out), "scheduleTimeoutSeconds": 0 (absent: left out)}. The module
     looks PriorityClass values up through `priorities` (valid during the call; 0 when unknown).
     A module that sets it also sets gang_min_member (its minMember with every priority 0), so a
     host that predates this field still gets the group's size. */
  unitrain_status (*gang_pod_group)(const unitrain_plugin* self, const char* job, size_t size,
                                    const struct unitrain_priority_lookup* priorities, unitrain_buffer* out);
  /* --- ABI 1.1 ------------------------------------------------------------------------------ */
  /* A kind whose children are whole workloads (framework::WorkloadPlanner): the host runs no pod
     pipeline for it and carries out this plan on each pass instead. {"job": {...}, "observed":
     OBSERVED, "now": "<RFC 3339>"} -> {"status": {the job's whole .status} (absent: left alone),
     "events": [{"type", "reason", "message"}], "deleteJob": false, "deletions": [{"resource":
     {...}, "name": "...", "propagationPolicy": "Foreground"}], "updates": [DESIRED],
     "creations": [DESIRED], "requeueAfterMs": 1000 (absent: none)}, DESIRED as desired_objects
     answers. NULL: the pod pipeline. */
  unitrain_status (*workload_plan)(const unitrain_plugin* self, const char* request, size_t size, unitrain_buffer* out);
  /* --- ABI 1.2 ------------------------------------------------------------------------------ */
  /* The admission checks of the module's companion kinds (describe's "companions",
     framework::CompanionValidator): {"kind": "TrainingRuntime", "object": {...}, "oldObject":
     {...} (absent on create)} -> as validate answers. NULL: companions' objects are admitted
     unchecked. */
  unitrain_status (*validate_companion)(const unitrain_plugin* self, const char* request, size_t size,
                                        unitrain_buffer* out);
} unitrain_plugin_table;

/* What the entry point returns: valid until the library is unloaded. */
typedef struct unitrain_module_table {
  /* --- frozen for every major version: read before anything else --------------------------- */
  uint32_t struct_size;
  uint32_t abi_major; /* the UNITRAIN_PLUGIN_ABI_MAJOR the module was built with */
  uint32_t abi_minor;
  uint32_t reserved;

  /* --- ABI 1.0 ------------------------------------------------------------------------------ */
  /* Releases a buffer this module handed out (data may be NULL). */
  void (*free_buffer)(unitrain_buffer buffer);
  /* -> the registration: {"descriptor": {"name", "aliases", "kindAliasDefault", "group",
     "version", "kind", "plural", "singular", "replicaSpecsField", "replicaTypes",
     "defaultContainer", "defaultPortName", "defaultPort", "controllerName", "replicaTypeLabel",
     "metricsFramework", "managedBy", "ownsUnsetManagedBy", "ownedResources", "childLabelSelector",
     "optionalOwnedResources" (1.2), "unservedOwnedWarning" (1.2), "coreChildren": {"pods": true,
     "services": true} (1.3; absent, or a member absent: true)}, "options":
     [{"name", "default", "help"}], "crds": ["<CRD YAML>"], "permissions": [{"apiGroups",
     "resources", "verbs", "why"}], "webhooks": {"validate": ["CREATE", "UPDATE"], "mutate": ["CREATE"] (1.1), "denialsForbidden":
     false (1.2)}, "companions": [{"resource": {"group", "version", "resource"}, "kind",
     "clusterScoped", "validate": ["CREATE"], "skipLabel", "skipValues": [], "releasedFinalizers":
     []}] (1.2)} */
  unitrain_status (*describe)(unitrain_buffer* out);
  /* {"options": {"<name>": "<value>"} (every declared option), "gangSchedulerName": "",
     "clusterDomain": ""} -> *plugin, an instance's table (NULL on error; then `error` says why). */
  unitrain_status (*create)(const char* config, size_t size, const unitrain_plugin_table** plugin,
                            unitrain_buffer* error);
} unitrain_module_table;

typedef const unitrain_module_table* (*unitrain_plugin_entry_fn)(uint32_t host_abi_major, uint32_t host_abi_minor,
                                                                  const unitrain_host_table* host);

#ifdef __cplusplus
}
#endif

#endif /* UNITRAIN_PLUGIN_H */

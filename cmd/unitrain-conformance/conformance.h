// The conformance kit: a framework module's hooks checked against fixtures its author writes.
//
// A fixture is one YAML document:
//
//   job: {...}                         # the job as a user submits it
//   config: {options: {name: value}, gangSchedulerName: volcano}   # optional
//   expect:                            # every part optional
//     valid: true                      # validate(job) finds nothing (false: it finds something)
//     errors: ["spec.x: Required value: ..."]     # validate's errors, exactly, in order
//     defaults: {...}                  # contained in the defaulted job
//     pods: {<pod name>: {...}}        # each contained in the pod the module decorates
//     objects: [{resource: services, name: x-worker-0, object: {...}}]   # desired, contained
//     status:                          # status proposals for observed pods, by phase per slot
//       - pods: [Succeeded, Succeeded] # one phase per pod slot, in pod_slots() order
//         exitCode: 1                  # of the default container, for Failed pods (default 1)
//         conditions: ["Succeeded JAXJobSucceeded JAXJob default/x successfully completed."]
//
// "Contained": every member the fixture names is in the answer with the same value; arrays
// have the same length and are contained element by element.
#pragma once

#include <string>
#include <vector>

#include "core/base/result.h"
#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "core/json/json.h"

namespace unitrain::conformance {

// Where `got` fails to contain `want`, as "<path>: want <json>, got <json>"; empty when it does.
std::vector<std::string> containment_failures(const json::Value& want, const json::Value& got, const std::string& path);

// A pod of `slot` as the core would create it, decorated by `plugin`, in `phase` (the default
// container terminated with `exit_code` when the phase is Succeeded or Failed).
Result<json::Document> observed_pod(const framework::FrameworkPlugin& plugin, const json::Value& job,
                                    const framework::PodSlot& slot, std::string_view phase, int exit_code);

// Runs one fixture against the framework `registration` serves; the failures, each naming what
// was checked. An unreadable fixture is an error.
Result<std::vector<std::string>> run_fixture(const framework::Registration& registration, const json::Value& fixture);

}  // namespace unitrain::conformance

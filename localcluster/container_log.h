// One line of a simulated container's output, as the kubelet hands it to whoever keeps logs
// (the HTTP server's PodLogs, for `kubectl logs`).
#pragma once

#include <functional>
#include <string_view>

namespace unitrain::localcluster {

struct ContainerLogLine {
  std::string_view ns, pod, container;
  std::string_view run_id;  // the run's containerID: a new one starts a new log
  bool restarted = false;   // the run follows an earlier one of the same pod (previous=true)
  std::string_view line;
};

using ContainerLogSink = std::function<void(const ContainerLogLine&)>;

}  // namespace unitrain::localcluster

#include "localcluster/controllers/event_recorder.h"

#include <atomic>
#include <chrono>

#include <fmt/format.h>

#include "localcluster/controllers/controller_base.h"

namespace unitrain::localcluster::controllers {

void record_event(Store& store, const json::Value& involved, std::string_view field_path, std::string_view type,
                  std::string_view reason, std::string_view message, EventSource source) {
  auto events = resource(store, "", "v1", "events");
  if (!events) return;
  // Unique per process and time, as the hex suffix client-go's recorder derives from the clock.
  static std::atomic<uint64_t> sequence{0};
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch());
  std::string ns(str_at(involved, "/metadata/namespace"));
  if (ns.empty()) ns = "default";
  std::string name = fmt::format("{}.{:x}", str_at(involved, "/metadata/name"),
                                 static_cast<uint64_t>(nanos.count()) + sequence.fetch_add(1));
  std::string now = now_rfc3339();
  auto ev = json::Document::object();
  (void)json::set_string(ev, "/apiVersion", "v1");
  (void)json::set_string(ev, "/kind", "Event");
  (void)json::set_string(ev, "/metadata/name", name);
  (void)json::set_string(ev, "/metadata/namespace", ns);
  for (const char* f : {"apiVersion", "kind"})
    (void)json::set_string(ev, std::string("/involvedObject/") + f, str_at(involved, std::string("/") + f));
  for (const char* f : {"namespace", "name", "uid", "resourceVersion"})
    if (auto v = str_at(involved, std::string("/metadata/") + f); !v.empty())
      (void)json::set_string(ev, std::string("/involvedObject/") + f, v);
  if (!field_path.empty()) (void)json::set_string(ev, "/involvedObject/fieldPath", field_path);
  (void)json::set_string(ev, "/reason", reason);
  (void)json::set_string(ev, "/message", message);
  (void)json::set_string(ev, "/type", type);
  (void)json::set_string(ev, "/source/component", source.component);
  if (!source.host.empty()) (void)json::set_string(ev, "/source/host", source.host);
  (void)json::set_string(ev, "/firstTimestamp", now);
  (void)json::set_string(ev, "/lastTimestamp", now);
  (void)json::set_int(ev, "/count", 1);
  (void)json::set_string(ev, "/reportingComponent", source.component);
  (void)json::set_string(ev, "/reportingInstance", source.host);
  (void)store.create(*events, ns, std::move(ev));
}

}  // namespace unitrain::localcluster::controllers

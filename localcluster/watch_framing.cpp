#include "localcluster/watch_framing.h"

#include <chrono>

namespace unitrain::localcluster {

std::string watch_event_line(const WatchEvent& ev, const ResourceInfo& r, Representation representation,
                             IncludeObject include, const std::optional<std::vector<PrinterColumn>>& columns) {
  std::string line = "{\"type\":\"" + ev.type + "\",\"object\":";
  const std::string& obj = ev.object ? *ev.object : std::string("null");
  if (representation == Representation::Object || ev.type == "ERROR" || ev.type == "BOOKMARK") {
    line += obj;
  } else if (auto doc = json::Document::parse(obj); !doc) {
    line += obj;
  } else if (representation == Representation::Table) {
    line += make_table(r, doc->root(), columns, include, std::chrono::system_clock::now()).dump();
  } else {
    line += metadata_only(doc->root()).dump();
  }
  line += "}\n";
  return line;
}

std::string watch_error_line(const StatusError& e) {
  return "{\"type\":\"ERROR\",\"object\":" + e.to_status().dump() + "}\n";
}

}  // namespace unitrain::localcluster

// The lines of a watch response: one JSON object per event, {"type":...,"object":...}\n, the
// object re-encoded as a Table or as PartialObjectMetadata when the client asked for that.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "localcluster/api_errors.h"
#include "localcluster/content_negotiation.h"
#include "localcluster/store.h"
#include "localcluster/table.h"

namespace unitrain::localcluster {

// `columns` are a custom resource's printer columns (for Table output).
std::string watch_event_line(const WatchEvent& ev, const ResourceInfo& r, Representation representation,
                             IncludeObject include, const std::optional<std::vector<PrinterColumn>>& columns);
// An ERROR event carrying `e`'s Status.
std::string watch_error_line(const StatusError& e);
// What a `malformed` fault puts in place of an event: balanced braces, so a decoder that frames by
// depth still sees a whole (invalid) event.
inline constexpr std::string_view kMalformedWatchEventLine = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":]}}\n";

}  // namespace unitrain::localcluster

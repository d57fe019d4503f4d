// Structured logging: a message plus key/value fields ("job", "framework", "controller",
// "reconcileID", "resourceVersion", ...). Lines go to spdlog's default logger, so every sink and
// level setting applies; the fields travel in the record's payload after the message, each one
// introduced by the unit separator 0x1F ("msg\x1Fjob=ns/name\x1Fcontroller=..."), and a
// formatter that knows the encoding (decode() below; the operator's is
// cmd/training-operator/logging.cpp) lays them out as JSON members or key=value pairs. A plain
// spdlog formatter shows them after the message.
//
// spdlog is included only by log.cpp: the layers that log (core/kube, core/controller) compile
// against this small header.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace unitrain::log {

enum class Level { trace, debug, info, warn, error, critical };

struct Field {
  std::string key;
  std::string value;
};
using Fields = std::vector<Field>;

// The keys Unitrain's lines carry where they apply (docs/operator.md, "Logs").
namespace key {
inline constexpr const char* kJob = "job";                          // "<namespace>/<name>"
inline constexpr const char* kFramework = "framework";              // "kubeflow.org/pytorchjob"
inline constexpr const char* kController = "controller";            // "pytorchjob-controller"
inline constexpr const char* kReconcileID = "reconcileID";          // one reconcile pass
inline constexpr const char* kResourceVersion = "resourceVersion";  // of the job the pass saw
}  // namespace key

inline constexpr char kFieldSeparator = '\x1f';

// The payload of a record with fields. The separator inside a message, key or value becomes a
// space, and a key has no '=', so decode() always returns what was encoded.
std::string encode(std::string_view message, const Fields& fields);
struct Decoded {
  std::string_view message;
  std::vector<std::pair<std::string_view, std::string_view>> fields;
};
// A payload without the separator is a message without fields.
Decoded decode(std::string_view payload);

// True when the default logger writes records of `level`: skip building what would be dropped.
bool enabled(Level level);
void write(Level level, std::string_view message, const Fields& fields = {});

// Fields every line of one context carries (a controller, a reconcile pass), plus per-line ones.
class Logger {
 public:
  Logger() = default;
  explicit Logger(Fields context) : context_(std::move(context)) {}

  // A copy with one more context field (replacing one of the same key).
  Logger with(std::string key, std::string value) const;
  const Fields& context() const { return context_; }

  void log(Level level, std::string_view message, const Fields& extra = {}) const;

  template <class... A>
  void debug(fmt::format_string<A...> f, A&&... a) const {
    if (enabled(Level::debug)) log(Level::debug, fmt::format(f, std::forward<A>(a)...));
  }
  template <class... A>
  void info(fmt::format_string<A...> f, A&&... a) const {
    if (enabled(Level::info)) log(Level::info, fmt::format(f, std::forward<A>(a)...));
  }
  template <class... A>
  void warn(fmt::format_string<A...> f, A&&... a) const {
    if (enabled(Level::warn)) log(Level::warn, fmt::format(f, std::forward<A>(a)...));
  }
  template <class... A>
  void error(fmt::format_string<A...> f, A&&... a) const {
    if (enabled(Level::error)) log(Level::error, fmt::format(f, std::forward<A>(a)...));
  }

 private:
  Fields context_;
};

}  // namespace unitrain::log

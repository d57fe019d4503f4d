#include "frameworks/trainer/trainer_options.h"

#include <charconv>

#include <fmt/format.h>

#include "core/framework/ascii.h"

namespace unitrain::frameworks::trainer {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<framework::OptionSpec> trainer_options() {
  return {{std::string(kFeatureGatesOption), "",
           "Comma-separated gate=true|false; the one gate is TrainJobStatus (alpha, off): the trainer pods get a "
           "token and the status server's address, and the status server writes status.trainerStatus"},
          {std::string(kStatusServerPortOption), std::to_string(kDefaultStatusServerPort),
           "HTTPS port of the TrainJob status server (every replica, the webhook certificate), with TrainJobStatus on"}};
}

Result<std::optional<StatusServerConfig>> status_server_config(const framework::PluginConfig& config) {
  bool on = false;
  const std::string gates = config.option(kFeatureGatesOption);
  std::string_view rest = gates;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = trimmed(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return fail(fmt::format("--{}: missing bool value for {}", kFeatureGatesOption, item));
    }
    const std::string_view name = trimmed(item.substr(0, eq));
    const std::string_view value = trimmed(item.substr(eq + 1));
    if (name != kTrainJobStatusGate) {
      return fail(fmt::format("--{}: unrecognized feature gate: {} (known: {})", kFeatureGatesOption, name, kTrainJobStatusGate));
    }
    if (framework::ascii::iequals(value, "true")) on = true;
    else if (framework::ascii::iequals(value, "false")) on = false;
    else return fail(fmt::format("--{}: invalid value of {}={}, err: want true or false", kFeatureGatesOption, name, value));
  }
  const std::string port_text = config.option(kStatusServerPortOption);
  int port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return fail(fmt::format("--{}: \"{}\" is not a port in 0..65535", kStatusServerPortOption, port_text));
  }
  if (!on) return std::optional<StatusServerConfig>();
  return std::optional<StatusServerConfig>(StatusServerConfig{.service_name = config.service_name,
                                                              .operator_namespace = config.service_namespace,
                                                              .certificate_secret = config.certificate_secret,
                                                              .port = port});
}

}  // namespace unitrain::frameworks::trainer

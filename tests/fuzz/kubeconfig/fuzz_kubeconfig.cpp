// kubeconfig files as users write them. The input is one file, or two (merged as KUBECONFIG
// merges them) separated by a NUL byte, written to a private temporary directory that also holds
// a CA file and a token file the configs may name by relative path. The first line is also read
// as a server URL and the whole input as a KUBECONFIG value. Invariants: nothing crashes or
// hangs; every error names the kubeconfig; a loaded config has a host, and its server URL reads
// back to the same scheme, host, port and path (the transport connects to what it parsed).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "core/kube/config.h"
#include "tests/fuzz/invariant.h"

namespace {

namespace fs = std::filesystem;
namespace kube = unitrain::kube;
using unitrain::fuzz::require;

struct Directory {
  fs::path path;
  Directory() {
    std::string templ = (fs::temp_directory_path() / "unitrain-fuzz-kubeconfig-XXXXXX").string();
    require(::mkdtemp(templ.data()) != nullptr);
    path = templ;
    write("ca.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
    write("token", "  secret-token\n");
  }
  ~Directory() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string write(const std::string& name, std::string_view content) const {
    const fs::path p = path / name;
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    return p.string();
  }
};

const Directory& directory() {
  static const Directory d;
  return d;
}

void same_server(const kube::RestConfig& cfg) {
  require(!cfg.host.empty());
  kube::RestConfig again;
  require(kube::parse_server_url(cfg.server_url(), again).has_value());
  require(again.scheme == cfg.scheme && again.host == cfg.host && again.port == cfg.port &&
          again.path_prefix == cfg.path_prefix);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const Directory& dir = directory();

  kube::RestConfig url_only;
  if (kube::parse_server_url(text.substr(0, text.find('\n')), url_only)) same_server(url_only);
  (void)kube::split_kubeconfig_env(text);

  const size_t nul = text.find('\0');
  kube::KubeconfigOptions opts;
  opts.paths.push_back(dir.write("config", text.substr(0, nul)));
  if (nul != std::string_view::npos) opts.paths.push_back(dir.write("second", text.substr(nul + 1)));
  auto cfg = kube::load_kubeconfig(opts);
  if (!cfg) {
    require(cfg.error().message.rfind("kubeconfig", 0) == 0);
    return 0;
  }
  same_server(*cfg);
  return 0;
}

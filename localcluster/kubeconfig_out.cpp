#include "localcluster/kubeconfig_out.h"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <openssl/rand.h>

#include "core/base/base64.h"
#include "core/json/json.h"

namespace unitrain::localcluster {
namespace {

// JSON strings are valid YAML flow scalars, so quoting through the JSON writer is always safe.
std::string yaml_quoted(std::string_view s) {
  json::Document d;
  d.root() = json::str(s, d.alloc());
  return d.dump();
}

}  // namespace

std::string render_kubeconfig(const KubeconfigSpec& spec) {
  std::string n = yaml_quoted(spec.name);
  std::string out = "apiVersion: v1\nkind: Config\nclusters:\n- name: " + n + "\n  cluster:\n    server: " +
                    yaml_quoted(spec.server) + "\n";
  if (spec.ca_pem) out += "    certificate-authority-data: " + base64_encode(*spec.ca_pem) + "\n";
  out += "users:\n- name: " + n + "\n  user:";
  if (spec.token) {
    out += "\n    token: " + yaml_quoted(*spec.token) + "\n";
  } else {
    out += " {}\n";
  }
  out += "contexts:\n- name: " + n + "\n  context:\n    cluster: " + n + "\n    user: " + n +
         "\n    namespace: default\ncurrent-context: " + n + "\npreferences: {}\n";
  return out;
}

Status write_kubeconfig(const std::string& path, const KubeconfigSpec& spec) {
  namespace fs = std::filesystem;
  fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  fs::path tmp = target;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return fail("kubeconfig " + tmp.string() + ": cannot open for writing");
    out << render_kubeconfig(spec);
    out.close();
    if (!out) return fail("kubeconfig " + tmp.string() + ": write failed");
  }
  ::chmod(tmp.c_str(), 0600);
  fs::rename(tmp, target, ec);
  if (ec) return fail("kubeconfig " + target.string() + ": " + ec.message());
  return {};
}

std::string random_token() {
  unsigned char bytes[32];
  RAND_bytes(bytes, sizeof bytes);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

}  // namespace unitrain::localcluster

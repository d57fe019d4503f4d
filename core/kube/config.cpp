#include "core/kube/config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/json/json.h"

namespace unitrain::kube {
namespace {

namespace fs = std::filesystem;

Result<std::string> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail(fmt::format("cannot read {}: read error", path));
  return ss.str();
}

std::string trim(std::string s) {
  const char* ws = " \t\r\n";
  auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return {};
  auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

// One named entry (cluster, user or context) and where it came from, so relative paths resolve
// against its own file and errors name its file and index.
struct Entry {
  std::string file;
  std::string key;  // "users[0].user"
  json::Document body;
};

struct Merged {
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current_context;
  std::vector<std::string> files_read;
};

Error err_at(const std::string& file, const std::string& key, const std::string& what) {
  return Error(fmt::format("kubeconfig {}: {}: {}", file, key, what));
}

// A scalar field as a string. YAML may have turned `token: 12345` into a number; kubectl reads
// such fields as strings, so accept the scalar's text.
Result<std::optional<std::string>> field_string(const Entry& e, const char* name) {
  const json::Value& body = e.body.root();
  auto it = body.FindMember(name);
  if (it == body.MemberEnd() || it->value.IsNull()) return std::optional<std::string>{};
  const json::Value& v = it->value;
  if (v.IsString()) return std::optional<std::string>(std::string(v.GetString(), v.GetStringLength()));
  if (v.IsNumber() || v.IsBool()) return std::optional<std::string>(json::dump(v));
  return fail(err_at(e.file, e.key + "." + name, "must be a string"));
}

Result<bool> field_bool(const Entry& e, const char* name) {
  const json::Value& body = e.body.root();
  auto it = body.FindMember(name);
  if (it == body.MemberEnd() || it->value.IsNull()) return false;
  if (it->value.IsBool()) return it->value.GetBool();
  if (it->value.IsString()) {
    std::string_view s(it->value.GetString(), it->value.GetStringLength());
    if (s == "true") return true;
    if (s == "false") return false;
  }
  return fail(err_at(e.file, e.key + "." + name, "must be true or false"));
}

std::string resolve_path(const std::string& file, const std::string& p) {
  fs::path path(p);
  if (path.is_absolute() || p.empty()) return p;
  return (fs::path(file).parent_path() / path).lexically_normal().string();
}

// `name-data` (base64) wins over `name` (a file path), as in client-go.
Result<std::string> load_pem(const Entry& e, const char* file_key, const char* data_key) {
  auto data = field_string(e, data_key);
  if (!data) return fail(data.error());
  if (*data && !(*data)->empty()) {
    auto decoded = base64_decode(**data);
    if (!decoded) return fail(err_at(e.file, e.key + "." + data_key, "invalid base64"));
    return *decoded;
  }
  auto path = field_string(e, file_key);
  if (!path) return fail(path.error());
  if (!*path || (*path)->empty()) return std::string();
  std::string resolved = resolve_path(e.file, **path);
  auto content = read_whole_file(resolved);
  if (!content) return fail(err_at(e.file, e.key + "." + file_key, content.error().message));
  return std::move(*content);
}

Status merge_list(const std::string& file, const json::Value& root, const char* list, const char* inner,
                  std::map<std::string, Entry>& into) {
  auto it = root.FindMember(list);
  if (it == root.MemberEnd() || it->value.IsNull()) return {};
  if (!it->value.IsArray()) return fail(err_at(file, list, "must be a list"));
  rapidjson::SizeType i = 0;
  for (const auto& item : it->value.GetArray()) {
    std::string where = fmt::format("{}[{}]", list, i++);
    if (!item.IsObject()) return fail(err_at(file, where, "must be a mapping"));
    auto name = item.FindMember("name");
    if (name == item.MemberEnd() || !name->value.IsString() || name->value.GetStringLength() == 0)
      return fail(err_at(file, where + ".name", "missing or not a string"));
    auto body = item.FindMember(inner);
    if (body != item.MemberEnd() && !body->value.IsObject() && !body->value.IsNull())
      return fail(err_at(file, where + "." + inner, "must be a mapping"));
    std::string key(name->value.GetString(), name->value.GetStringLength());
    if (into.count(key)) continue;  // first definition wins
    Entry e{file, where + "." + inner,
            body != item.MemberEnd() && body->value.IsObject() ? json::Document::copy_of(body->value)
                                                               : json::Document::object()};
    into.emplace(std::move(key), std::move(e));
  }
  return {};
}

Status merge_file(const std::string& file, const std::string& text, Merged& m) {
  auto docs = json::parse_yaml(text);
  if (!docs) return fail(Error(fmt::format("kubeconfig {}: {}", file, docs.error().message)));
  m.files_read.push_back(file);
  if (docs->empty()) return {};
  const json::Value& root = (*docs)[0].root();
  if (root.IsNull()) return {};
  if (!root.IsObject()) return fail(Error(fmt::format("kubeconfig {}: top level must be a mapping", file)));
  if (auto s = merge_list(file, root, "clusters", "cluster", m.clusters); !s) return s;
  if (auto s = merge_list(file, root, "users", "user", m.users); !s) return s;
  if (auto s = merge_list(file, root, "contexts", "context", m.contexts); !s) return s;
  auto cc = root.FindMember("current-context");
  if (cc != root.MemberEnd() && m.current_context.empty()) {
    if (!cc->value.IsString() && !cc->value.IsNull())
      return fail(err_at(file, "current-context", "must be a string"));
    if (cc->value.IsString()) m.current_context.assign(cc->value.GetString(), cc->value.GetStringLength());
  }
  return {};
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

bool is_ipv6_literal(std::string_view host) { return host.find(':') != std::string_view::npos; }

std::optional<std::string> real_getenv(const std::string& name) {
  const char* v = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): read-only at startup
  if (!v) return std::nullopt;
  return std::string(v);
}

}  // namespace

std::string RestConfig::server_url() const {
  std::string h = is_ipv6_literal(host) ? "[" + host + "]" : host;
  return fmt::format("{}://{}:{}{}", scheme, h, port, path_prefix);
}

Status parse_server_url(std::string_view url, RestConfig& cfg) {
  std::string_view rest = url;
  std::string scheme = "https";
  if (auto p = rest.find("://"); p != std::string_view::npos) {
    scheme = std::string(rest.substr(0, p));
    for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    rest.remove_prefix(p + 3);
  }
  if (scheme != "http" && scheme != "https")
    return fail(fmt::format("server URL \"{}\": scheme must be http or https", url));
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  std::string_view path = rest.substr(authority.size());
  if (auto q = path.find_first_of("?#"); q != std::string_view::npos) path = path.substr(0, q);
  if (authority.find('@') != std::string_view::npos)
    return fail(fmt::format("server URL \"{}\": user info is not supported", url));
  std::string host;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return fail(fmt::format("server URL \"{}\": unterminated '['", url));
    host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return fail(fmt::format("server URL \"{}\": junk after ']'", url));
      port_text = after.substr(1);
    }
  } else {
    auto colon = authority.rfind(':');
    host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
  }
  if (host.empty()) return fail(fmt::format("server URL \"{}\": no host", url));
  // RFC 3986 hosts only (as Go's url.Parse requires): a name of unreserved characters,
  // percent-escapes and sub-delimiters, or an IPv6 literal in brackets. Anything else would not
  // survive being written back into a URL (server_url) and names no server.
  const bool bracketed = authority.front() == '[';
  for (char ch : host) {
    const auto c = static_cast<unsigned char>(ch);
    const bool name_char = std::isalnum(c) != 0 || std::string_view("-._~%!$&'()*+,;=").find(ch) != std::string_view::npos;
    const bool ipv6_char = std::isalnum(c) != 0 || std::string_view(":.%-_").find(ch) != std::string_view::npos;
    if (bracketed ? !ipv6_char : !name_char)
      return fail(fmt::format("server URL \"{}\": invalid character {} in host", url,
                              std::isprint(c) != 0 ? fmt::format("'{}'", ch) : fmt::format("0x{:02x}", c)));
  }
  uint32_t port = scheme == "https" ? 443 : 80;
  if (!port_text.empty()) {
    port = 0;
    for (char c : port_text) {
      if (c < '0' || c > '9' || port > 65535) return fail(fmt::format("server URL \"{}\": invalid port", url));
      port = port * 10 + static_cast<uint32_t>(c - '0');
    }
    if (port == 0 || port > 65535) return fail(fmt::format("server URL \"{}\": invalid port", url));
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  cfg.scheme = scheme;
  cfg.host = std::move(host);
  cfg.port = static_cast<uint16_t>(port);
  cfg.path_prefix = std::string(path);
  return {};
}

std::vector<std::string> split_kubeconfig_env(std::string_view value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(':', start);
    if (end == std::string_view::npos) end = value.size();
    std::string item(value.substr(start, end - start));
    if (!item.empty() && std::find(out.begin(), out.end(), item) == out.end()) out.push_back(std::move(item));
    start = end + 1;
  }
  return out;
}

Result<RestConfig> load_kubeconfig(const KubeconfigOptions& opts) {
  if (opts.paths.empty()) return fail("kubeconfig: no file given");
  Merged m;
  for (const auto& path : opts.paths) {
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    auto text = read_whole_file(path);
    if (!text) return fail(Error(fmt::format("kubeconfig {}: {}", path, text.error().message)));
    if (auto s = merge_file(path, *text, m); !s) return fail(s.error());
  }
  if (m.files_read.empty()) return fail(fmt::format("kubeconfig: none of these files exists: {}", join(opts.paths)));

  const std::string ctx_name = opts.context.empty() ? m.current_context : opts.context;
  if (ctx_name.empty())
    return fail(fmt::format("kubeconfig {}: current-context is not set and no context was given",
                            join(m.files_read)));
  auto ctx_it = m.contexts.find(ctx_name);
  if (ctx_it == m.contexts.end())
    return fail(fmt::format("kubeconfig {}: context \"{}\" not found", join(m.files_read), ctx_name));
  const Entry& ctx = ctx_it->second;

  auto cluster_name = field_string(ctx, "cluster");
  if (!cluster_name) return fail(cluster_name.error());
  if (!*cluster_name || (*cluster_name)->empty())
    return fail(err_at(ctx.file, ctx.key + ".cluster", "missing"));
  auto cl_it = m.clusters.find(**cluster_name);
  if (cl_it == m.clusters.end())
    return fail(err_at(ctx.file, ctx.key + ".cluster", fmt::format("cluster \"{}\" not found", **cluster_name)));
  const Entry& cluster = cl_it->second;

  RestConfig cfg;
  auto server = field_string(cluster, "server");
  if (!server) return fail(server.error());
  if (!*server || (*server)->empty()) return fail(err_at(cluster.file, cluster.key + ".server", "missing"));
  if (auto s = parse_server_url(**server, cfg); !s)
    return fail(err_at(cluster.file, cluster.key + ".server", s.error().message));

  auto ca = load_pem(cluster, "certificate-authority", "certificate-authority-data");
  if (!ca) return fail(ca.error());
  cfg.ca_pem = std::move(*ca);
  auto insecure = field_bool(cluster, "insecure-skip-tls-verify");
  if (!insecure) return fail(insecure.error());
  cfg.insecure = *insecure;
  auto sni = field_string(cluster, "tls-server-name");
  if (!sni) return fail(sni.error());
  if (*sni) cfg.tls_server_name = **sni;

  auto ns = field_string(ctx, "namespace");
  if (!ns) return fail(ns.error());
  if (*ns && !(*ns)->empty()) cfg.namespace_ = **ns;

  auto user_name = field_string(ctx, "user");
  if (!user_name) return fail(user_name.error());
  if (*user_name && !(*user_name)->empty()) {
    auto u_it = m.users.find(**user_name);
    if (u_it == m.users.end())
      return fail(err_at(ctx.file, ctx.key + ".user", fmt::format("user \"{}\" not found", **user_name)));
    const Entry& user = u_it->second;
    auto cert = load_pem(user, "client-certificate", "client-certificate-data");
    if (!cert) return fail(cert.error());
    auto key = load_pem(user, "client-key", "client-key-data");
    if (!key) return fail(key.error());
    if (cert->empty() != key->empty())
      return fail(err_at(user.file, user.key, "client certificate and client key must be given together"));
    cfg.client_cert_pem = std::move(*cert);
    cfg.client_key_pem = std::move(*key);
    auto token = field_string(user, "token");
    if (!token) return fail(token.error());
    if (*token) cfg.bearer_token = trim(**token);
    auto token_file = field_string(user, "tokenFile");
    if (!token_file) return fail(token_file.error());
    if (*token_file && !(*token_file)->empty()) {
      std::string resolved = resolve_path(user.file, **token_file);
      auto content = read_whole_file(resolved);
      if (!content) return fail(err_at(user.file, user.key + ".tokenFile", content.error().message));
      cfg.bearer_token_file = resolved;
      if (cfg.bearer_token.empty()) cfg.bearer_token = trim(*content);
    }
    const bool has_credentials = !cfg.client_cert_pem.empty() || !cfg.bearer_token.empty() ||
                                 !cfg.bearer_token_file.empty();
    for (const char* unsupported : {"exec", "auth-provider"}) {
      if (!has_credentials && user.body.root().HasMember(unsupported))
        return fail(err_at(user.file, user.key + "." + unsupported, "credential plugins are not supported"));
    }
  }
  return cfg;
}

Result<RestConfig> in_cluster_config(const std::string& dir, const EnvLookup& getenv_in) {
  const EnvLookup getenv = getenv_in ? getenv_in : EnvLookup(real_getenv);
  auto host = getenv("KUBERNETES_SERVICE_HOST");
  auto port = getenv("KUBERNETES_SERVICE_PORT");
  if (!host || host->empty() || !port || port->empty())
    return fail("in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  RestConfig cfg;
  std::string h = is_ipv6_literal(*host) ? "[" + *host + "]" : *host;
  if (auto s = parse_server_url("https://" + h + ":" + *port, cfg); !s)
    return fail(Error(s.error().message).prefix("in-cluster config"));
  const std::string token_path = (fs::path(dir) / "token").string();
  auto token = read_whole_file(token_path);
  if (!token) return fail(Error(token.error().message).prefix("in-cluster config"));
  cfg.bearer_token = trim(*token);
  cfg.bearer_token_file = token_path;
  auto ca = read_whole_file((fs::path(dir) / "ca.crt").string());
  if (!ca) return fail(Error(ca.error().message).prefix("in-cluster config"));
  cfg.ca_pem = std::move(*ca);
  std::error_code ec;
  const std::string ns_path = (fs::path(dir) / "namespace").string();
  if (fs::exists(ns_path, ec)) {
    auto ns = read_whole_file(ns_path);
    if (!ns) return fail(Error(ns.error().message).prefix("in-cluster config"));
    if (auto t = trim(*ns); !t.empty()) cfg.namespace_ = t;
  }
  return cfg;
}

Result<RestConfig> load_default_config(const std::string& kubeconfig_flag, const std::string& context,
                                       const EnvLookup& getenv_in) {
  const EnvLookup getenv = getenv_in ? getenv_in : EnvLookup(real_getenv);
  if (!kubeconfig_flag.empty()) {
    std::error_code ec;
    if (!fs::exists(kubeconfig_flag, ec)) return fail(fmt::format("kubeconfig {}: file does not exist", kubeconfig_flag));
    return load_kubeconfig({{kubeconfig_flag}, context});
  }
  if (auto env = getenv("KUBECONFIG"); env && !env->empty())
    return load_kubeconfig({split_kubeconfig_env(*env), context});
  if (auto h = getenv("KUBERNETES_SERVICE_HOST"); h && !h->empty()) return in_cluster_config(kServiceAccountDir, getenv);
  auto home = getenv("HOME");
  if (!home || home->empty()) return fail("no kubeconfig: KUBECONFIG and HOME are unset and not running in a cluster");
  return load_kubeconfig({{(fs::path(*home) / ".kube" / "config").string()}, context});
}

}  // namespace unitrain::kube

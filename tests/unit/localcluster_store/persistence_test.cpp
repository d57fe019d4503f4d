#include <filesystem>
#include <fstream>
#include <sstream>

#include "helpers.h"
#include "localcluster/persistence.h"

namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("unitrain-lcstore-" + std::to_string(::getpid()) + "-" +
                                        std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::remove_all(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

lc::StoreOptions persisted(const TempDir& d) {
  lc::StoreOptions o;
  o.state_dir = d.path.string();
  return o;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("persisted writes survive a restart and the resourceVersion counter continues") {
  TempDir dir;
  std::string rv;
  std::string uid;
  {
    auto s = new_store(persisted(dir));
    auto p = create_ok(*s, pods(), "default", pod_doc("a"));
    uid = str(p, "/metadata/uid");
    create_ok(*s, pods(), "default", pod_doc("b"));
    REQUIRE(s->patch(pods(), "default", "a", lc::PatchKind::Merge, R"({"metadata":{"labels":{"k":"v"}}})"));
    REQUIRE(s->remove(pods(), "default", "b", lc::DeleteRequest{}));
    create_ok(*s, builtin("", "namespaces"), "", doc(R"({"metadata":{"name":"team"}})"));
    rv = s->resource_version();
  }
  CHECK(read(dir.path / "log.jsonl").find("\"op\":\"delete\"") != std::string::npos);
  auto s = new_store(persisted(dir));
  CHECK(s->resource_version() == rv);
  auto a = s->get(pods(), "default", "a");
  REQUIRE(a);
  CHECK(str(*a, "/metadata/uid") == uid);
  CHECK(str(*a, "/metadata/labels/k") == "v");
  CHECK_FALSE(s->get(pods(), "default", "b"));
  CHECK(s->get(builtin("", "namespaces"), "", "team"));
  auto c = create_ok(*s, pods(), "default", pod_doc("c"));
  CHECK(std::stoull(str(c, "/metadata/resourceVersion")) == std::stoull(rv) + 1);
  // A watch from before the restart cannot be resumed: the window starts empty.
  lc::WatchRequest old;
  old.resource_version = "1";
  auto w = s->watch(pods(), "", old);
  REQUIRE(w);
  CHECK(drain(**w).types == std::vector<std::string>{"ERROR"});
}

TEST_CASE("a torn last log line is dropped and the store starts from the rest") {
  TempDir dir;
  {
    auto s = new_store(persisted(dir));
    create_ok(*s, pods(), "default", pod_doc("kept"));
  }
  {
    std::ofstream out(dir.path / "log.jsonl", std::ios::app);
    out << R"({"op":"put","res":"/pods","key":"default/torn","rv":999,"obj":{"metadata":{"na)";
  }
  {
    auto s = new_store(persisted(dir));
    CHECK(s->get(pods(), "default", "kept"));
    CHECK_FALSE(s->get(pods(), "default", "torn"));
    CHECK(std::stoull(s->resource_version()) < 999);
    create_ok(*s, pods(), "default", pod_doc("after"));
  }
  auto s = new_store(persisted(dir));
  CHECK(s->get(pods(), "default", "after"));

  // Corruption that is not at the end is an error naming the file and line.
  {
    std::ofstream out(dir.path / "log.jsonl", std::ios::app);
    out << "garbage\n" << R"({"op":"delete","res":"/pods","key":"default/after","rv":1000})" << "\n";
  }
  auto broken = lc::make_memory_store(persisted(dir));
  REQUIRE_FALSE(broken);
  CHECK(broken.error().message.find("log.jsonl: line ") != std::string::npos);
}

TEST_CASE("the log is compacted into a snapshot and replays the same state") {
  TempDir dir;
  lc::StoreOptions o = persisted(dir);
  o.compact_log_bytes = 4096;
  std::string rv;
  {
    auto s = new_store(o);
    for (int i = 0; i < 40; ++i) create_ok(*s, pods(), "default", pod_doc("p" + std::to_string(i)));
    for (int i = 0; i < 10; ++i) REQUIRE(s->remove(pods(), "default", "p" + std::to_string(i), lc::DeleteRequest{}));
    rv = s->resource_version();
  }
  CHECK(fs::exists(dir.path / "snapshot.jsonl"));
  CHECK(fs::file_size(dir.path / "log.jsonl") < 4096 + 2048);
  auto s = new_store(o);
  CHECK(s->resource_version() == rv);
  CHECK(item_names(*s->list(pods(), "default", {})).size() == 30);
  CHECK_FALSE(s->get(pods(), "default", "p0"));
  CHECK(s->get(pods(), "default", "p39"));
}

TEST_CASE("CRDs and their objects are restored from the state directory") {
  TempDir dir;
  const char* crd = R"({"metadata":{"name":"things.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
    "names":{"plural":"things","kind":"Thing"},"versions":[{"name":"v1","served":true,"storage":true,
    "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}})";
  {
    auto s = new_store(persisted(dir));
    create_ok(*s, builtin("apiextensions.k8s.io", "customresourcedefinitions"), "", doc(crd));
    auto r = s->find_resource("example.com", "v1", "things");
    REQUIRE(r);
    create_ok(*s, *r, "default", doc(R"({"metadata":{"name":"t"},"spec":{"x":1}})"));
  }
  auto s = new_store(persisted(dir));
  auto r = s->find_resource("example.com", "v1", "things");
  REQUIRE(r);
  auto t = s->get(*r, "default", "t");
  REQUIRE(t);
  CHECK(json::get_int(t->root(), "/spec/x") == 1);
}

TEST_CASE("the state directory is 0700 and its files 0600, whatever the umask, older files tightened") {
  TempDir dir;
  fs::create_directories(dir.path);
  fs::permissions(dir.path, fs::perms::all);
  { std::ofstream(dir.path / "log.jsonl"); }
  fs::permissions(dir.path / "log.jsonl", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                                              fs::perms::others_read);
  lc::StoreOptions o = persisted(dir);
  o.compact_log_bytes = 1024;
  {
    auto s = new_store(o);
    for (int i = 0; i < 10; ++i) create_ok(*s, pods(), "default", pod_doc("p" + std::to_string(i)));
  }
  const auto mode = [](const fs::path& p) { return fs::status(p).permissions() & fs::perms::mask; };
  CHECK(mode(dir.path) == fs::perms::owner_all);
  REQUIRE(fs::exists(dir.path / "snapshot.jsonl"));
  for (const auto& name : {"log.jsonl", "snapshot.jsonl"}) {
    INFO(name);
    CHECK(mode(dir.path / name) == (fs::perms::owner_read | fs::perms::owner_write));
  }
  REQUIRE(lc::write_private_file((dir.path / "token").string(), "t\n"));
  CHECK(mode(dir.path / "token") == (fs::perms::owner_read | fs::perms::owner_write));
}

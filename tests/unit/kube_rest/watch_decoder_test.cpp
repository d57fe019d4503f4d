#include <catch2/catch.hpp>

#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "core/kube/watch_decoder.h"

using namespace unitrain::kube;
namespace json = unitrain::json;
using T = WatchEvent::Type;

namespace {

const std::string kStream =
    R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a {\"}","resourceVersion":"1"},"spec":{"x":[1,{"y":"]"}]}}})"
    "\n"
    R"({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"b\\","resourceVersion":"2"}}})"
    R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"3"}}})"
    "\r\n  \t"
    R"({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"\u00e9","resourceVersion":"4"}}})"
    "\n"
    R"({"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"too old resource version","reason":"Expired","code":410}})"
    "\n";

std::vector<WatchEvent> drain(WatchDecoder& d) {
  std::vector<WatchEvent> out;
  for (;;) {
    auto ev = d.next();
    REQUIRE(ev);
    if (!*ev) return out;
    out.push_back(std::move(**ev));
  }
}

void check_events(const std::vector<WatchEvent>& evs) {
  REQUIRE(evs.size() == 5);
  CHECK(evs[0].type == T::Added);
  CHECK(json::get_string(evs[0].object.root(), "/metadata/name") == std::optional<std::string_view>("a {\"}"));
  CHECK(json::get_string(evs[0].object.root(), "/spec/x/1/y") == std::optional<std::string_view>("]"));
  CHECK(evs[1].type == T::Modified);
  CHECK(json::get_string(evs[1].object.root(), "/metadata/name") == std::optional<std::string_view>("b\\"));
  CHECK(evs[2].type == T::Bookmark);
  CHECK(json::get_string(evs[2].object.root(), "/metadata/resourceVersion") == std::optional<std::string_view>("3"));
  CHECK(evs[3].type == T::Deleted);
  CHECK(json::get_string(evs[3].object.root(), "/metadata/name") == std::optional<std::string_view>("\xc3\xa9"));
  CHECK(evs[4].type == T::Error);
  CHECK(json::get_int(evs[4].object.root(), "/code") == std::optional<int64_t>(410));
}

}  // namespace

TEST_CASE("watch decoder: whole stream at once") {
  WatchDecoder d;
  d.feed(kStream);
  check_events(drain(d));
  CHECK(d.finish());
  CHECK(d.buffered() == 0);
}

TEST_CASE("watch decoder: split at every byte boundary into two and three chunks") {
  for (size_t i = 0; i <= kStream.size(); ++i) {
    WatchDecoder d;
    std::vector<WatchEvent> evs;
    d.feed(std::string_view(kStream).substr(0, i));
    for (auto& e : drain(d)) evs.push_back(std::move(e));
    d.feed(std::string_view(kStream).substr(i));
    for (auto& e : drain(d)) evs.push_back(std::move(e));
    INFO("split at " << i);
    check_events(evs);
    CHECK(d.finish());
  }
  // Three-way splits on a coarser grid keep the test fast but cover chunk-inside-chunk cases.
  for (size_t i = 0; i <= kStream.size(); i += 7) {
    for (size_t j = i; j <= kStream.size(); j += 5) {
      WatchDecoder d;
      std::vector<WatchEvent> evs;
      for (auto part : {std::string_view(kStream).substr(0, i), std::string_view(kStream).substr(i, j - i),
                        std::string_view(kStream).substr(j)}) {
        d.feed(part);
        for (auto& e : drain(d)) evs.push_back(std::move(e));
      }
      check_events(evs);
    }
  }
}

TEST_CASE("watch decoder: one byte at a time") {
  WatchDecoder d;
  std::vector<WatchEvent> evs;
  for (char c : kStream) {
    d.feed(std::string_view(&c, 1));
    for (auto& e : drain(d)) evs.push_back(std::move(e));
  }
  check_events(evs);
}

TEST_CASE("watch decoder: malformed input is an error value") {
  SECTION("garbage between frames") {
    WatchDecoder d;
    d.feed(R"({"type":"ADDED","object":{}} x)");
    auto first = d.next();
    REQUIRE(first);
    REQUIRE(*first);
    auto second = d.next();
    REQUIRE_FALSE(second);
    CHECK_THAT(second.error().message, Catch::Contains("unexpected byte 0x78 at offset 29"));
    CHECK_FALSE(d.next());  // stays failed
  }
  SECTION("unknown type") {
    WatchDecoder d;
    d.feed(R"({"type":"EXPLODED","object":{}})");
    auto ev = d.next();
    REQUIRE_FALSE(ev);
    CHECK_THAT(ev.error().message, Catch::Contains("unknown type \"EXPLODED\""));
  }
  SECTION("missing object") {
    WatchDecoder d;
    d.feed(R"({"type":"ADDED"})");
    auto ev = d.next();
    REQUIRE_FALSE(ev);
    CHECK_THAT(ev.error().message, Catch::Contains("\"object\" missing"));
  }
  SECTION("invalid JSON inside a balanced frame") {
    WatchDecoder d;
    d.feed(R"({"type":"ADDED","object":{"a":tru}})");
    auto ev = d.next();
    REQUIRE_FALSE(ev);
    CHECK_THAT(ev.error().message, Catch::Contains("frame at offset 0"));
  }
  SECTION("truncated at end of stream") {
    WatchDecoder d;
    d.feed(R"({"type":"ADDED","object":{"a":1}})" "\n" R"({"type":"MOD)");
    auto ev = d.next();
    REQUIRE(ev);
    REQUIRE(*ev);
    auto none = d.next();
    REQUIRE(none);
    CHECK_FALSE(*none);
    auto fin = d.finish();
    REQUIRE_FALSE(fin);
    CHECK_THAT(fin.error().message, Catch::Contains("ended inside an event at offset 34"));
  }
  SECTION("oversized frame") {
    WatchDecoder d(nullptr, 64);
    d.feed(R"({"type":"ADDED","object":{"data":")" + std::string(100, 'x'));
    auto ev = d.next();
    REQUIRE_FALSE(ev);
    CHECK_THAT(ev.error().message, Catch::Contains("exceeds 64 bytes"));
  }
}

TEST_CASE("watch decoder: with a field mask, objects are decoded into what it keeps, an ERROR's Status whole") {
  auto fields = json::FieldMask::parse("metadata{name,resourceVersion},status{phase}");
  REQUIRE(fields);
  WatchDecoder d(std::make_shared<const json::FieldMask>(std::move(*fields)));
  d.feed(R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"p","uid":"u","resourceVersion":"5"},)"
         R"("spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running","podIP":"10.0.0.1"}}})"
         "\n"
         R"({"object":{"metadata":{"name":"q","resourceVersion":"6"}},"type":"DELETED"})"
         "\n" R"({"type":"ERROR","object":{"kind":"Status","status":"Failure","reason":"Expired","code":410}})");
  auto evs = drain(d);
  REQUIRE(evs.size() == 3);
  CHECK(evs[0].type == T::Added);
  CHECK(evs[0].object.dump() == R"({"metadata":{"name":"p","resourceVersion":"5"},"status":{"phase":"Running"}})");
  CHECK(evs[1].type == T::Deleted);  // "type" after "object" works too
  CHECK(evs[1].object.dump() == R"({"metadata":{"name":"q","resourceVersion":"6"}})");
  CHECK(evs[2].type == T::Error);
  CHECK(evs[2].object.dump() == R"({"kind":"Status","status":"Failure","reason":"Expired","code":410})");
  CHECK(d.finish());
}

TEST_CASE("watch decoder: a list mask keeps the List's metadata and masks each item") {
  auto fields = json::FieldMask::parse("metadata{name}");
  REQUIRE(fields);
  auto list = json::Document::parse(
      R"({"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"9","continue":"c"},)"
      R"("items":[{"metadata":{"name":"a","uid":"1"},"spec":{}},{"metadata":{"name":"b"}}]})",
      list_fields(*fields));
  REQUIRE(list);
  CHECK(list->dump() == R"({"apiVersion":"v1","kind":"PodList","metadata":{"resourceVersion":"9","continue":"c"},)"
                        R"("items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]})");
}

TEST_CASE("watch decoder: throughput of pod-sized events (measurement)") {
  // A pod of about 1.5 KB, the typical size of a training worker pod.
  std::string pod = R"({"type":"ADDED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"job-worker-%d","namespace":"default","uid":"0b5c9a3e-8f1d-4d8e-9f8a-%012d","resourceVersion":"%d","labels":{"training.kubeflow.org/job-name":"job","training.kubeflow.org/replica-type":"worker","training.kubeflow.org/replica-index":"%d","training.kubeflow.org/operator-name":"pytorchjob-controller"},"ownerReferences":[{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","name":"job","uid":"1c2d","controller":true,"blockOwnerDeletion":true}]},"spec":{"containers":[{"name":"pytorch","image":"docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727","command":["python3","/opt/pytorch-mnist/mnist.py","--epochs=1"],"env":[{"name":"MASTER_PORT","value":"23456"},{"name":"MASTER_ADDR","value":"job-master-0"},{"name":"WORLD_SIZE","value":"100"},{"name":"RANK","value":"1"},{"name":"PYTHONUNBUFFERED","value":"1"}],"ports":[{"name":"pytorchjob-port","containerPort":23456,"protocol":"TCP"}],"resources":{"limits":{"cpu":"1","memory":"2Gi"}}}],"restartPolicy":"OnFailure","schedulerName":"default-scheduler"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z"}],"containerStatuses":[{"name":"pytorch","ready":true,"restartCount":0,"state":{"running":{"startedAt":"2024-01-01T00:00:00Z"}}}]}}})";
#ifdef NDEBUG
  constexpr int kPods = 20000;
#else
  constexpr int kPods = 2000;  // sanitizer builds: the figure is meaningless there, keep it quick
#endif
  std::string stream;
  for (int i = 0; i < kPods; ++i) {
    std::string p = pod;
    for (auto pos = p.find("%d"); pos != std::string::npos; pos = p.find("%d")) p.replace(pos, 2, std::to_string(i));
    auto pos = p.find("%012d");
    p.replace(pos, 5, fmt::format("{:012}", i));
    stream += p;
    stream += '\n';
  }
  WatchDecoder d;
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  int n = 0;
  for (size_t off = 0; off < stream.size(); off += 16384) {
    d.feed(std::string_view(stream).substr(off, 16384));
    for (;;) {
      auto ev = d.next();
      REQUIRE(ev);
      if (!*ev) break;
      ++n;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  CHECK(n == kPods);
  // CPU time is the stable figure on a shared machine; wall time is printed for reference.
  WARN(fmt::format("watch decoder: {} events, {:.1f} MB, wall {:.3f}s, cpu {:.3f}s = {:.0f} events/cpu-s, {:.0f} MB/cpu-s",
                   n, stream.size() / 1e6, secs, cpu, n / cpu, stream.size() / 1e6 / cpu));
}

TEST_CASE("watch decoder: an object with a repeated member name is refused, whether it writes the cache's text or not") {
  const auto fields = std::make_shared<const json::FieldMask>(json::FieldMask::parse("metadata{name,labels}").value());
  for (bool write_text : {false, true}) {
    WatchDecoder d(fields);
    if (write_text)
      d.write_text_with(std::make_shared<const json::CurrentCodes>(std::make_shared<const json::StringCodes>()));
    d.feed(R"({"type":"ADDED","object":{"metadata":{"name":"a","labels":{"k":"1","k":"2"}}}})");
    auto ev = d.next();
    REQUIRE_FALSE(ev);
    CHECK(ev.error().message == R"(watch stream: frame at offset 0: invalid JSON: duplicate key "k" in /object/metadata/labels)");
  }
}

TEST_CASE("watch decoder: writes each added or modified object's coded text with the codes current at its parse") {
  const auto fields = std::make_shared<const json::FieldMask>(json::FieldMask::parse("kind,metadata{name,labels}").value());
  auto first = std::make_shared<const json::StringCodes>();
  auto learnt = std::make_shared<const json::StringCodes>(std::vector<std::string>{"metadata", "training.kubeflow.org/job-name"});
  auto current = std::make_shared<json::CurrentCodes>(first);
  WatchDecoder d(fields);
  d.write_text_with(current);
  const std::string added = R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","uid":"u",)"
                            R"("labels":{"training.kubeflow.org/job-name":"j"}},"spec":{"x":1}}})";
  d.feed(added + "\n");
  auto evs = drain(d);
  REQUIRE(evs.size() == 1);
  CHECK(evs[0].text.codes == first);
  CHECK(evs[0].text.text.bytes() == evs[0].object.dump());  // no codes yet: plain JSON

  current->set(learnt);
  d.feed(added + "\n" + R"({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"a"}}})" + "\n" +
         R"({"type":"ERROR","object":{"kind":"Status","code":410}})");
  evs = drain(d);
  REQUIRE(evs.size() == 3);
  rapidjson::StringBuffer scratch;
  CHECK(evs[0].text.codes == learnt);
  CHECK(evs[0].text.text.bytes() == json::CodedText::write(evs[0].object.root(), *learnt, scratch).bytes());
  CHECK(evs[0].text.text.size() < evs[0].object.dump().size());
  CHECK(evs[1].type == T::Deleted);
  CHECK(evs[1].text.text.empty());  // a deleted object is not stored
  CHECK(evs[2].type == T::Error);
  CHECK(evs[2].text.text.empty());
}

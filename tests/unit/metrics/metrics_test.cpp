#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <limits>

#include "core/metrics/metrics.h"

using namespace unitrain::metrics;

TEST_CASE("label values escape backslash, quote and newline") {
  CHECK(escape_label_value("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  CHECK(escape_help("x\\y\n\"z\"") == "x\\\\y\\n\"z\"");
}

TEST_CASE("values are formatted as Prometheus spells them") {
  CHECK(format_value(3) == "3");
  CHECK(format_value(0.25) == "0.25");
  CHECK(format_value(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(format_value(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(format_value(std::nan("")) == "NaN");
  CHECK(format_value(1e-6) == "1e-06");
}

TEST_CASE("counter and gauge families expose HELP, TYPE and labelled samples") {
  Registry r;
  auto c = r.counter("jobs_total", "Jobs seen.\nSecond line", {"namespace", "framework"});
  REQUIRE(c);
  (*c)->inc({"default", "pytorch"});
  (*c)->inc({"default", "pytorch"}, 2);
  (*c)->inc({"a\"b", "mpi"});
  (*c)->inc({"only-one"});  // wrong arity: ignored
  auto g = r.gauge("up", "Whether it runs.");
  REQUIRE(g);
  (*g)->set({}, 1);
  CHECK(r.expose() ==
        "# HELP jobs_total Jobs seen.\\nSecond line\n"
        "# TYPE jobs_total counter\n"
        "jobs_total{namespace=\"a\\\"b\",framework=\"mpi\"} 1\n"
        "jobs_total{namespace=\"default\",framework=\"pytorch\"} 3\n"
        "# HELP up Whether it runs.\n"
        "# TYPE up gauge\n"
        "up 1\n");
}

TEST_CASE("histograms expose cumulative buckets, +Inf, sum and count") {
  Registry r;
  auto h = r.histogram("latency_seconds", "Latency.", {"name"}, {0.1, 1});
  REQUIRE(h);
  (*h)->observe({"q"}, 0.05);
  (*h)->observe({"q"}, 0.5);
  (*h)->observe({"q"}, 5);
  CHECK(r.expose() ==
        "# HELP latency_seconds Latency.\n"
        "# TYPE latency_seconds histogram\n"
        "latency_seconds_bucket{name=\"q\",le=\"0.1\"} 1\n"
        "latency_seconds_bucket{name=\"q\",le=\"1\"} 2\n"
        "latency_seconds_bucket{name=\"q\",le=\"+Inf\"} 3\n"
        "latency_seconds_sum{name=\"q\"} 5.55\n"
        "latency_seconds_count{name=\"q\"} 3\n");
}

TEST_CASE("label values given as views reach the same children as owned ones, and create new ones") {
  Registry r;
  auto c = r.counter("requests_total", "Requests.", {"code", "method"});
  auto h = r.histogram("duration_seconds", "Duration.", {"verb"}, {0.1, 1});
  REQUIRE(c);
  REQUIRE(h);
  (*c)->inc({"200", "GET"});
  const std::string code = "200";
  const std::array<std::string_view, 2> get{code, "GET"};
  (*c)->inc(get);
  (*c)->inc(get, 2);
  const std::array<std::string_view, 2> post{"201", "POST"};
  (*c)->inc(post);                                             // a child the views create
  const std::array<std::string_view, 2> prefix{"20", "GET"};  // orders before "200": its own child
  (*c)->inc(prefix);
  (*c)->inc(std::array<std::string_view, 1>{"200"});  // wrong arity: ignored
  CHECK((*c)->value({"200", "GET"}) == 4);
  CHECK((*c)->value({"201", "POST"}) == 1);
  CHECK((*c)->value({"20", "GET"}) == 1);
  (*h)->observe(std::array<std::string_view, 1>{"PUT"}, 0.5);  // a new child gets every bucket
  (*h)->observe({"PUT"}, 2);
  (*h)->inc(std::array<std::string_view, 1>{"PUT"});  // not a counter: ignored
  const auto data = (*h)->histogram({"PUT"});
  CHECK(data.cumulative == std::vector<uint64_t>{0, 1});
  CHECK(data.count == 2);
  CHECK(r.expose() ==
        "# HELP requests_total Requests.\n"
        "# TYPE requests_total counter\n"
        "requests_total{code=\"20\",method=\"GET\"} 1\n"
        "requests_total{code=\"200\",method=\"GET\"} 4\n"
        "requests_total{code=\"201\",method=\"POST\"} 1\n"
        "# HELP duration_seconds Duration.\n"
        "# TYPE duration_seconds histogram\n"
        "duration_seconds_bucket{verb=\"PUT\",le=\"0.1\"} 0\n"
        "duration_seconds_bucket{verb=\"PUT\",le=\"1\"} 1\n"
        "duration_seconds_bucket{verb=\"PUT\",le=\"+Inf\"} 2\n"
        "duration_seconds_sum{verb=\"PUT\"} 2.5\n"
        "duration_seconds_count{verb=\"PUT\"} 2\n");
}

TEST_CASE("load mirrors cumulative data kept elsewhere, collectors run before exposition") {
  Registry r;
  auto h = r.histogram("work_seconds", "Work.", {}, {1, 10});
  auto c = r.counter("adds_total", "Adds.", {"name"});
  REQUIRE(h);
  REQUIRE(c);
  int runs = 0;
  r.add_collector([&] {
    ++runs;
    (*h)->load({}, HistogramData{{4, 6}, 7, 12.5});
    (*c)->set({"pytorchjob"}, 42);
  });
  std::string text = r.expose();
  CHECK(runs == 1);
  CHECK(text.find("work_seconds_bucket{le=\"10\"} 6\n") != std::string::npos);
  CHECK(text.find("work_seconds_bucket{le=\"+Inf\"} 7\n") != std::string::npos);
  CHECK(text.find("work_seconds_sum 12.5\n") != std::string::npos);
  CHECK(text.find("adds_total{name=\"pytorchjob\"} 42\n") != std::string::npos);
  // Data over other bounds is rejected rather than mislabelled.
  (*h)->load({}, HistogramData{{1}, 1, 1});
  CHECK((*h)->histogram({}).count == 7);
}

TEST_CASE("registration rejects bad names, duplicates and bad bounds, naming the metric") {
  Registry r;
  REQUIRE(r.counter("ok_total", "x"));
  auto dup = r.counter("ok_total", "x");
  REQUIRE_FALSE(dup);
  CHECK(dup.error().message.find("ok_total") != std::string::npos);
  CHECK_FALSE(r.gauge("1bad", "x"));
  CHECK_FALSE(r.gauge("bad-name", "x"));
  auto bad_label = r.gauge("g", "x", {"a:b"});
  REQUIRE_FALSE(bad_label);
  CHECK(bad_label.error().message.find("a:b") != std::string::npos);
  CHECK_FALSE(r.histogram("h1", "x", {"le"}, {1}));
  CHECK_FALSE(r.histogram("h2", "x", {}, {}));
  CHECK_FALSE(r.histogram("h3", "x", {}, {1, 1}));
  CHECK_FALSE(r.counter("c", "x", {"a", "a"}));
}

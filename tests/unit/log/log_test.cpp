// core/log: the field encoding every formatter relies on, Logger contexts, and the Throttle that
// turns a recurring problem into one line per interval.
#include <catch2/catch.hpp>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "core/log/log.h"
#include "core/log/throttle.h"

using namespace unitrain;
using namespace std::chrono_literals;

TEST_CASE("fields travel after the message and decode to what was encoded") {
  const auto payload = log::encode("reconciled", {{"job", "default/pt"}, {"controller", "pytorchjob-controller"}});
  const auto d = log::decode(payload);
  CHECK(d.message == "reconciled");
  REQUIRE(d.fields.size() == 2);
  CHECK(d.fields[0] == std::pair<std::string_view, std::string_view>{"job", "default/pt"});
  CHECK(d.fields[1] == std::pair<std::string_view, std::string_view>{"controller", "pytorchjob-controller"});
}

TEST_CASE("a separator or '=' inside a message, key or value cannot forge a field") {
  const auto payload = log::encode("a\x1f" "fake=1", {{"k=ey\x1fx", "v\x1fw=z"}});
  const auto d = log::decode(payload);
  CHECK(d.message == "a fake=1");
  REQUIRE(d.fields.size() == 1);
  CHECK(d.fields[0].first == "k_ey_x");
  CHECK(d.fields[0].second == "v w=z");
}

TEST_CASE("a payload without fields is all message") {
  const auto d = log::decode("plain spdlog line, with = signs");
  CHECK(d.message == "plain spdlog line, with = signs");
  CHECK(d.fields.empty());
}

TEST_CASE("a Logger's context fields come first on every line, replaced by key") {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("test", sink);
  logger->set_pattern("%v");
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);
  log::Logger l(log::Fields{{"controller", "c"}});
  l.with("job", "ns/a").with("job", "ns/b").log(log::Level::info, "hello", {{"reconcileID", "r"}});
  l.debug("dropped {}", 1);  // below the logger's level
  spdlog::set_default_logger(previous);
  const std::string line = out.str().substr(0, out.str().size() - 1);  // without the newline
  const auto d = log::decode(line);
  CHECK(d.message == "hello");
  REQUIRE(d.fields.size() == 3);
  CHECK(d.fields[0].first == "controller");
  CHECK(d.fields[1] == std::pair<std::string_view, std::string_view>{"job", "ns/b"});
  CHECK(d.fields[2].first == "reconcileID");
  CHECK(out.str().find("dropped") == std::string::npos);
}

TEST_CASE("a throttled problem is reported at once, then once per interval with the count in between") {
  log::Throttle t(30s);
  const log::Throttle::Time t0{};
  auto first = t.occur("tls", t0);
  REQUIRE(first);
  CHECK(first->repeats == 0);
  CHECK(first->suffix().empty());
  for (int i = 1; i <= 5; ++i) CHECK_FALSE(t.occur("tls", t0 + i * 1s));
  CHECK(t.occur("other", t0 + 6s));  // another cause has its own budget
  auto second = t.occur("tls", t0 + 31s);
  REQUIRE(second);
  CHECK(second->repeats == 5);
  CHECK(second->suffix() == " (repeated 5 times in the last 31s)");
  CHECK_FALSE(t.occur("tls", t0 + 32s));
}

TEST_CASE("a cleared problem is reported at once when it comes back") {
  log::Throttle t(30s);
  const log::Throttle::Time t0{};
  REQUIRE(t.occur("404", t0));
  CHECK_FALSE(t.occur("404", t0 + 1s));
  CHECK(t.clear("404") == 2u);
  CHECK_FALSE(t.active("404"));
  CHECK_FALSE(t.clear("404"));
  CHECK(t.occur("404", t0 + 2s));
}

TEST_CASE("a throttle remembers a bounded number of keys") {
  log::Throttle t(30s, 2);
  const log::Throttle::Time t0{};
  REQUIRE(t.occur("a", t0));
  REQUIRE(t.occur("b", t0));
  REQUIRE(t.occur("c", t0));  // forgets "a"
  CHECK_FALSE(t.active("a"));
  CHECK(t.occur("a", t0 + 1s));  // so "a" is new again
}

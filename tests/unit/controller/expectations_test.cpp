#include <catch2/catch.hpp>

#include "core/controller/expectations.h"

using unitrain::controller::Expectations;
using unitrain::kube::FakeClock;

TEST_CASE("expectations: unknown keys are satisfied, raised ones until observed") {
  FakeClock clock;
  Expectations e(clock);
  const auto key = Expectations::pods_key("ns", "job", "worker");
  CHECK(key == "ns/job/worker/pods");
  CHECK(e.satisfied(key));
  e.expect_creations(key, 2);
  CHECK_FALSE(e.satisfied(key));
  e.creation_observed(key);
  CHECK_FALSE(e.satisfied(key));
  CHECK(e.pending(key).adds == 1);
  e.creation_observed(key);
  CHECK(e.satisfied(key));
}

TEST_CASE("expectations: the keys are training-operator's, joined from long names as from short ones") {
  CHECK(Expectations::pods_key("ns", "job", "worker") == "ns/job/worker/pods");
  CHECK(Expectations::services_key("ns", "job", "master") == "ns/job/master/services");
  CHECK(Expectations::job_key("ns", "job") == "ns/job/job");
  const std::string ns(40, 'n'), job(63, 'j');
  CHECK(Expectations::pods_key(ns, job, "launcher") == ns + "/" + job + "/launcher/pods");
  CHECK(Expectations::job_key("", "") == "//job");
}

TEST_CASE("expectations: deletions count separately and observations without a record are ignored") {
  FakeClock clock;
  Expectations e(clock);
  const auto key = Expectations::services_key("ns", "job", "master");
  e.deletion_observed(key);
  CHECK(e.satisfied(key));
  CHECK(e.pending(key).deletes == 0);
  e.expect_deletions(key, 1);
  e.creation_observed(key);  // a creation does not satisfy a pending deletion
  CHECK_FALSE(e.satisfied(key));
  e.deletion_observed(key);
  CHECK(e.satisfied(key));
}

TEST_CASE("expectations: expire after five minutes so a lost event cannot wedge a job") {
  FakeClock clock;
  Expectations e(clock);
  const auto key = Expectations::pods_key("ns", "job", "worker");
  e.expect_creations(key, 1);
  clock.advance(std::chrono::minutes(5));
  CHECK_FALSE(e.satisfied(key));
  clock.advance(std::chrono::seconds(1));
  CHECK(e.satisfied(key));
  e.set(key, 1, 0);  // a new round starts a new timeout
  CHECK_FALSE(e.satisfied(key));
}

TEST_CASE("expectations: forget_prefix drops every key of one job only") {
  FakeClock clock;
  Expectations e(clock);
  e.expect_creations("ns/job/worker/pods", 1);
  e.expect_creations("ns/job/master/services", 1);
  e.expect_creations("ns/job2/worker/pods", 1);
  e.forget_prefix("ns/job/");
  CHECK(e.satisfied("ns/job/worker/pods"));
  CHECK(e.satisfied("ns/job/master/services"));
  CHECK_FALSE(e.satisfied("ns/job2/worker/pods"));
}

TEST_CASE("expectations: a fulfilled expectation and a seen version are dropped, so finished jobs hold no records") {
  FakeClock clock;
  Expectations e(clock);
  const auto pods = Expectations::pods_key("ns", "job", "worker");
  const auto services = Expectations::services_key("ns", "job", "worker");
  const auto job = Expectations::job_key("ns", "job");
  e.expect_creations(pods, 2);
  e.expect_deletions(services, 1);
  e.expect_version(job, "7");
  CHECK(e.size() == 3);
  e.creation_observed(pods);
  CHECK(e.size() == 3);
  e.creation_observed(pods);
  e.deletion_observed(services);
  CHECK(e.version_seen(job, "7"));
  CHECK(e.size() == 0);
  CHECK(e.satisfied(pods));
  CHECK(e.satisfied(services));
  e.set(pods, 0, 0);  // nothing expected: nothing to hold
  CHECK(e.size() == 0);
}

TEST_CASE("expectations: an observation beyond what was expected does not satisfy the next expectation early") {
  FakeClock clock;
  Expectations e(clock);
  const auto key = Expectations::pods_key("ns", "job", "worker");
  e.expect_creations(key, 1);
  e.creation_observed(key);
  e.creation_observed(key);  // a second ADD (someone else's pod, a relist): nothing was waiting for it
  e.expect_creations(key, 1);
  CHECK_FALSE(e.satisfied(key));
  CHECK(e.pending(key).adds == 1);
  e.creation_observed(key);
  CHECK(e.satisfied(key));
}

TEST_CASE("expectations: an observation says whether it was one of ours") {
  FakeClock clock;
  Expectations e(clock);
  const auto key = Expectations::pods_key("ns", "job", "worker");
  CHECK_FALSE(e.deletion_observed(key));  // nothing expected: someone else's delete
  e.expect_deletions(key, 1);
  CHECK_FALSE(e.creation_observed(key));  // a creation nobody expected, beside our pending delete
  CHECK(e.deletion_observed(key));
  CHECK_FALSE(e.deletion_observed(key));  // ours was already seen: this one is someone else's
  e.expect_creations(key, 1);
  CHECK(e.creation_observed(key));
}

TEST_CASE("expectations: a job whose children vanished stays marked until cleared, forgotten or its job goes") {
  FakeClock clock;
  Expectations e(clock);
  const auto job = Expectations::job_key("ns", "job");
  const auto other = Expectations::job_key("ns", "job2");
  CHECK_FALSE(e.vanished(job));
  e.children_vanished(job);
  e.children_vanished(job);  // one mark, however many children went
  e.children_vanished(other);
  CHECK(e.vanished(job));
  CHECK(e.size() == 2);
  clock.advance(std::chrono::hours(1));  // no timeout: only a confirmation clears it
  CHECK(e.vanished(job));
  e.clear_vanished(job);
  CHECK_FALSE(e.vanished(job));
  CHECK(e.vanished(other));
  e.children_vanished(job);
  e.forget_prefix("ns/job/");  // the job was deleted
  CHECK_FALSE(e.vanished(job));
  CHECK(e.vanished(other));
  e.forget(other);
  CHECK_FALSE(e.vanished(other));
  CHECK(e.size() == 0);
}

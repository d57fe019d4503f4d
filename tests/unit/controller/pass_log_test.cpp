#include <catch2/catch.hpp>

#include "core/controller/pass_log.h"

using unitrain::controller::PassLog;

TEST_CASE("pass log: a verb and a resource name one action, its subjects listed together") {
  PassLog log(true);
  log.note("created", "pods", "job-worker-0");
  log.note("created", "services", "job-worker-0");
  log.note("created", "pods", std::string("job-worker-1"));
  log.notef("wrote the status", "resourceVersion {}", 42);
  CHECK(log.summary() ==
        "created pods: job-worker-0, job-worker-1; created services: job-worker-0; wrote the status: resourceVersion 42");
}

TEST_CASE("pass log: a disabled log keeps nothing") {
  PassLog log(false);
  log.note("created", "pods", "job-worker-0");
  log.note("skipped", "the job is being deleted");
  log.notef("waiting for", "expectation {}", "ns/job/worker/pods");
  CHECK(log.summary().empty());
}

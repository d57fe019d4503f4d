// Replays the seed corpus and hostile reviews through the webhook fuzz body on every compiler:
// a broken invariant traps, which fails this test.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "tests/fuzz/webhook/fuzz_body.h"

namespace fs = std::filesystem;
using unitrain::fuzz::WebhookAnswer;

namespace {

WebhookAnswer run(std::string_view input) {
  return unitrain::fuzz::webhook_one_input(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

}  // namespace

TEST_CASE("replay: the webhook seed corpus keeps every answer well-formed and closed") {
  const fs::path dir = fs::path(UNITRAIN_SOURCE_DIR) / "tests/fuzz/webhook/corpus";
  std::set<WebhookAnswer> seen;
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    INFO(entry.path());
    seen.insert(run(ss.str()));
  }
  // The seeds reach every kind of answer, so fuzzing starts from each of them.
  CHECK(seen == std::set<WebhookAnswer>{WebhookAnswer::Allowed, WebhookAnswer::Denied, WebhookAnswer::Refused,
                                        WebhookAnswer::Converted, WebhookAnswer::ConversionBadRequest,
                                        WebhookAnswer::NotFound});
}

TEST_CASE("replay: hostile bodies on every endpoint") {
  const std::string bodies[] = {
      "", "null", "[]", "{}", "\"x\"", "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\"}}",
      R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE","object":{}}})",
      R"({"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"c","desiredAPIVersion":"a/b","objects":[{},1,null]}})",
      R"({"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":"2"}},"elasticPolicy":[]}})",
      R"({"apiVersion":"kubeflow.org/v1","kind":"TFJob","metadata":{"name":7},"spec":{"runPolicy":{"backoffLimit":1e99},"tfReplicaSpecs":null}})",
      R"({"apiVersion":"kubeflow.org/v2beta1","kind":"MPIJob","spec":{"mpiReplicaSpecs":{"Launcher":null,"Worker":{"replicas":-2147483648}}}})",
      R"({"apiVersion":"kubeflow.org/v1","kind":"MPIJob","spec":{"cleanPodPolicy":5,"runPolicy":{"cleanPodPolicy":null}}})",
  };
  // Every selector: each endpoint, raw and as the object of a CREATE and an UPDATE review. None of
  // these is a review an endpoint may allow as it stands, except the wrapped objects.
  std::map<WebhookAnswer, int> answers;
  for (int selector = 0; selector < 256; ++selector) {
    for (const std::string& body : bodies) {
      std::string input(1, static_cast<char>(selector));
      input += body;
      INFO(selector << " " << body);
      const WebhookAnswer a = run(input);
      ++answers[a];
      if ((selector & 0x80) == 0) CHECK(a != WebhookAnswer::Allowed);
    }
  }
  CHECK(answers[WebhookAnswer::Refused] > 0);
  CHECK(answers[WebhookAnswer::Denied] > 0);
  CHECK(answers[WebhookAnswer::ConversionFailed] > 0);
  CHECK(answers[WebhookAnswer::ConversionBadRequest] > 0);
}

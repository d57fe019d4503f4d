// unitrain-conformance MODULE.so FIXTURE.yaml...: loads the module through the plugin ABI, as
// --framework-module does, and checks each fixture (conformance.h describes them). Exit 0 when
// every fixture holds, 1 when one does not (each failure printed, naming fixture and check), 2
// when the module or a fixture cannot be read.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "cmd/unitrain-conformance/conformance.h"
#include "core/framework/abi/plugin_host.h"

int main(int argc, char** argv) {
  using namespace unitrain;
  if (argc < 3) {
    std::fprintf(stderr, "usage: unitrain-conformance MODULE.so FIXTURE.yaml...\n");
    return 2;
  }
  auto registration = framework::abi::load_module(argv[1]);
  if (!registration) {
    std::fprintf(stderr, "unitrain-conformance: %s\n", registration.error().message.c_str());
    return 2;
  }
  int failed = 0;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i]);
    if (!in) {
      std::fprintf(stderr, "unitrain-conformance: %s cannot be read\n", argv[i]);
      return 2;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto docs = json::parse_yaml(text.str());
    if (!docs || docs->size() != 1) {
      std::fprintf(stderr, "unitrain-conformance: %s: %s\n", argv[i],
                   docs ? "a fixture is exactly one YAML document" : docs.error().message.c_str());
      return 2;
    }
    auto failures = conformance::run_fixture(*registration, (*docs)[0].root());
    if (!failures) {
      std::fprintf(stderr, "unitrain-conformance: %s: %s\n", argv[i], failures.error().message.c_str());
      return 2;
    }
    for (const auto& f : *failures) std::printf("FAIL %s: %s\n", argv[i], f.c_str());
    if (failures->empty()) std::printf("ok %s\n", argv[i]);
    else ++failed;
  }
  std::printf("%d of %d fixtures hold for %s (%s)\n", argc - 2 - failed, argc - 2, registration->descriptor.name.c_str(),
              argv[1]);
  return failed == 0 ? 0 : 1;
}

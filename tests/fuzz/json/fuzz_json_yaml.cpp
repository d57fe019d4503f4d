// libFuzzer entry point: clang++ -fsanitize=fuzzer. Run: build/tests/fuzz_json_yaml corpus/
#include "tests/fuzz/json/fuzz_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  unitrain::fuzz::json_yaml_one_input(data, size);
  return 0;
}

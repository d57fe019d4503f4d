// libFuzzer entry point: clang++ -fsanitize=fuzzer. Run: build/tests/fuzz_webhook corpus/
#include "tests/fuzz/webhook/fuzz_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)unitrain::fuzz::webhook_one_input(data, size);
  return 0;
}

// Replays fuzz inputs through a target's LLVMFuzzerTestOneInput without libFuzzer, on any
// compiler: every build's test suite runs each committed corpus this way (fast), and the same
// binary reproduces one saved crash input. Arguments are files or directories of files. A broken
// invariant traps and a sanitizer report aborts, either of which fails the test; a corpus with
// no input fails too, so a missing directory cannot pass.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

void replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::printf("%s (%zu bytes)\n", file.c_str(), bytes.size());
  std::fflush(stdout);  // the last line printed names the input that crashed
  // A copy in its own allocation, so ASan sees a read past the end as libFuzzer would.
  std::vector<uint8_t> copy(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(copy.data(), copy.size());
}

}  // namespace

int main(int argc, char** argv) {
  size_t inputs = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    std::vector<fs::path> files;
    if (fs::is_directory(arg)) {
      for (const auto& entry : fs::directory_iterator(arg))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else if (fs::is_regular_file(arg)) {
      files.push_back(arg);
    } else {
      std::fprintf(stderr, "replay: %s is neither a file nor a directory\n", argv[i]);
      return 2;
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) replay(f);
    inputs += files.size();
  }
  std::printf("replayed %zu inputs\n", inputs);
  if (inputs == 0) {
    std::fprintf(stderr, "replay: no input given\n");
    return 1;
  }
  return 0;
}

// Runs the fuzz target's entry function over files without libFuzzer, so
// every crash ever found (tools/fuzz/regressions/) and the seed corpus are
// checked by every build, g++ included. Arguments: files or directories.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

void run_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && !in.eof()) {
    std::cerr << "cannot read " << p << "\n";
    std::exit(2);
  }
  std::cerr << "replaying " << p.filename().string() << " (" << bytes.size() << " bytes)\n";
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg(argv[i]);
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(arg)) {
      for (const auto& e : std::filesystem::directory_iterator(arg)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else {
      files.push_back(arg);
    }
    std::sort(files.begin(), files.end());  // a stable order, so a failure names the same file every time
    for (const auto& f : files) {
      run_file(f);
      ++runs;
    }
  }
  std::cout << runs << " inputs replayed, none crashed\n";
  return runs > 0 ? 0 : 1;
}

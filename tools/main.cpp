// The `tandem` command-line program.
#include <cstring>
#include <iostream>

#include "tandem/tandem.h"

int main(int argc, char** argv) {
  using namespace tandem;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::cout << "usage: tandem <command>\n  demo   a tour of what works\n";
    return argc < 2 ? 2 : 0;
  }
  Tensor a = arange(6).view({2, 3});
  std::cout << a.sizes() << "\n";
  return 0;
}

#pragma once
// What the tests of the `tandem` program share: whether Debian's Fashion-MNIST is
// installed (REQUIRE_DATA skips a test when it is not), and one scratch directory per
// test binary for run outputs, removed when the binary exits.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.h"
#include "tandem/data/dataset.h"

namespace tandem::test {

/// True when the Fashion-MNIST test images are at the Debian package's path.
inline bool have_fashion_mnist() {
  return std::filesystem::exists(std::string(data::datasets::FashionMNIST::kDefaultRoot) +
                                 "/t10k-images-idx3-ubyte.gz");
}

/// The scratch directory of this test binary (made on first use).
inline TempDir& scratch() {
  static TempDir dir;
  return dir;
}

}  // namespace tandem::test

#define REQUIRE_DATA()                                                                            \
  if (!::tandem::test::have_fashion_mnist())                                                      \
  GTEST_SKIP() << "Fashion-MNIST is missing (Debian package dataset-fashion-mnist; ./run installs " \
                  "it)"

#include <gtest/gtest.h>

#include "tandem/tandem.h"

using namespace tandem;

TEST(Smoke, ArangeViewAdd) {
  Tensor a = arange(6).view({2, 3});
  EXPECT_EQ(a.sizes().vec(), (DimVector{2, 3}));
  Tensor b = a + a;
  EXPECT_EQ(b.dtype(), kInt64);
  EXPECT_EQ(b.select(1, 2).select(0, 1).item<int64_t>(), 10);
  Tensor c = a.to(kFloat32) * 0.5;
  EXPECT_EQ(c.dtype(), kFloat32);
  EXPECT_FLOAT_EQ(c[1][2].item<float>(), 2.5f);
}

// TensorDataset, collate, gather_rows, Normalize, TransformDataset, MNIST/FashionMNIST.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "dataset/idx_files.h"
#include "tandem/tandem.h"

using namespace tandem;
using namespace tandem::data;
using namespace tandem::test;

namespace {
template <typename E>
void expect_error_with(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

std::vector<float> floats(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}
}  // namespace

TEST(TensorDataset, GetAndGetBatch) {
  Tensor x = arange(24).to(kFloat32).view({6, 2, 2});
  Tensor y = arange(6).mul(10);
  TensorDataset ds(x, y);
  EXPECT_EQ(ds.size(), 6);
  Example e = ds.get(4);
  EXPECT_EQ(e.data.sizes().vec(), (DimVector{2, 2}));
  EXPECT_FLOAT_EQ(e.data[1][0].item<float>(), 18.0f);
  EXPECT_EQ(e.target.item<int64_t>(), 40);
  Batch b = ds.get_batch({5, 0, 5});
  EXPECT_EQ(b.data.sizes().vec(), (DimVector{3, 2, 2}));
  EXPECT_EQ(b.target.sizes().vec(), (DimVector{3}));
  EXPECT_FLOAT_EQ(b.data[0][0][0].item<float>(), 20.0f);
  EXPECT_FLOAT_EQ(b.data[1][1][1].item<float>(), 3.0f);
  EXPECT_EQ(b.target[2].item<int64_t>(), 50);
  EXPECT_THROW(ds.get(6), IndexError);
  EXPECT_THROW(ds.get(-1), IndexError);
  EXPECT_THROW(ds.get_batch({1, 6}), IndexError);
  EXPECT_THROW(ds.get_batch({}), ValueError);
  EXPECT_THROW(TensorDataset(x, arange(5)), ShapeError);
  EXPECT_THROW(TensorDataset(scalar_tensor(1.0)), ShapeError);
  // Without targets.
  TensorDataset unlabeled(x);
  EXPECT_FALSE(unlabeled.get(0).target.defined());
  EXPECT_FALSE(unlabeled.get_batch({0, 1}).target.defined());
}

TEST(TensorDataset, NonContiguousDataGathersLogicalRows) {
  Tensor base = arange(12).view({3, 4});
  Tensor xt = base.t();  // [4, 3], rows not contiguous
  TensorDataset ds(xt, arange(4));
  Batch b = ds.get_batch({3, 1});
  EXPECT_EQ(b.data.sizes().vec(), (DimVector{2, 3}));
  EXPECT_EQ(b.data[0][2].item<int64_t>(), 11);  // base[2][3]
  EXPECT_EQ(b.data[1][0].item<int64_t>(), 1);   // base[0][1]
  // gather_rows on a strided (every other row) view keeps the view's rows.
  Tensor every_other = arange(10).view({5, 2}).slice(0, 0, 5, 2);
  Tensor g = gather_rows(every_other, {2, 0});
  EXPECT_EQ(g[0][1].item<int64_t>(), 9);
  EXPECT_EQ(g[1][0].item<int64_t>(), 0);
  EXPECT_EQ(gather_rows(arange(3), {}).sizes().vec(), (DimVector{0}));
  EXPECT_THROW(gather_rows(scalar_tensor(1.0), {0}), ValueError);
}

TEST(Collate, StacksAndChecks) {
  Batch b = collate({{ones({2}), scalar_tensor(int64_t{3})}, {zeros({2}), scalar_tensor(int64_t{4})}});
  EXPECT_EQ(b.data.sizes().vec(), (DimVector{2, 2}));
  EXPECT_EQ(b.target.sizes().vec(), (DimVector{2}));
  EXPECT_EQ(b.target[1].item<int64_t>(), 4);
  EXPECT_FLOAT_EQ(b.data[0][1].item<float>(), 1.0f);
  EXPECT_THROW(collate({}), ValueError);
  expect_error_with<ShapeError>([] { collate({{ones({2}), Tensor()}, {ones({3}), Tensor()}}); }, "example 1");
  expect_error_with<TypeError>([] { collate({{ones({2}), Tensor()}, {ones({2}, kFloat64), Tensor()}}); }, "dtype");
  expect_error_with<ValueError>([] { collate({{ones({2}), ones({1})}, {ones({2}), Tensor()}}); }, "target");
}

// A dataset without a get_batch override: the default collates get() results.
class Squares : public Dataset {
 public:
  int64_t size() const override { return 5; }
  Example get(int64_t i) const override {
    return {full({2}, static_cast<double>(i * i), kFloat32), scalar_tensor(i)};
  }
};

TEST(Dataset, DefaultGetBatchCollates) {
  Squares ds;
  Batch b = ds.get_batch({4, 2});
  EXPECT_EQ(b.data.sizes().vec(), (DimVector{2, 2}));
  EXPECT_FLOAT_EQ(b.data[0][1].item<float>(), 16.0f);
  EXPECT_EQ(b.target[1].item<int64_t>(), 2);
  EXPECT_THROW(ds.get_batch({5}), IndexError);
}

// Expected bits from PyTorch 1.13: x.sub(mean.view(-1, 1, 1)).div(std.view(-1, 1, 1)), which
// is what torchvision.transforms.Normalize computes.
const std::vector<float> kImage = {0.1f, 0.7f, 0.3f, 0.9f, 0.05f, 0.55f, 0.95f, 0.25f, 0.0f, 1.0f, 0.333f, 0.666f};
const std::vector<double> kMean = {0.485, 0.456, 0.406}, kStd = {0.229, 0.224, 0.225};
const std::vector<uint32_t> kTorchF32 = {0xbfd7324f, 0x3f70596d, 0xbf4ecfee, 0x3fe7f70d, 0xbfe7ffff, 0x3ed6db6f,
                                         0x400d2492, 0xbf6b6db6, 0xbfe6f809, 0x4028f5c3, 0xbea61d93, 0x3f93e940};
const std::vector<uint16_t> kTorchF16 = {0xBEBB, 0x3B84, 0xBA77, 0x3F3F, 0xBF40, 0x36B2,
                                         0x4069, 0xBB5C, 0xBF38, 0x4147, 0xB531, 0x3C9F};

TEST(Normalize, PerChannelMatchesPyTorchBitForBit) {
  transforms::Normalize norm(kMean, kStd);
  Tensor img = from_vector(kImage, {3, 2, 2});
  Tensor y = norm(img);
  ASSERT_EQ(y.sizes().vec(), (DimVector{3, 2, 2}));
  ASSERT_EQ(y.dtype(), kFloat32);
  for (size_t i = 0; i < kImage.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, y.data_ptr<float>() + i, 4);
    EXPECT_EQ(bits, kTorchF32[i]) << "element " << i;
  }
  Tensor yh = norm(img.to(kFloat16));
  ASSERT_EQ(yh.dtype(), kFloat16);
  for (size_t i = 0; i < kImage.size(); ++i) EXPECT_EQ(yh.data_ptr<Half>()[i].bits, kTorchF16[i]) << "element " << i;
  // A batch [B, C, H, W] normalises each example alike; non-contiguous input is fine.
  Tensor batch = from_vector(kImage, {1, 3, 2, 2}).expand({2, 3, 2, 2});
  Tensor yb = norm(batch);
  EXPECT_EQ(floats(yb[1]), floats(y));
  EXPECT_EQ(floats(yb[0]), floats(y));
  EXPECT_EQ(img[0][0][0].item<float>(), 0.1f) << "not in place";
}

TEST(Normalize, ScalarAnyShapeAndErrors) {
  Tensor x = from_vector(kImage, {12});
  std::vector<float> got = floats(transforms::Normalize(0.5, 0.25)(x));
  EXPECT_FLOAT_EQ(got[0], -1.6f);
  EXPECT_FLOAT_EQ(got[9], 2.0f);
  EXPECT_EQ(got[7], -1.0f);
  Tensor d = transforms::Normalize(1.0, 2.0)(from_vector(std::vector<double>{3.0, -1.0}, {2}));
  EXPECT_EQ(d.dtype(), kFloat64);
  EXPECT_DOUBLE_EQ(d[0].item<double>(), 1.0);
  EXPECT_DOUBLE_EQ(d[1].item<double>(), -1.0);
  EXPECT_THROW(transforms::Normalize(0.0, 0.0), ValueError);
  EXPECT_THROW(transforms::Normalize({0.1, 0.2}, {0.1, 0.2, 0.3}), ValueError);
  EXPECT_THROW(transforms::Normalize(std::vector<double>{}, std::vector<double>{1.0}), ValueError);
  transforms::Normalize per_channel(kMean, kStd);
  EXPECT_THROW(per_channel(arange(12).view({3, 2, 2})), TypeError);
  EXPECT_THROW(per_channel(ones({2, 2, 2})), ShapeError);
  EXPECT_THROW(per_channel(ones({3, 4})), ShapeError);
  EXPECT_EQ(per_channel(ones({3, 0, 2})).sizes().vec(), (DimVector{3, 0, 2}));
}

TEST(TransformDataset, BatchedAndPerExampleAgree) {
  auto base = std::make_shared<TensorDataset>(from_vector(kImage, {1, 3, 2, 2}).expand({4, 3, 2, 2}), arange(4));
  TransformDataset batched(base, transforms::Normalize(kMean, kStd));
  TransformDataset single(base, transforms::Normalize(kMean, kStd), /*batched=*/false);
  Batch a = batched.get_batch({3, 1}), b = single.get_batch({3, 1});
  EXPECT_EQ(floats(a.data), floats(b.data));
  EXPECT_EQ(a.target[0].item<int64_t>(), 3);
  EXPECT_EQ(b.target[1].item<int64_t>(), 1);
  EXPECT_EQ(floats(batched.get(2).data), floats(a.data[0]));
  EXPECT_EQ(batched.size(), 4);
  EXPECT_THROW(TransformDataset(nullptr, transforms::Normalize(0, 1)), ValueError);
  EXPECT_THROW(TransformDataset(base, Transform()), ValueError);
}

TEST(MNIST, LoadsAFakeSplitFromIdxFiles) {
  TempDir dir;
  write_mnist_split(dir.path(), "train", 4, 3, {3, 1, 4, 1, 5});
  write_mnist_split(dir.path(), "t10k", 4, 3, {9, 2}, /*gz=*/false);
  datasets::MNIST train(dir.path(), true), test(dir.path(), false);
  EXPECT_EQ(train.size(), 5);
  EXPECT_EQ(test.size(), 2);
  EXPECT_TRUE(train.train());
  EXPECT_FALSE(test.train());
  EXPECT_EQ(train.images().dtype(), kUInt8);
  EXPECT_EQ(train.images().sizes().vec(), (DimVector{5, 4, 3}));
  Example e = train.get(2);
  EXPECT_EQ(e.data.dtype(), kFloat32);
  EXPECT_EQ(e.data.sizes().vec(), (DimVector{1, 4, 3}));
  EXPECT_EQ(e.data[0][1][2].item<float>(), static_cast<float>(2 * 7 + 1 * 3 + 2) / 255.0f);
  EXPECT_EQ(e.target.dtype(), kInt64);
  EXPECT_EQ(e.target.item<int64_t>(), 4);
  Batch b = train.get_batch({4, 2});
  EXPECT_EQ(b.data.sizes().vec(), (DimVector{2, 1, 4, 3}));
  EXPECT_EQ(floats(b.data[1]), floats(e.data));
  EXPECT_EQ(b.target.dtype(), kInt64);
  EXPECT_EQ(b.target[0].item<int64_t>(), 5);
  EXPECT_EQ(test.get(0).target.item<int64_t>(), 9);
  EXPECT_EQ(train.targets().dtype(), kInt64);
  EXPECT_EQ(train.targets()[3].item<int64_t>(), 1);
  EXPECT_THROW(train.get(5), IndexError);
  EXPECT_THROW(train.get_batch({0, -1}), IndexError);
}

TEST(MNIST, ClearErrorsForMissingOrInconsistentData) {
  TempDir dir;
  expect_error_with<RuntimeError>([&] { datasets::MNIST(dir.file("absent")); }, dir.file("absent") + " does not exist");
  {  // a file where the directory should be: said so (it was reported as missing)
    std::ofstream(dir.file("a-file")) << "x";
    expect_error_with<RuntimeError>([&] { datasets::MNIST(dir.file("a-file")); }, dir.file("a-file") + " is not a directory");
  }
  expect_error_with<RuntimeError>([&] { datasets::MNIST m(dir.path()); }, "no train-images-idx3-ubyte.gz");
  // A directory of the user's own: where the files go, no Debian package hint (that
  // hint is for the default root only, where the package puts them).
  expect_error_with<RuntimeError>([&] { datasets::FashionMNIST f(dir.path()); },
                                  "put Fashion-MNIST's IDX files (train-images-idx3-ubyte.gz, ...) there");
  try {
    datasets::FashionMNIST f(dir.path());
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()).find("Debian"), std::string::npos) << e.what();
  }
  // A directory where an IDX file should be: said so, not "missing".
  std::filesystem::create_directories(dir.file("train-images-idx3-ubyte.gz"));
  expect_error_with<RuntimeError>([&] { datasets::MNIST m(dir.path()); },
                                  dir.file("train-images-idx3-ubyte.gz") + " is a directory, expected a file");
  std::filesystem::remove(dir.file("train-images-idx3-ubyte.gz"));
  expect_error_with<RuntimeError>([&] { datasets::FashionMNIST f(dir.path(), false); }, dir.path());
  expect_error_with<NotImplementedError>([&] { datasets::FashionMNIST f(dir.path(), true, /*download=*/true); },
                                         "dataset-fashion-mnist");
  // A label outside 0..9.
  write_mnist_split(dir.path(), "train", 2, 2, {1, 10});
  expect_error_with<RuntimeError>([&] { datasets::MNIST m(dir.path()); }, "label 1 is 10");
  // Image and label counts differ.
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), idx_u8({3}, {1, 2, 3}));
  expect_error_with<RuntimeError>([&] { datasets::MNIST m(dir.path()); }, "has 3 labels but");
  // Labels file that is really an image file.
  write_gz(dir.file("train-labels-idx1-ubyte.gz"), idx_u8({2, 1, 1}, {1, 2}));
  expect_error_with<RuntimeError>([&] { datasets::MNIST m(dir.path()); }, "expected uint8 [N]");
  // A corrupt file reports read_idx's file + offset.
  write_gz(dir.file("train-images-idx3-ubyte.gz"), idx_u8({2, 2, 2}, {1, 2, 3}));
  expect_error_with<RuntimeError>([&] { datasets::MNIST m(dir.path()); }, "train-images-idx3-ubyte.gz: offset 19");
}

TEST(FashionMNIST, RealDataShapesRangesAndLabels) {
  if (!std::filesystem::exists(std::string(datasets::FashionMNIST::kDefaultRoot) + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << datasets::FashionMNIST::kDefaultRoot << " is missing (Debian package dataset-fashion-mnist)";
  datasets::FashionMNIST train;
  datasets::FashionMNIST test(datasets::FashionMNIST::kDefaultRoot, false);
  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(test.size(), 10000);
  EXPECT_EQ(train.images().nbytes(), 60000 * 784) << "images stay uint8 in memory";
  EXPECT_EQ(datasets::FashionMNIST::classes().size(), 10u);
  EXPECT_EQ(datasets::FashionMNIST::classes()[9], "Ankle boot");
  Example e = train.get(0);
  EXPECT_EQ(e.data.sizes().vec(), (DimVector{1, 28, 28}));
  std::vector<float> px = floats(e.data);
  float lo = *std::min_element(px.begin(), px.end()), hi = *std::max_element(px.begin(), px.end());
  EXPECT_GE(lo, 0.0f);
  EXPECT_LE(hi, 1.0f);
  EXPECT_GT(hi, 0.5f) << "an image is not blank";
  EXPECT_EQ(e.target.item<int64_t>(), 9) << "the first training image is an ankle boot";
  Batch b = test.get_batch({0, 9999});
  EXPECT_EQ(b.data.sizes().vec(), (DimVector{2, 1, 28, 28}));
  EXPECT_GE(b.target[1].item<int64_t>(), 0);
  EXPECT_LT(b.target[1].item<int64_t>(), 10);
}

TEST(Subset, MapsIndicesAndChecksRanges) {
  auto base = std::make_shared<data::TensorDataset>(arange(10, kFloat32).view({10, 1}), arange(10));
  data::Subset s(base, {7, 2, 2});
  EXPECT_EQ(s.size(), 3);
  EXPECT_EQ(s.get(0).data.item<float>(), 7.0f);
  data::Batch b = s.get_batch({2, 0});
  EXPECT_EQ(b.data.view({2})[0].item<float>(), 2.0f);
  EXPECT_EQ(b.target[1].item<int64_t>(), 7);
  EXPECT_THROW(s.get(3), IndexError);
  EXPECT_THROW(s.get_batch({0, -1}), IndexError);
  EXPECT_THROW(data::Subset(base, {10}), IndexError);
  EXPECT_THROW(data::Subset(nullptr, {0}), ValueError);
}

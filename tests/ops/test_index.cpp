// The indexing API (Tensor::index / index_put_ with TensorIndex, PyTorch C++ frontend
// semantics) and index-family behaviour the oracle JSON cannot express: views vs copies,
// aliasing, data left untouched by failed writes, error messages, big (parallel) inputs.
// Expected values come from PyTorch 1.13 (x = torch.arange(24).view(2, 3, 4)).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "support/tensor_json.h"

using namespace tandem;
using namespace tandem::indexing;

namespace {

Tensor x24() { return arange(24).view({2, 3, 4}); }
std::vector<double> vals(const Tensor& t) { return oracle::to_doubles(t); }
std::vector<double> iota_d(int n, double start = 0) {
  std::vector<double> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), start);
  return v;
}

#define EXPECT_TENSOR(t, shape, ...)                                  \
  do {                                                                \
    Tensor t_ = (t);                                                  \
    EXPECT_EQ(t_.sizes().vec(), (std::vector<int64_t> shape));        \
    EXPECT_EQ(vals(t_), (std::vector<double> __VA_ARGS__));           \
  } while (0)

// Runs f, expects exception type E whose message contains `part`.
template <typename E, typename F>
void expect_error(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "expected an exception containing \"" << part << "\"";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// ---------------------------------------------------------------- basic indexing: views
TEST(Indexing, IntegerSelectsAView) {
  Tensor x = x24();
  Tensor y = x.index({0});
  EXPECT_TRUE(y.is_alias_of(x));
  EXPECT_TENSOR(y, ({3, 4}), (iota_d(12)));
  EXPECT_TENSOR(x.index({-1, -1, -1}), ({}), ({23}));
  EXPECT_TENSOR(x.index({1, 2}), ({4}), ({20, 21, 22, 23}));
}

TEST(Indexing, SlicesAreViews) {
  Tensor x = x24();
  Tensor y = x.index({Slice(), 1});
  EXPECT_TRUE(y.is_alias_of(x));
  EXPECT_TENSOR(y, ({2, 4}), ({4, 5, 6, 7, 16, 17, 18, 19}));
  EXPECT_TENSOR(x.index({Slice(1, None), Slice(None, None, 2)}), ({1, 2, 4}), ({12, 13, 14, 15, 20, 21, 22, 23}));
  EXPECT_TENSOR(x.index({0, 0, Slice(None, None, 3)}), ({2}), ({0, 3}));
  EXPECT_TENSOR(x.index({Slice(-2, -1)}), ({1, 3, 4}), (iota_d(12)));
  EXPECT_TENSOR(x.index({0, Slice(1, 100), 0}), ({2}), ({4, 8}));  // clamped like Python
  EXPECT_TENSOR(x.index({0, Slice(5, 1), 0}), ({0}), ({}));
  EXPECT_TRUE(x.index({Slice(1, 2), Slice(), Slice(1, 3)}).is_alias_of(x));
}

TEST(Indexing, NoneAndEllipsis) {
  Tensor x = x24();
  Tensor e = x.index({Ellipsis});
  EXPECT_TRUE(e.is_alias_of(x));
  EXPECT_FALSE(e.is_same(x));  // x[...] is a new view, like PyTorch's alias
  EXPECT_EQ(x.index({Ellipsis, None}).sizes().vec(), (std::vector<int64_t>{2, 3, 4, 1}));
  EXPECT_EQ(x.index({None, 0, None}).sizes().vec(), (std::vector<int64_t>{1, 1, 3, 4}));
  EXPECT_EQ(x.index({"...", None, 1}).sizes().vec(), (std::vector<int64_t>{2, 3, 1}));
  EXPECT_TENSOR(x.index({"...", 2}), ({2, 3}), ({2, 6, 10, 14, 18, 22}));
  EXPECT_TENSOR(x.index({1, Ellipsis, 0}), ({3}), ({12, 16, 20}));
  EXPECT_TRUE(x.index({None, Ellipsis, None}).is_alias_of(x));
}

TEST(Indexing, ZeroDimIntegerTensorSelects) {
  Tensor x = x24();
  Tensor y = x.index({scalar_tensor(1)});  // PyTorch: a 0-d integer tensor acts like an int (a view)
  EXPECT_TRUE(y.is_alias_of(x));
  EXPECT_TENSOR(y, ({3, 4}), (iota_d(12, 12)));
}

TEST(Indexing, WritesThroughBasicViews) {
  Tensor x = x24();
  x.index({0, 0}).fill_(100);
  EXPECT_EQ(vals(x.index({0, 0})), (std::vector<double>{100, 100, 100, 100}));
  EXPECT_EQ(vals(x.index({0, 1})), (std::vector<double>{4, 5, 6, 7}));
}

TEST(Indexing, ZeroSizeAndZeroDim) {
  Tensor z = zeros({0, 3});
  EXPECT_EQ(z.index({Slice(), 1}).sizes().vec(), (std::vector<int64_t>{0}));
  EXPECT_THROW(z.index({tensor({2, 0})}), IndexError);  // dim 0 has size 0
  EXPECT_EQ(z.index({Slice(), tensor({2, 0})}).sizes().vec(), (std::vector<int64_t>{0, 2}));
  Tensor s = scalar_tensor(5.0);
  EXPECT_TENSOR(s.index({None}), ({1}), ({5}));
  EXPECT_TENSOR(s.index({Ellipsis}), ({}), ({5}));
  EXPECT_TENSOR(s.index({true}), ({1}), ({5}));
  EXPECT_TENSOR(s.index({false}), ({0}), ({}));
}

// ---------------------------------------------------------------- advanced indexing: copies
TEST(Indexing, AdvancedIndexIsACopy) {
  Tensor x = x24();
  Tensor y = x.index({tensor({0, 1})});
  EXPECT_FALSE(y.is_alias_of(x));
  EXPECT_TENSOR(y, ({2, 3, 4}), (iota_d(24)));
  y.fill_(-1);
  EXPECT_EQ(vals(x)[0], 0);
}

TEST(Indexing, SeparatedAdvancedIndicesGoFirst) {
  Tensor x = x24();
  EXPECT_TENSOR(x.index({tensor({0, 1}), Slice(), tensor({1, 0})}), ({2, 3}), ({1, 5, 9, 12, 16, 20}));
  EXPECT_TENSOR(x.index({Slice(), tensor({0, 1}), None, tensor({1, 0})}), ({2, 2, 1}), ({1, 13, 4, 16}));
  // Unlike NumPy, PyTorch applies an integer as a select first, so it never separates
  // advanced indices: x[0, :, [1, 2]] is [3, 2] (NumPy: [2, 3]).
  EXPECT_TENSOR(x.index({0, Slice(), tensor({1, 2})}), ({3, 2}), ({1, 2, 5, 6, 9, 10}));
  EXPECT_TENSOR(x.index({tensor({0}), Slice(), 1}), ({1, 3}), ({1, 5, 9}));
  EXPECT_TENSOR(x.index({tensor({1, 0}), 2, tensor({3, 3})}), ({2}), ({23, 11}));
}

TEST(Indexing, AdjacentAdvancedIndicesStayInPlace) {
  Tensor x = x24();
  EXPECT_TENSOR(x.index({Slice(), None, tensor({0, 1})}), ({2, 1, 2, 4}),
                ({0, 1, 2, 3, 4, 5, 6, 7, 12, 13, 14, 15, 16, 17, 18, 19}));
  EXPECT_EQ(x.index({tensor({0, 1}), None}).sizes().vec(), (std::vector<int64_t>{2, 1, 3, 4}));
  EXPECT_TENSOR(x.index({Ellipsis, tensor({3, 0})}), ({2, 3, 2}), ({3, 0, 7, 4, 11, 8, 15, 12, 19, 16, 23, 20}));
  Tensor i2 = from_vector<int64_t>({0, 1, 1, 0}, {2, 2});
  Tensor y = x.index({i2});
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 2, 3, 4}));
  EXPECT_EQ(vals(y.index({0, 1})), iota_d(12, 12));
  EXPECT_TENSOR(x.index({from_vector<int64_t>({0, 1}, {2, 1}), tensor({2, 0})}), ({2, 2, 4}),
                ({8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15}));
}

TEST(Indexing, BoolMasks) {
  Tensor x = x24();
  EXPECT_TENSOR(x.index({Slice(), tensor({true, false, true})}), ({2, 2, 4}),
                ({0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 20, 21, 22, 23}));
  Tensor m2 = from_vector<bool>({true, false, true, false, true, false}, {2, 3});
  EXPECT_TENSOR(x.index({m2}), ({3, 4}), ({0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19}));
  EXPECT_TENSOR(x.index({Ellipsis, tensor({true, false, false, true})}), ({2, 3, 2}),
                ({0, 3, 4, 7, 8, 11, 12, 15, 16, 19, 20, 23}));
  Tensor u8 = tensor({1, 0}, kUInt8);  // deprecated uint8 masks still work in PyTorch 1.13
  EXPECT_EQ(x.index({u8}).sizes().vec(), (std::vector<int64_t>{1, 3, 4}));
}

TEST(Indexing, BoolScalars) {
  Tensor x = x24();
  Tensor t = x.index({true});
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_FALSE(t.is_alias_of(x));  // a bool index is advanced indexing (a copy)
  EXPECT_EQ(x.index({false}).sizes().vec(), (std::vector<int64_t>{0, 2, 3, 4}));
  EXPECT_TENSOR(x.index({true, tensor({0, 1})}), ({2, 3, 4}), (iota_d(24)));
  EXPECT_TENSOR(x.index({tensor({0, 1}), Slice(), true}), ({2, 3, 4}), (iota_d(24)));
  EXPECT_EQ(x.index({scalar_tensor(true)}).sizes().vec(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(x.index({scalar_tensor(false), 0}).sizes().vec(), (std::vector<int64_t>{0, 3, 4}));
}

TEST(Indexing, NonContiguousInputs) {
  Tensor x = x24().transpose(0, 2);  // [4, 3, 2]
  EXPECT_TENSOR(x.index({tensor({3, 0}), 1}), ({2, 2}), ({7, 19, 4, 16}));
  Tensor v = x.index({Slice(None, None, 2)});
  EXPECT_TRUE(v.is_alias_of(x));
  EXPECT_TENSOR(v.index({Slice(), tensor({2}), tensor({true, false})}), ({2, 1}), ({8, 10}));
}

TEST(Indexing, Errors) {
  Tensor x = x24();
  expect_error<IndexError>([&] { x.index({0, 0, 0, 0}); }, "too many indices for tensor of dimension 3");
  expect_error<IndexError>([&] { x.index({5}); }, "[index] index 5 is out of bounds for dimension 0 with size 2");
  expect_error<IndexError>([&] { x.index({Slice(), -4}); }, "index -4 is out of bounds for dimension 1 with size 3");
  expect_error<IndexError>([&] { scalar_tensor(5).index({0}); }, "invalid index of a 0-dim tensor");
  expect_error<IndexError>([&] { x.index({Ellipsis, 0, Ellipsis}); }, "single ellipsis");
  expect_error<ValueError>([&] { x.index({Slice(None, None, 0)}); }, "slice step cannot be zero");
  expect_error<ValueError>([&] { x.index({Slice(None, None, -1)}); }, "greater than zero");
  expect_error<IndexError>([&] { x.index({tensor({0}, kInt32)}); }, "must be long, byte or bool");
  expect_error<IndexError>([&] { x.index({tensor({0.5})}); }, "must be long, byte or bool");
  expect_error<IndexError>([&] { x.index({tensor({true, false, true})}); }, "the shape of the mask [3] at index 0");
  expect_error<IndexError>([&] { x.index({tensor({0, 1}), tensor({0, 1, 2})}); },
                           "could not be broadcast together with shapes [2], [3]");
  expect_error<IndexError>([&] { x.index({tensor({0, 5})}); }, "index 5 is out of bounds for dimension 0 with size 2");
  // PyTorch quirk kept: a 2-d mask advances the dim counter by one, so x[mask2d, 0] selects
  // the mask's second dim away and fails the mask check.
  Tensor m2 = ones({2, 3}, kBool);
  expect_error<IndexError>([&] { x.index({m2, 0}); }, "the shape of the mask [2, 3] at index 1");
  expect_error<ValueError>([&] { x.index(std::vector<TensorIndex>{}); }, "empty index list");
  expect_error<ValueError>([&] { TensorIndex bad("..x"); }, "\"...\"");
  expect_error<ValueError>([&] { TensorIndex bad{Tensor()}; }, "undefined");
}

// ---------------------------------------------------------------- assignment (set_item)
TEST(IndexPut, BasicIndicesCopyWithBroadcastAndCast) {
  Tensor x = zeros({2, 3});
  x.index_put_({Ellipsis, 1}, 7);
  EXPECT_EQ(vals(x), (std::vector<double>{0, 7, 0, 0, 7, 0}));
  x = zeros({2, 3});
  x.index_put_({None}, tensor({1.0, 2.0, 3.0}));
  EXPECT_EQ(vals(x), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  x.index_put_({1}, tensor({4, 5, 6}));  // basic index: copy_ casts int64 -> float32
  EXPECT_EQ(vals(x), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  x.index_put_({Slice(), Slice(1, None)}, from_vector<float>({9, 8}, {1, 1, 2}));  // leading 1s dropped
  EXPECT_EQ(vals(x), (std::vector<double>{1, 9, 8, 4, 9, 8}));
  x.index_put_({false}, 100);  // x[False] = v writes nothing
  EXPECT_EQ(vals(x), (std::vector<double>{1, 9, 8, 4, 9, 8}));
  x.index_put_({true}, 0);
  EXPECT_EQ(vals(x), std::vector<double>(6, 0.0));
}

TEST(IndexPut, AdvancedIndices) {
  Tensor y = zeros({3, 4});
  y.index_put_({tensor({0, 2}), Slice(1, 3)}, tensor({1.f, 2.f}));
  EXPECT_EQ(vals(y), (std::vector<double>{0, 1, 2, 0, 0, 0, 0, 0, 0, 1, 2, 0}));
  Tensor z = zeros({2, 3, 4});
  z.index_put_({tensor({0, 1}), Slice(), tensor({1, 0})}, arange(6, kFloat32).view({2, 3}));
  EXPECT_EQ(vals(z), (std::vector<double>{0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0, 5, 0, 0, 0}));
  Tensor w = zeros({3, 2});
  w.index_put_({tensor({0, 1})}, from_vector<float>({1, 2, 3, 4}, {1, 1, 2, 2}));  // leading 1s dropped
  EXPECT_EQ(vals(w), (std::vector<double>{1, 2, 3, 4, 0, 0}));
  Tensor m = zeros({2, 3});
  m.index_put_({from_vector<bool>({true, false, true, false, true, false}, {2, 3})}, tensor({1.f, 2.f, 3.f}));
  EXPECT_EQ(vals(m), (std::vector<double>{1, 0, 2, 0, 3, 0}));
  Tensor s = zeros({4}, kInt64);
  s.index_put_({tensor({1, 3})}, 1.7);  // a scalar converts to the dtype (truncates)
  EXPECT_EQ(vals(s), (std::vector<double>{0, 1, 0, 1}));
}

TEST(IndexPut, NonContiguousTargetWritesThrough) {
  Tensor base = zeros({4, 3});
  Tensor y = base.t();  // [3, 4], transposed
  y.index_put_({tensor({2, 0})}, arange(8, kFloat32).view({2, 4}));
  EXPECT_EQ(vals(y), (std::vector<double>{4, 5, 6, 7, 0, 0, 0, 0, 0, 1, 2, 3}));
  EXPECT_EQ(vals(base.index({Slice(), 0})), (std::vector<double>{4, 5, 6, 7}));
}

TEST(IndexPut, AccumulateAndVersion) {
  Tensor x = zeros({3});
  const auto v0 = x._version();
  x.index_put_({tensor({0, 0, 2})}, tensor({1.f, 2.f, 4.f}), true);
  EXPECT_EQ(vals(x), (std::vector<double>{3, 0, 4}));
  EXPECT_GT(x._version(), v0);
  Tensor out = x.index_put({tensor({1})}, tensor({5.f}));
  EXPECT_EQ(vals(out), (std::vector<double>{3, 5, 4}));
  EXPECT_EQ(vals(x), (std::vector<double>{3, 0, 4}));  // functional form leaves x alone
}

TEST(IndexPut, AliasedValues) {
  Tensor y = arange(6, kFloat32).view({2, 3});
  y.index_put_({tensor({1, 0})}, y.index({Slice(), tensor({2, 1, 0})}));
  EXPECT_EQ(vals(y), (std::vector<double>{5, 4, 3, 2, 1, 0}));
  Tensor z = arange(4, kFloat32);
  z.index_put_({tensor({3, 2, 1, 0})}, z.index({Slice()}));  // values is a view of the target
  EXPECT_EQ(vals(z), (std::vector<double>{3, 2, 1, 0}));
}

TEST(IndexPut, Errors) {
  Tensor x = zeros({3});
  expect_error<TypeError>([&] { x.index_put_({tensor({0})}, tensor({1})); }, "dtypes to match");
  expect_error<ValueError>([&] { zeros({3}, kUInt8).index_put_({0}, 300); }, "without overflow");
  expect_error<ValueError>([&] { zeros({3}, kUInt8).index_put_({tensor({0})}, 300); }, "without overflow");
  expect_error<ShapeError>([&] { zeros({3, 2}).index_put_({tensor({0, 1})}, ones({3, 2})); }, "cannot be broadcast");
  expect_error<ShapeError>([&] { x.index_put_({Slice()}, ones({2})); }, "");
  expect_error<ShapeError>([&] { x.index_put_({tensor({true, false, true})}, ones({3})); }, "cannot be broadcast");
}

// A bad index must leave the target untouched (checks run before any write).
TEST(IndexPut, FailedWritesLeaveDataUntouched) {
  Tensor x = arange(5, kFloat32);
  const std::vector<double> before = vals(x);
  EXPECT_THROW(x.index_put_({tensor({0, 1, 9})}, ones({3})), IndexError);
  EXPECT_THROW(x.index_put_({tensor({0, 1, 9})}, ones({3}), true), IndexError);
  EXPECT_THROW(x.scatter_(0, tensor({0, 1, 5}), ones({3})), IndexError);
  EXPECT_THROW(x.scatter_(0, tensor({0, -1}), 2.0), IndexError);
  EXPECT_THROW(x.scatter_add_(0, tensor({0, 1, 5}), ones({3})), IndexError);
  EXPECT_THROW(x.scatter_reduce_(0, tensor({0, 7}), ones({2}), "amax", false), IndexError);
  EXPECT_THROW(x.index_add_(0, tensor({0, 1, 5}), ones({3})), IndexError);
  EXPECT_THROW(x.masked_scatter_(ones({5}, kBool), ones({4})), ShapeError);
  EXPECT_THROW(x.masked_fill_(ones({5}, kBool), scalar_tensor(1e39, kFloat64)), ValueError);
  EXPECT_EQ(vals(x), before);
}

// ---------------------------------------------------------------- op-level details
TEST(IndexOps, ErrorMessagesNameOpValueAndSize) {
  Tensor x = arange(5, kFloat32);
  expect_error<IndexError>([&] { x.index_select(0, tensor({7})); },
                           "[index_select] index 7 is out of bounds for dimension 0 with size 5");
  expect_error<IndexError>([&] { x.gather(0, tensor({-1})); }, "[gather] index -1 is out of bounds for dimension 0 with size 5");
  expect_error<IndexError>([&] { x.index_add(0, tensor({5}), ones({1})); }, "[index_add] index 5 is out of bounds");
  expect_error<IndexError>([&] { x.scatter(0, tensor({6}), 1.0); }, "[scatter] index 6 is out of bounds");
  expect_error<IndexError>([&] { tandem::index(x, {tensor({-6})}); }, "[index] index -6 is out of bounds for dimension 0 with size 5");
  expect_error<IndexError>([&] { searchsorted(tensor({1, 2}), tensor({1}), false, false, std::nullopt, tensor({0, 2})); },
                           "[searchsorted] index 2 is out of bounds");
}

TEST(IndexOps, InPlaceAliasedSources) {
  // PyTorch refuses these overlaps; tandem copies the source first, giving the clone() result.
  Tensor y = arange(5, kFloat32);
  y.scatter_(0, tensor({4, 3, 2, 1, 0}), y);
  EXPECT_EQ(vals(y), (std::vector<double>{4, 3, 2, 1, 0}));
  Tensor z = arange(4, kFloat32);
  z.index_add_(0, tensor({0, 1, 2, 3}), z.flip({0}));
  EXPECT_EQ(vals(z), (std::vector<double>{3, 3, 3, 3}));
}

TEST(IndexOps, CopiesNotViews) {
  Tensor x = arange(6, kFloat32).view({2, 3});
  EXPECT_FALSE(x.repeat({1, 1}).is_alias_of(x));
  EXPECT_FALSE(x.tile({1}).is_alias_of(x));
  EXPECT_FALSE(x.roll({0}, {1}).is_alias_of(x));
  EXPECT_FALSE(x.flip({}).is_alias_of(x));
  EXPECT_FALSE(x.repeat_interleave(1, 0).is_alias_of(x));
  EXPECT_FALSE(cat({x}).is_alias_of(x));
}

TEST(IndexOps, TopkUnsortedAndUnique) {
  Tensor x = tensor({3.f, 9.f, 1.f, 7.f, 5.f});
  auto [v, i] = x.topk(3, -1, true, false);  // any order is valid; tandem's is sorted
  std::vector<double> got = vals(v);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(vals(x.index({i})), vals(v));
  auto [u, inv, cnt] = tensor({3, 1, 2, 1, 3}).unique(false, true, true);  // PyTorch gives [2, 1, 3]: hash order
  EXPECT_EQ(vals(u), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(vals(u.index({inv})), (std::vector<double>{3, 1, 2, 1, 3}));
  EXPECT_EQ(vals(cnt), (std::vector<double>{2, 1, 2}));
  auto [kv, ki] = arange(6, kFloat32).view({2, 3}).kthvalue(2, 0, true);
  EXPECT_TENSOR(kv, ({1, 3}), ({3, 4, 5}));
  EXPECT_TENSOR(ki, ({1, 3}), ({1, 1, 1}));
}

TEST(IndexOps, FunctionalForms) {
  EXPECT_TENSOR(repeat_interleave(tensor({2, 0, 1})), ({3}), ({0, 0, 2}));
  EXPECT_TENSOR(searchsorted(tensor({1, 3, 5, 7}), Scalar(4)), ({}), ({2}));
  EXPECT_TENSOR(bincount(tensor({1, 3, 1})), ({4}), ({0, 2, 0, 1}));
  EXPECT_TENSOR(tandem::index_put(zeros({2, 2}), {Tensor(), tensor({1})}, tensor({5.f})), ({2, 2}), ({0, 5, 0, 5}));
  EXPECT_TENSOR(hstack({tensor({1}), tensor({2, 3})}), ({3}), ({1, 2, 3}));
  EXPECT_TENSOR(argsort(tensor({3, 1, 2}), -1, true), ({3}), ({0, 2, 1}));
  EXPECT_TENSOR(ones({3, 3}).tril(-1).triu(-1), ({3, 3}), ({0, 0, 0, 1, 0, 0, 0, 1, 0}));
  Tensor t = ones({2, 2});
  t.triu_(1);
  EXPECT_EQ(vals(t), (std::vector<double>{0, 1, 0, 0}));
  EXPECT_TENSOR(tensor({1.f, 2.f, 3.f}).masked_select(tensor({true, false, true})), ({2}), ({1, 3}));
  EXPECT_TENSOR(zeros({3}).masked_fill(tensor({false, true, false}), scalar_tensor(2.5)), ({3}), ({0, 2.5, 0}));
}

TEST(IndexOps, DynamicShapeMetaHasUnknownSizes) {
  Tensor x = zeros({2, 3});
  auto m = infer_meta(get_op("nonzero"), {MetaRef::of(x)}, {});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].sizes, (DimVector{-1, 2}));
  EXPECT_EQ(m[0].dtype, kInt64);
  // Validation still runs for dynamic ops.
  EXPECT_THROW(masked_select(zeros({3}), zeros({3})), TypeError);
  EXPECT_THROW(bincount(zeros({3})), TypeError);
}

// Large inputs take the parallel and fast paths; compare against simple references.
TEST(IndexOps, LargeInputsMatchReferences) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> U(-1, 1);
  const int64_t R = 300, C = 257;
  std::vector<float> data(static_cast<size_t>(R * C));
  for (auto& v : data) v = U(rng);
  Tensor x = from_vector(data, {R, C});
  // sort along rows
  auto [sv, si] = x.sort(1);
  std::vector<double> s = vals(sv), ii = vals(si);
  for (int64_t r = 0; r < R; ++r) {
    std::vector<float> row(data.begin() + r * C, data.begin() + (r + 1) * C);
    std::sort(row.begin(), row.end());
    for (int64_t c = 0; c < C; ++c) {
      ASSERT_EQ(s[r * C + c], row[c]);
      ASSERT_EQ(data[r * C + static_cast<int64_t>(ii[r * C + c])], row[c]);
    }
  }
  // index_select: contiguous fast path == strided path
  std::vector<int64_t> idx;
  for (int i = 0; i < 500; ++i) idx.push_back(static_cast<int64_t>(rng() % R));
  Tensor ix = from_vector(idx, {500});
  Tensor a = x.index_select(0, ix), b = x.t().contiguous().t().index_select(0, ix);
  EXPECT_EQ(vals(a), vals(b));
  EXPECT_EQ(vals(a), vals(tandem::index(x, {ix})));
  for (int k = 0; k < 500; k += 97) EXPECT_EQ(vals(a.index({k})), vals(x.index({idx[k]})));
  // gather with a full-size index == index via offsets
  Tensor gi = from_vector(std::vector<int64_t>(static_cast<size_t>(R * C), 3), {R, C});
  Tensor g = x.gather(1, gi);
  EXPECT_EQ(vals(g.index({Slice(), 0})), vals(x.index({Slice(), 3})));
  // cat + split round trip
  Tensor c = cat({x, x.t().contiguous().t(), x}, 1);
  EXPECT_EQ(vals(c.index({Slice(), Slice(C, 2 * C)})), vals(x));
  // scatter_add of ones counts indices
  Tensor cnt = zeros({R}).scatter_add(0, ix, ones({500}));
  std::vector<double> want(static_cast<size_t>(R), 0.0);
  for (int64_t v : idx) want[v] += 1;
  EXPECT_EQ(vals(cnt), want);
  EXPECT_EQ(vals(bincount(ix, Tensor(), R).to(kFloat32)), want);
}

}  // namespace

// The ONNX importer on models these tests write with the generated protobuf classes:
// initializers (raw_data and typed fields), Constant nodes, initializers listed as graph
// inputs, external data, opset-dependent converters, training and compiled mode; and
// hostile files (truncated, malformed, cyclic, undefined names, absurd shapes, sizes that
// disagree with the data, unreadable paths), each a tandem::Error naming file and field.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tandem/autograd/engine.h"
#include "tandem/nn/compiled.h"
#include "tandem/onnx/onnx.h"
#include "tandem/tandem.h"

namespace fs = std::filesystem;
using namespace tandem;

namespace {

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("tandem_onnx_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void set_opset(::onnx::ModelProto& m, int64_t v) {
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(v);
}

::onnx::ValueInfoProto* add_value(google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>* f, const std::string& name) {
  auto* v = f->Add();
  v->set_name(name);
  v->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  return v;
}

::onnx::NodeProto* add_node(::onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                            std::vector<std::string> out, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

void attr_i(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
void attr_f(::onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
void attr_ints(::onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}

// A float tensor stored in raw_data (little-endian bytes).
void raw_float(::onnx::TensorProto* t, const std::string& name, std::vector<int64_t> dims, const std::vector<float>& v) {
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (auto d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}
void typed_float(::onnx::TensorProto* t, const std::string& name, std::vector<int64_t> dims, const std::vector<float>& v) {
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (auto d : dims) t->add_dims(d);
  for (float x : v) t->add_float_data(x);
}
void typed_int64(::onnx::TensorProto* t, const std::string& name, std::vector<int64_t> dims, const std::vector<int64_t>& v) {
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::INT64);
  for (auto d : dims) t->add_dims(d);
  for (auto x : v) t->add_int64_data(x);
}

std::vector<float> iota(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * (static_cast<float>(i % 7) - 3.0f);
  return v;
}

// x [2, 3] -> Gemm(W1 [4, 3] raw, b1 [4] typed, transB) -> Relu -> Mul(Constant 0.5, typed)
// -> Reshape(shape initializer int64 [8]) -> y [8]. Initializer names carry dots.
::onnx::ModelProto mlp_model() {
  ::onnx::ModelProto m;
  set_opset(m, 13);
  auto* g = m.mutable_graph();
  g->set_name("mlp");
  add_value(g->mutable_input(), "x");
  add_value(g->mutable_output(), "y");
  raw_float(g->add_initializer(), "fc1.weight", {4, 3}, iota(12, 0.25f));
  typed_float(g->add_initializer(), "fc1.bias", {4}, {0.5f, -0.25f, 0.125f, 1.0f});
  typed_int64(g->add_initializer(), "shape", {1}, {8});
  auto* gemm = add_node(g, "Gemm", {"x", "fc1.weight", "fc1.bias"}, {"h"}, "fc1");
  attr_i(gemm, "transB", 1);
  add_node(g, "Relu", {"h"}, {"r"});
  auto* cst = add_node(g, "Constant", {}, {"half"});
  auto* a = cst->add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  typed_float(a->mutable_t(), "", {}, {0.5f});
  add_node(g, "Mul", {"r", "half"}, {"s"});
  add_node(g, "Reshape", {"s", "shape"}, {"y"});
  return m;
}

std::shared_ptr<tandem::onnx::OnnxModel> load(const ::onnx::ModelProto& m, const std::string& label = "test.onnx") {
  return tandem::onnx::load_model_from_bytes(m.SerializeAsString(), label);
}

Tensor mlp_reference(const Tensor& x) {
  auto w = iota(12, 0.25f);
  Tensor W = from_vector(w, {4, 3});
  Tensor b = tensor({0.5f, -0.25f, 0.125f, 1.0f});
  return reshape(mul(relu(add(matmul(x, t(W)), b)), 0.5), {8});
}

template <typename E>
std::string raises(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("WRONG TYPE: ") + e.what();
  }
  return "NO ERROR";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(OnnxImport, MlpMatchesReferenceAndNamesParameters) {
  auto model = load(mlp_model());
  Tensor x = from_vector(iota(6, 0.5f), {2, 3});
  Tensor y = (*model)(x);
  Tensor want = mlp_reference(x);
  EXPECT_TRUE(allclose(y, want, 1e-6, 1e-6));
  auto names = model->named_parameters();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0].first, "fc1_weight");
  EXPECT_EQ(names[1].first, "fc1_bias");
  EXPECT_TRUE(names[0].second.requires_grad());
  ASSERT_EQ(model->named_buffers().size(), 1u);  // the int64 shape
  EXPECT_EQ(model->input_names(), std::vector<std::string>{"x"});
  EXPECT_EQ(model->opset(), 13);
}

TEST(OnnxImport, CompiledEqualsEagerBitwise) {
  auto model = load(mlp_model());
  Tensor x = from_vector(iota(6, 0.5f), {2, 3});
  autograd::NoGradGuard ng;
  Tensor eager = (*model)(x);
  auto cm = tandem::compile(std::static_pointer_cast<nn::Module>(model));
  Tensor c1 = (*cm)(x), c2 = (*cm)(x);
  EXPECT_TRUE(equal(eager, c1));
  EXPECT_TRUE(equal(eager, c2));
  EXPECT_GE(cm->function().compiled_calls(), 1);
}

TEST(OnnxImport, FineTuningLowersTheLoss) {
  auto model = load(mlp_model());
  Tensor x = from_vector(iota(6, 0.5f), {2, 3});
  auto loss_of = [&] { return sum(mul((*model)(x), (*model)(x))); };
  Tensor l0 = loss_of();
  l0.backward();
  for (auto& p : model->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    autograd::NoGradGuard ng;
    p.sub_(mul(p.grad(), 0.05));
  }
  Tensor l1 = loss_of();
  EXPECT_LT(l1.item().to_double(), l0.item().to_double());
  // load_state_dict reaches the tensors the graph reads.
  auto sd = model->state_dict();
  for (auto& [k, v] : sd)
    if (v.is_floating_point()) v.zero_();
  autograd::NoGradGuard ng;
  EXPECT_EQ(sum(abs((*model)(x))).item().to_double(), 0.0);
}

TEST(OnnxImport, InitializersListedAsInputsBindByPosition) {
  ::onnx::ModelProto m;
  set_opset(m, 9);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x");
  add_value(g->mutable_input(), "w");  // also an initializer (old PyTorch exports)
  add_value(g->mutable_output(), "y");
  typed_float(g->add_initializer(), "w", {2}, {2.0f, 3.0f});
  add_node(g, "Mul", {"x", "w"}, {"y"});
  auto model = load(m);
  Tensor x = tensor({1.0f, 1.0f});
  EXPECT_TRUE(equal(model->forward_list({x})[0], tensor({2.0f, 3.0f})));
  EXPECT_TRUE(equal(model->forward_list({x, tensor({5.0f, 7.0f})})[0], tensor({5.0f, 7.0f})));
  std::string e = raises<ValueError>([&] { model->forward_list({}); });
  EXPECT_TRUE(contains(e, "got 0 inputs, expected 1")) << e;
}

TEST(OnnxImport, ExternalDataIsReadBesideTheModel) {
  fs::path dir = temp_dir("external");
  std::vector<float> w = {1.5f, -2.0f, 4.0f};
  {
    std::ofstream f(dir / "weights.bin", std::ios::binary);
    f.write("padd", 4);  // the tensor starts at offset 4
    f.write(reinterpret_cast<const char*>(w.data()), 12);
  }
  auto make = [&](const std::string& location, const std::string& offset) {
    ::onnx::ModelProto m;
    set_opset(m, 13);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    auto* t = g->add_initializer();
    t->set_name("w");
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_dims(3);
    t->set_data_location(::onnx::TensorProto::EXTERNAL);
    auto* kv = t->add_external_data();
    kv->set_key("location");
    kv->set_value(location);
    kv = t->add_external_data();
    kv->set_key("offset");
    kv->set_value(offset);
    add_node(g, "Add", {"x", "w"}, {"y"});
    std::ofstream(dir / "model.onnx", std::ios::binary) << m.SerializeAsString();
    return (dir / "model.onnx").string();
  };
  auto model = tandem::onnx::load_model(make("weights.bin", "4"));
  EXPECT_TRUE(equal((*model)(zeros({3})), tensor({1.5f, -2.0f, 4.0f})));
  std::string e = raises<ValueError>([&] { tandem::onnx::load_model(make("../etc/passwd", "0")); });
  EXPECT_TRUE(contains(e, "must be a relative path inside the model's folder")) << e;
  e = raises<ValueError>([&] { tandem::onnx::load_model(make("weights.bin", "8")); });
  EXPECT_TRUE(contains(e, "initializer 'w'") && contains(e, "lies outside")) << e;
  e = raises<RuntimeError>([&] { tandem::onnx::load_model(make("missing.bin", "0")); });
  EXPECT_TRUE(contains(e, "missing.bin")) << e;
  e = raises<ValueError>([&] { tandem::onnx::load_model(make("weights.bin", "-1")); });
  EXPECT_TRUE(contains(e, "not a non-negative integer")) << e;
  fs::remove_all(dir);
}

// The same op at two opset versions: attributes that became inputs, changed defaults.
TEST(OnnxImport, ConvertersFollowTheOpsetVersion) {
  Tensor x = reshape(arange(24, DType::Float32), {2, 3, 4});
  // Slice: v1 attributes, v10+ inputs (with steps).
  {
    ::onnx::ModelProto m;
    set_opset(m, 1);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    auto* n = add_node(g, "Slice", {"x"}, {"y"});
    attr_ints(n, "starts", {1});
    attr_ints(n, "ends", {3});
    attr_ints(n, "axes", {2});
    EXPECT_TRUE(equal((*load(m))(x), slice(x, 2, 1, 3)));
  }
  {
    ::onnx::ModelProto m;
    set_opset(m, 13);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    typed_int64(g->add_initializer(), "s", {1}, {-1});
    typed_int64(g->add_initializer(), "e", {1}, {-1000});
    typed_int64(g->add_initializer(), "a", {1}, {2});
    typed_int64(g->add_initializer(), "st", {1}, {-2});
    add_node(g, "Slice", {"x", "s", "e", "a", "st"}, {"y"});
    Tensor y = (*load(m))(x);  // indices 3, 1 of the last dim
    EXPECT_TRUE(equal(y, index_select(x, 2, tensor({3, 1}))));
  }
  // Softmax: v1 flattens to 2-D at axis (default 1); v13 works along axis (default -1).
  for (int64_t opset : {1, 13}) {
    ::onnx::ModelProto m;
    set_opset(m, opset);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    add_node(g, "Softmax", {"x"}, {"y"});
    Tensor want = opset == 1 ? reshape(softmax(reshape(x, {2, 12}), 1), {2, 3, 4}) : softmax(x, 2);
    EXPECT_TRUE(allclose((*load(m))(x), want, 1e-6, 1e-7)) << "opset " << opset;
  }
  // Clip: v6 attributes, v11 inputs.
  {
    ::onnx::ModelProto m;
    set_opset(m, 6);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    auto* n = add_node(g, "Clip", {"x"}, {"y"});
    attr_f(n, "min", 2.0f);
    attr_f(n, "max", 5.0f);
    EXPECT_TRUE(equal((*load(m))(x), clamp(x, Scalar(2.0), Scalar(5.0))));
  }
  {
    ::onnx::ModelProto m;
    set_opset(m, 11);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    typed_float(g->add_initializer(), "hi", {}, {7.0f});
    add_node(g, "Clip", {"x", "", "hi"}, {"y"});  // min omitted
    EXPECT_TRUE(equal((*load(m))(x), clamp(x, std::nullopt, Scalar(7.0))));
  }
  // Squeeze / ReduceSum: axes attribute (v11) vs input (v13).
  Tensor z = zeros({2, 1, 3});
  for (int64_t opset : {11, 13}) {
    ::onnx::ModelProto m;
    set_opset(m, opset);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    if (opset == 11) {
      attr_ints(add_node(g, "Squeeze", {"x"}, {"q"}), "axes", {1});
      auto* r = add_node(g, "ReduceSum", {"q"}, {"y"});
      attr_ints(r, "axes", {0});
      attr_i(r, "keepdims", 0);
    } else {
      typed_int64(g->add_initializer(), "ax1", {1}, {1});
      typed_int64(g->add_initializer(), "ax0", {1}, {0});
      add_node(g, "Squeeze", {"x", "ax1"}, {"q"});
      attr_i(add_node(g, "ReduceSum", {"q", "ax0"}, {"y"}), "keepdims", 0);
    }
    Tensor y = (*load(m))(z);
    EXPECT_EQ(y.sizes().vec(), std::vector<int64_t>{3}) << "opset " << opset;
  }
}

// ------------------------------------------------------------------------ hostile files

TEST(OnnxHostile, TruncatedAndMalformedProtobuf) {
  std::string good = mlp_model().SerializeAsString();
  std::string e = raises<RuntimeError>([&] { tandem::onnx::load_model_from_bytes(good.substr(0, good.size() / 2), "cut.onnx"); });
  EXPECT_TRUE(contains(e, "cut.onnx") && contains(e, "not a valid ONNX ModelProto")) << e;
  e = raises<RuntimeError>([&] { tandem::onnx::load_model_from_bytes(std::string(64, '\xff'), "junk.onnx"); });
  EXPECT_TRUE(contains(e, "junk.onnx")) << e;
  e = raises<RuntimeError>([&] { tandem::onnx::load_tensor_from_bytes("\x0a\xff\xff\xff\xff\x0f", "t.pb"); });
  EXPECT_TRUE(contains(e, "t.pb") && contains(e, "TensorProto")) << e;
  // Every prefix of a valid file loads or raises a tandem::Error; nothing crashes.
  for (size_t n = 0; n < good.size(); n += 7) {
    try {
      tandem::onnx::load_model_from_bytes(good.substr(0, n), "prefix.onnx");
    } catch (const Error&) {
    }
  }
}

TEST(OnnxHostile, UnreadablePaths) {
  fs::path dir = temp_dir("paths");
  std::string e = raises<RuntimeError>([&] { tandem::onnx::load_model(dir.string()); });
  EXPECT_TRUE(contains(e, dir.string())) << e;
  e = raises<RuntimeError>([&] { tandem::onnx::load_model((dir / "nope.onnx").string()); });
  EXPECT_TRUE(contains(e, "nope.onnx")) << e;
  e = raises<RuntimeError>([&] { tandem::onnx::load_tensor((dir / "nope.pb").string()); });
  EXPECT_TRUE(contains(e, "nope.pb")) << e;
  fs::remove_all(dir);
}

TEST(OnnxHostile, CycleAndUndefinedNames) {
  {
    ::onnx::ModelProto m;
    set_opset(m, 13);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "b");
    add_node(g, "Add", {"x", "b"}, {"a"}, "first");
    add_node(g, "Relu", {"a"}, {"b"}, "second");
    std::string e = raises<ValueError>([&] { load(m, "cycle.onnx"); });
    EXPECT_TRUE(contains(e, "cycle.onnx") && contains(e, "cycle through node")) << e;
  }
  {
    ::onnx::ModelProto m;
    set_opset(m, 13);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    add_node(g, "Add", {"x", "ghost"}, {"y"}, "adder");
    std::string e = raises<ValueError>([&] { load(m); });
    EXPECT_TRUE(contains(e, "node adder (Add) reads value 'ghost'")) << e;
  }
  {
    ::onnx::ModelProto m;
    set_opset(m, 13);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    add_node(g, "Relu", {"x"}, {"y"}, "one");
    add_node(g, "Relu", {"x"}, {"y"}, "two");
    std::string e = raises<ValueError>([&] { load(m); });
    EXPECT_TRUE(contains(e, "defines value 'y', already defined")) << e;
  }
  {
    ::onnx::ModelProto m;
    set_opset(m, 13);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "nowhere");
    std::string e = raises<ValueError>([&] { load(m); });
    EXPECT_TRUE(contains(e, "graph output 'nowhere'")) << e;
  }
}

TEST(OnnxHostile, AbsurdShapesAndSizeMismatches) {
  auto with_init = [](const std::function<void(::onnx::TensorProto*)>& fill) {
    ::onnx::ModelProto m;
    set_opset(m, 13);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    fill(g->add_initializer());
    add_node(g, "Add", {"x", "w"}, {"y"});
    return m;
  };
  std::string e = raises<ValueError>([&] {
    load(with_init([](auto* t) { raw_float(t, "w", {int64_t{1} << 40, int64_t{1} << 40}, {1.0f}); }));
  });
  EXPECT_TRUE(contains(e, "initializer 'w'") && contains(e, "absurd shape")) << e;
  // Large but representable dims with little data: refused before anything is allocated
  // (2^36 float32 elements would be 256 GiB).
  e = raises<ValueError>([&] { load(with_init([](auto* t) { raw_float(t, "w", {int64_t{1} << 36}, {1.0f}); })); });
  EXPECT_TRUE(contains(e, "raw_data holds 4 bytes") && contains(e, "need 274877906944")) << e;
  e = raises<ValueError>([&] { load(with_init([](auto* t) { typed_float(t, "w", {int64_t{1} << 36}, {1.0f}); })); });
  EXPECT_TRUE(contains(e, "float_data holds 1 values")) << e;
  e = raises<ValueError>([&] { load(with_init([](auto* t) { raw_float(t, "w", {-3}, {1.0f}); })); });
  EXPECT_TRUE(contains(e, "negative dim -3")) << e;
  e = raises<ValueError>([&] { load(with_init([](auto* t) { raw_float(t, "w", {4}, {1.0f, 2.0f}); })); });
  EXPECT_TRUE(contains(e, "initializer 'w'") && contains(e, "raw_data holds 8 bytes") && contains(e, "need 16")) << e;
  e = raises<ValueError>([&] { load(with_init([](auto* t) { typed_float(t, "w", {3}, {1.0f}); })); });
  EXPECT_TRUE(contains(e, "float_data holds 1 values") && contains(e, "need 3")) << e;
  e = raises<TypeError>([&] {
    load(with_init([](auto* t) {
      t->set_name("w");
      t->set_data_type(::onnx::TensorProto::UINT32);
      t->add_dims(1);
      t->add_uint64_data(1);
    }));
  });
  EXPECT_TRUE(contains(e, "UINT32") && contains(e, "initializer 'w'")) << e;
}

TEST(OnnxHostile, UnknownOpsAndDomainsNameOpAndOpset) {
  ::onnx::ModelProto m;
  set_opset(m, 13);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x");
  add_value(g->mutable_output(), "y");
  add_node(g, "FancyOp", {"x"}, {"y"}, "mystery");
  std::string e = raises<NotImplementedError>([&] { load(m); });
  EXPECT_TRUE(contains(e, "node mystery (FancyOp, opset 13)") && contains(e, "no converter")) << e;
  g->mutable_node(0)->set_op_type("Relu");
  g->mutable_node(0)->set_domain("com.example");
  e = raises<ValueError>([&] { load(m); });
  EXPECT_TRUE(contains(e, "domain 'com.example' is not in the model's opset_import")) << e;
  auto* o = m.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  e = raises<NotImplementedError>([&] { load(m); });
  EXPECT_TRUE(contains(e, "domain 'com.example' is not supported")) << e;
}

TEST(OnnxHostile, ConverterErrorsNameTheNode) {
  ::onnx::ModelProto m;
  set_opset(m, 13);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x");
  add_value(g->mutable_output(), "y");
  attr_i(add_node(g, "Softmax", {"x"}, {"y"}, "sm"), "axis", 5);
  auto model = load(m);
  std::string e = raises<ValueError>([&] { (*model)(zeros({2, 3})); });
  EXPECT_TRUE(contains(e, "node sm (Softmax, opset 13)") && contains(e, "axis 5")) << e;
}

namespace {

void attr_graph(::onnx::NodeProto* n, const std::string& name, const ::onnx::GraphProto& body) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body;
}

::onnx::ValueInfoProto* add_seq_value(google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>* f,
                                      const std::string& name) {
  auto* v = f->Add();
  v->set_name(name);
  v->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(
      ::onnx::TensorProto::FLOAT);
  return v;
}

// Loop(M, cond, acc) whose body adds the outer-scope value `x` to acc and emits acc as a
// scan output: after M iterations acc = M * x, the scan output stacks x, 2x, ..., Mx.
// With `with_body` false the Loop node lacks its body attribute.
::onnx::ModelProto loop_model(bool with_body) {
  ::onnx::ModelProto m;
  set_opset(m, 13);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x");
  add_value(g->mutable_input(), "M")->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
  add_value(g->mutable_output(), "acc_out");
  add_value(g->mutable_output(), "scan_out");
  auto* cst = add_node(g, "ConstantOfShape", {"zero_shape"}, {"acc0"});
  (void)cst;
  typed_int64(g->add_initializer(), "zero_shape", {1}, {3});
  auto* loop = add_node(g, "Loop", {"M", "", "acc0"}, {"acc_out", "scan_out"}, "the_loop");
  if (with_body) {
    ::onnx::GraphProto body;
    add_value(body.mutable_input(), "i")->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
    add_value(body.mutable_input(), "c_in")->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::BOOL);
    add_value(body.mutable_input(), "acc_in");
    add_value(body.mutable_output(), "c_out");
    add_value(body.mutable_output(), "acc_next");
    add_value(body.mutable_output(), "acc_copy");
    add_node(&body, "Identity", {"c_in"}, {"c_out"});
    add_node(&body, "Add", {"acc_in", "x"}, {"acc_next"});  // x: the outer graph's input
    add_node(&body, "Identity", {"acc_next"}, {"acc_copy"});
    attr_graph(loop, "body", body);
  }
  return m;
}

}  // namespace

TEST(OnnxImport, LoopReadsOuterValuesAndStacksScanOutputs) {
  auto model = load(loop_model(true));
  Tensor x = tensor({1.0f, -2.0f, 0.5f});
  std::vector<Tensor> ys = model->forward_list({x, scalar_tensor(int64_t{4}, DType::Int64)});
  ASSERT_EQ(ys.size(), 2u);
  EXPECT_TRUE(allclose(ys[0], mul(x, 4.0)));
  ASSERT_EQ(ys[1].sizes().vec(), (std::vector<int64_t>{4, 3}));
  for (int64_t k = 0; k < 4; ++k) EXPECT_TRUE(allclose(select(ys[1], 0, k), mul(x, double(k + 1))));
  // Compiled mode: the trip count is input data, so the call runs eagerly; same outputs.
  autograd::NoGradGuard ng;
  auto cm = tandem::compile(std::static_pointer_cast<nn::Module>(model));
  std::vector<Tensor> cs = (*cm)({x, scalar_tensor(int64_t{4}, DType::Int64)});
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_TRUE(equal(cs[0], ys[0]) && equal(cs[1], ys[1]));
}

TEST(OnnxHostile, ControlFlowAndSequenceErrorsNameTheNode) {
  // A Loop without its body attribute: a ValueError naming the node.
  {
    auto model = load(loop_model(false));
    std::string e = raises<ValueError>([&] { model->forward_list({zeros({3}), scalar_tensor(int64_t{2}, DType::Int64)}); });
    EXPECT_TRUE(contains(e, "node the_loop (Loop, opset 13)") && contains(e, "'body' is required")) << e;
  }
  // A subgraph reading a name nothing defines: refused at load, naming the inner node.
  {
    ::onnx::ModelProto m = loop_model(true);
    auto* body = m.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g();
    body->mutable_node(1)->set_input(1, "ghost");
    std::string e = raises<ValueError>([&] { load(m); });
    EXPECT_TRUE(contains(e, "node the_loop (Loop)") && contains(e, "attribute 'body'") &&
                contains(e, "reads value 'ghost'")) << e;
  }
  // A Loop with neither a trip count nor a condition that turns false stops at tandem's
  // bound on subgraph runs per call (default 2^20; lowered here to keep the test short)
  // with an error instead of running forever.
  EXPECT_EQ(tandem::onnx::set_max_subgraph_runs(5000), int64_t{1} << 20);
  {
    ::onnx::ModelProto m;
    set_opset(m, 13);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    auto* loop = add_node(g, "Loop", {"", "", "x"}, {"y"}, "forever");
    ::onnx::GraphProto body;
    add_value(body.mutable_input(), "i");
    add_value(body.mutable_input(), "c");
    add_value(body.mutable_input(), "v");
    add_value(body.mutable_output(), "c");
    add_value(body.mutable_output(), "v");
    attr_graph(loop, "body", body);
    auto model = load(m);
    std::string e = raises<ValueError>([&] { (*model)(zeros({1})); });
    EXPECT_TRUE(contains(e, "node forever (Loop, opset 13)") && contains(e, "ran 5000 subgraphs")) << e;
  }
  // Nested Loops of 100 iterations each (10,100 body runs in all) stop at the same bound,
  // naming the inner node; with the bound raised they finish.
  {
    ::onnx::ModelProto m;
    set_opset(m, 13);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    typed_int64(g->add_initializer(), "M", {}, {100});
    auto* outer = add_node(g, "Loop", {"M", "", "x"}, {"y"}, "outer");
    ::onnx::GraphProto ob;
    add_value(ob.mutable_input(), "i");
    add_value(ob.mutable_input(), "c");
    add_value(ob.mutable_input(), "v");
    add_value(ob.mutable_output(), "c");
    add_value(ob.mutable_output(), "w");
    auto* inner = add_node(&ob, "Loop", {"M", "", "v"}, {"w"}, "inner");
    ::onnx::GraphProto ib;
    add_value(ib.mutable_input(), "j");
    add_value(ib.mutable_input(), "c2");
    add_value(ib.mutable_input(), "u");
    add_value(ib.mutable_output(), "c2");
    add_value(ib.mutable_output(), "u");
    attr_graph(inner, "body", ib);
    attr_graph(outer, "body", ob);
    auto model = load(m);
    std::string e = raises<ValueError>([&] { (*model)(zeros({1})); });
    EXPECT_TRUE(contains(e, "node inner (Loop, opset 13)") && contains(e, "ran 5000 subgraphs")) << e;
    tandem::onnx::set_max_subgraph_runs(20000);
    EXPECT_TRUE(equal((*model)(ones({1})), ones({1})));
  }
  tandem::onnx::set_max_subgraph_runs(int64_t{1} << 20);
  EXPECT_TRUE(contains(raises<ValueError>([] { tandem::onnx::set_max_subgraph_runs(0); }), "must be positive"));
  // SequenceAt past the end; ConcatFromSequence of a tensor; a sequence output through
  // forward_list.
  {
    ::onnx::ModelProto m;
    set_opset(m, 13);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_input(), "pos")->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
    add_value(g->mutable_output(), "y");
    add_seq_value(g->mutable_output(), "s");
    add_node(g, "SequenceConstruct", {"x", "x"}, {"s"}, "make");
    add_node(g, "SequenceAt", {"s", "pos"}, {"y"}, "pick");
    auto model = load(m);
    std::vector<tandem::onnx::Value> ins{tandem::onnx::Value::tensor(ones({2})),
                                         tandem::onnx::Value::tensor(scalar_tensor(int64_t{-2}, DType::Int64))};
    auto outs = model->forward_values(ins);
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_EQ(outs[1].kind, tandem::onnx::Value::Kind::Sequence);
    EXPECT_EQ(outs[1].seq.size(), 2u);
    ins[1] = tandem::onnx::Value::tensor(scalar_tensor(int64_t{2}, DType::Int64));
    std::string e = raises<ValueError>([&] { model->forward_values(ins); });
    EXPECT_TRUE(contains(e, "node pick (SequenceAt, opset 13)") && contains(e, "position 2 is out of range")) << e;
    e = raises<NotImplementedError>([&] { model->forward_list({ones({2}), scalar_tensor(int64_t{0}, DType::Int64)}); });
    EXPECT_TRUE(contains(e, "graph output 's' is a sequence")) << e;
    g->mutable_node(1)->set_op_type("ConcatFromSequence");
    g->mutable_node(1)->set_input(0, "x");
    g->mutable_node(1)->clear_input();
    g->mutable_node(1)->add_input("x");
    attr_i(g->mutable_node(1), "axis", 0);
    auto bad = load(m);
    e = raises<ValueError>([&] { bad->forward_values(ins); });
    EXPECT_TRUE(contains(e, "node pick (ConcatFromSequence, opset 13)") && contains(e, "is a tensor, expected a sequence"))
        << e;
  }
  // SplitToSequence of an axis of 2^21 (the tensor is empty: another dim is 0) would make
  // two million tensors: refused.
  {
    ::onnx::ModelProto m;
    set_opset(m, 13);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_seq_value(g->mutable_output(), "s");
    add_node(g, "SplitToSequence", {"x"}, {"s"}, "splitter");
    auto model = load(m);
    std::string e = raises<ValueError>(
        [&] { model->forward_values({tandem::onnx::Value::tensor(zeros({int64_t{1} << 21, 0}))}); });
    EXPECT_TRUE(contains(e, "node splitter (SplitToSequence, opset 13)") && contains(e, "more than 2^20")) << e;
  }
}

// Det (Gaussian elimination with partial pivoting in tandem ops) against determinants
// worked by hand in float64: a matrix whose first pivot is 0 (a row swap flips the sign),
// a singular one (0, no NaN) and a 1 x 1 batch; compiled equals eager bitwise.
TEST(OnnxImport, DetPivotsAndHandlesSingularMatrices) {
  ::onnx::ModelProto m;
  set_opset(m, 13);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x")->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::DOUBLE);
  add_value(g->mutable_output(), "y")->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::DOUBLE);
  add_node(g, "Det", {"x"}, {"y"}, "det");
  auto model = load(m);
  // [[0, 2, 1], [1, 0, 0], [3, 1, 2]]: det = -2 * (2 - 0) + 1 * (1 - 0) = -3.
  // [[1, 2, 3], [2, 4, 6], [1, 0, 1]]: row 2 = 2 * row 1, det = 0.
  // [[2, -1, 0], [-1, 2, -1], [0, -1, 2]]: det = 4.
  Tensor x = from_vector(std::vector<double>{0, 2, 1, 1, 0, 0, 3, 1, 2, 1, 2, 3, 2, 4, 6, 1, 0, 1, 2, -1, 0, -1, 2, -1, 0, -1, 2},
                         {3, 3, 3});
  Tensor y = (*model)(x);
  ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{3}));
  const double want[] = {-3.0, 0.0, 4.0};
  for (int64_t i = 0; i < 3; ++i) EXPECT_NEAR(y[i].item<double>(), want[i], 1e-12) << i;
  Tensor one = (*model)(full({1, 1}, -2.5, DType::Float64));
  EXPECT_EQ(one.dim(), 0);
  EXPECT_EQ(one.item<double>(), -2.5);
  autograd::NoGradGuard ng;
  auto cm = tandem::compile(std::static_pointer_cast<nn::Module>(model));
  Tensor c1 = (*cm)(x);
  Tensor c2 = (*cm)(x);
  EXPECT_TRUE(equal(c1, y) && equal(c2, y));
  EXPECT_GT(cm->function().compiled_calls(), 0);
}

// Bad inputs of the signal and ROI converters: a ValueError naming the node.
TEST(OnnxHostile, SignalAndRoiErrorsNameTheNode) {
  {
    ::onnx::ModelProto m;
    set_opset(m, 17);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_output(), "y");
    attr_i(add_node(g, "DFT", {"x"}, {"y"}, "fft"), "axis", 2);  // the last axis holds re/im
    auto model = load(m);
    std::string e = raises<ValueError>([&] { (*model)(zeros({1, 4, 1})); });
    EXPECT_TRUE(contains(e, "node fft (DFT, opset 17)") && contains(e, "axis 2 is out of range")) << e;
    e = raises<ValueError>([&] { (*model)(zeros({1, 4, 3})); });
    EXPECT_TRUE(contains(e, "node fft (DFT, opset 17)") && contains(e, "real or complex")) << e;
  }
  {
    ::onnx::ModelProto m;
    set_opset(m, 16);
    auto* g = m.mutable_graph();
    add_value(g->mutable_input(), "x");
    add_value(g->mutable_input(), "rois");
    add_value(g->mutable_input(), "b")->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
    add_value(g->mutable_output(), "y");
    add_node(g, "RoiAlign", {"x", "rois", "b"}, {"y"}, "roi");
    auto model = load(m);
    Tensor rois = tensor({0.0f, 0.0f, 2.0f, 2.0f});
    std::vector<Tensor> ok = model->forward_list({ones({1, 2, 4, 4}), reshape(rois, {1, 4}), zeros({1}, DType::Int64)});
    ASSERT_EQ(ok[0].sizes().vec(), (std::vector<int64_t>{1, 2, 1, 1}));
    EXPECT_NEAR(ok[0][0][0][0][0].item<double>(), 1.0, 1e-6);  // the mean of a constant image
    std::string e = raises<ValueError>(
        [&] { model->forward_list({ones({1, 2, 4, 4}), reshape(rois, {1, 4}), full({1}, 3, DType::Int64)}); });
    EXPECT_TRUE(contains(e, "node roi (RoiAlign, opset 16)") && contains(e, "batch index 3 is out of range")) << e;
  }
}

// TfIdfVectorizer against a direct count written here from Operators.md's definition
// (unigrams once per position; n >= 2 at every distance 1 .. max_skip_count + 1), in the
// three modes, 1-D and 2-D, eager and compiled; bad attributes name the node.
namespace {
::onnx::ModelProto tfidf_model(const std::string& mode, int64_t lo, int64_t hi, int64_t skips,
                               const std::vector<int64_t>& counts, const std::vector<int64_t>& indexes,
                               const std::vector<int64_t>& pool, const std::vector<float>& weights) {
  ::onnx::ModelProto m;
  set_opset(m, 13);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "x")->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
  add_value(g->mutable_output(), "y");
  auto* n = add_node(g, "TfIdfVectorizer", {"x"}, {"y"}, "tfidf");
  attr_i(n, "min_gram_length", lo);
  attr_i(n, "max_gram_length", hi);
  attr_i(n, "max_skip_count", skips);
  auto* a = n->add_attribute();
  a->set_name("mode");
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(mode);
  attr_ints(n, "ngram_counts", counts);
  attr_ints(n, "ngram_indexes", indexes);
  attr_ints(n, "pool_int64s", pool);
  if (!weights.empty()) {
    auto* w = n->add_attribute();
    w->set_name("weights");
    w->set_type(::onnx::AttributeProto::FLOATS);
    for (float v : weights) w->add_floats(v);
  }
  return m;
}

// The pool's n-grams as lists, in pool order.
std::vector<std::vector<int64_t>> tfidf_grams(const std::vector<int64_t>& counts, const std::vector<int64_t>& pool) {
  std::vector<std::vector<int64_t>> out;
  for (size_t n = 1; n <= counts.size(); ++n) {
    const size_t end = n < counts.size() ? static_cast<size_t>(counts[n]) : pool.size();
    for (size_t i = static_cast<size_t>(counts[n - 1]); i + n <= end; i += n)
      out.emplace_back(pool.begin() + static_cast<std::ptrdiff_t>(i), pool.begin() + static_cast<std::ptrdiff_t>(i + n));
  }
  return out;
}
}  // namespace

TEST(OnnxImport, TfIdfVectorizerCountsSkipGramsInEveryMode) {
  // Unigrams 4, 9; bigrams (4, 9), (9, 9); trigrams (4, 9, 4), (9, 4, 9); output columns
  // shuffled, one column left unused.
  const std::vector<int64_t> counts = {0, 2, 6};
  const std::vector<int64_t> pool = {4, 9, 4, 9, 9, 9, 4, 9, 4, 9, 4, 9};
  const std::vector<int64_t> indexes = {6, 0, 3, 1, 5, 2};
  const std::vector<float> weights = {0.5f, 2.0f, 0.25f, 3.0f, 1.5f, 0.75f};
  const auto grams = tfidf_grams(counts, pool);
  const std::vector<std::vector<int64_t>> rows = {{4, 9, 4, 9, 9, 4, 9, 1, 4, 9}, {9, 9, 9, 4, 4, 7, 9, 4, 9, 9}};
  for (const std::string mode : {"TF", "IDF", "TFIDF"}) {
    for (int64_t lo : {1, 2}) {
      const int64_t hi = 3, skips = 2;
      auto model = load(tfidf_model(mode, lo, hi, skips, counts, indexes, pool, weights));
      std::vector<int64_t> flat;
      for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
      Tensor x = from_vector(flat, {2, 10});
      Tensor y = (*model)(x);
      ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 7}));
      ASSERT_EQ(y.dtype(), DType::Float32);
      for (size_t r = 0; r < rows.size(); ++r) {
        std::vector<double> want(7, 0.0);
        for (size_t gi = 0; gi < grams.size(); ++gi) {
          const auto& gm = grams[gi];
          const int64_t n = static_cast<int64_t>(gm.size());
          if (n < lo || n > hi) continue;
          double c = 0;
          for (int64_t d = 1; d <= (n == 1 ? 1 : skips + 1); ++d)
            for (int64_t i = 0; i + (n - 1) * d < 10; ++i) {
              bool match = true;
              for (int64_t k = 0; k < n; ++k) match = match && rows[r][static_cast<size_t>(i + k * d)] == gm[static_cast<size_t>(k)];
              c += match ? 1 : 0;
            }
          if (mode == "IDF") c = std::min(c, 1.0) * weights[gi];
          if (mode == "TFIDF") c *= weights[gi];
          want[static_cast<size_t>(indexes[gi])] = c;
        }
        for (int64_t j = 0; j < 7; ++j)
          EXPECT_EQ(y[static_cast<int64_t>(r)][j].item<double>(), static_cast<double>(static_cast<float>(want[j])))
              << mode << " lo " << lo << " row " << r << " column " << j;
      }
      // 1-D input: the first row alone, as a vector.
      Tensor y1 = (*model)(from_vector(rows[0], {10}));
      EXPECT_TRUE(equal(y1, y[0])) << mode;
      autograd::NoGradGuard ng;
      auto cm = tandem::compile(std::static_pointer_cast<nn::Module>(model));
      Tensor c1 = (*cm)(x), c2 = (*cm)(x);
      EXPECT_TRUE(equal(c1, y) && equal(c2, y)) << mode;
    }
  }
  // Bad attributes and inputs: the node named, what was expected said.
  auto bad = [&](const ::onnx::ModelProto& m, const Tensor& x, const std::string& part) {
    auto model = load(m);
    std::string e = raises<ValueError>([&] { (*model)(x); });
    EXPECT_TRUE(contains(e, "node tfidf (TfIdfVectorizer, opset 13)") && contains(e, part)) << e;
  };
  Tensor x = from_vector(std::vector<int64_t>{4, 9, 4}, {3});
  bad(tfidf_model("TF", 1, 3, 0, counts, {0, 1}, pool, {}), x, "one entry per pool n-gram (6), got 2");
  bad(tfidf_model("BM25", 1, 3, 0, counts, indexes, pool, {}), x, "mode must be TF, IDF or TFIDF");
  bad(tfidf_model("TF", 2, 4, 0, counts, indexes, pool, {}), x, "max_gram_length <= len(ngram_counts)");
  bad(tfidf_model("TF", 1, 3, 0, {0, 3, 6}, indexes, pool, {}), x, "splitting it into whole n-grams");
  bad(tfidf_model("TFIDF", 1, 3, 0, counts, indexes, pool, {1.0f}), x, "weights must have one entry per pool n-gram");
  bad(tfidf_model("TF", 1, 3, 0, counts, indexes, pool, {}), ones({3}), "X must be int32 or int64");
  bad(tfidf_model("TF", 1, 3, 0, counts, indexes, pool, {}), zeros({1, 1, 3}, DType::Int64), "X must be 1-D or 2-D");
  bad(tfidf_model("TF", 1, 3, 0, counts, {0, 1, 2, 3, 4, 1 << 25}, pool, {}), x, "ngram_indexes entries must be in");
}

// Gradient (ai.onnx.preview.training) differentiates a part of the graph with tandem's
// autograd: d(a * b + a)/da = b + 1, d/db = a; y naming no value is a ValueError naming
// the node.
TEST(OnnxImport, GradientDifferentiatesThePartOfTheGraphYDependsOn) {
  ::onnx::ModelProto m;
  set_opset(m, 13);
  auto* o = m.add_opset_import();
  o->set_domain("ai.onnx.preview.training");
  o->set_version(1);
  auto* g = m.mutable_graph();
  add_value(g->mutable_input(), "a");
  add_value(g->mutable_input(), "b");
  add_value(g->mutable_output(), "da");
  add_value(g->mutable_output(), "db");
  add_node(g, "Mul", {"a", "b"}, {"p"});
  add_node(g, "Add", {"p", "a"}, {"y"});
  auto* grad = add_node(g, "Gradient", {"a", "b"}, {"da", "db"}, "grad");
  grad->set_domain("ai.onnx.preview.training");
  auto* xs = grad->add_attribute();
  xs->set_name("xs");
  xs->set_type(::onnx::AttributeProto::STRINGS);
  xs->add_strings("a");
  xs->add_strings("b");
  auto* y = grad->add_attribute();
  y->set_name("y");
  y->set_type(::onnx::AttributeProto::STRING);
  y->set_s("y");
  auto model = load(m);
  Tensor a = tensor({1.0f, -2.0f}), b = tensor({3.0f, 0.5f});
  std::vector<Tensor> d;
  {
    autograd::NoGradGuard ng;  // Gradient records its own graph even under no_grad
    d = model->forward_list({a, b});
  }
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(allclose(d[0], add(b, 1.0)));
  EXPECT_TRUE(allclose(d[1], a));
  y->set_s("nothing");
  auto bad = load(m);
  std::string e = raises<ValueError>([&] { bad->forward_list({a, b}); });
  EXPECT_TRUE(contains(e, "node grad (Gradient, opset 1)") && contains(e, "'nothing'")) << e;
}

TEST(OnnxImport, SupportedOpsListsTheTable) {
  auto ops = tandem::onnx::supported_ops();
  for (const char* op : {"Conv", "Gemm", "MatMul", "Relu", "BatchNormalization", "MaxPool", "AveragePool", "Reshape",
                         "Slice", "Softmax", "Resize", "Gather", "Where", "Cast", "Pad"})
    EXPECT_TRUE(std::find(ops.begin(), ops.end(), op) != ops.end()) << op;
  EXPECT_TRUE(std::is_sorted(ops.begin(), ops.end()));
}

// The fuzz target's seeds (tests/fuzz/make_seeds.py writes them byte by byte) are valid
// files that reach the converters: the models load and run.
TEST(OnnxImport, FuzzSeedsLoadAndRun) {
  const std::string dir = std::string(TANDEM_ONNX_TEST_DIR) + "/../fuzz/corpus/onnx/";
  auto mlp = tandem::onnx::load_model(dir + "mlp");
  Tensor y = (*mlp)(ones({1, 3}));
  EXPECT_TRUE(allclose(y, tensor({3.25f, 7.0f}), 1e-6, 1e-6));  // relu([6.5, 14]) * 0.5
  auto conv = tandem::onnx::load_model(dir + "conv_pool");
  EXPECT_EQ((*conv)(ones({1, 1, 4, 4})).sizes().vec(), (std::vector<int64_t>{1, 1, 2, 2}));
  Tensor t = tandem::onnx::load_tensor(dir + "tensor");
  EXPECT_TRUE(equal(t, from_vector(std::vector<int64_t>{1, -2, 3, int64_t{1} << 40}, {2, 2})));
}

// A deterministic mutation sweep over valid models (the fuzz target's idea, in the normal
// test run): bit flips, byte overwrites, truncations and duplicated spans of a serialized
// model either load or raise a tandem::Error; loaded ones run or raise one too.
TEST(OnnxHostile, MutatedModelsLoadOrRaiseErrors) {
  const std::string good = mlp_model().SerializeAsString();
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto next = [&] {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  };
  int loaded = 0, refused = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string m = good;
    const int edits = 1 + static_cast<int>(next() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = next() % m.size();
      switch (next() % 4) {
        case 0: m[pos] = static_cast<char>(m[pos] ^ (1 << (next() % 8))); break;
        case 1: m[pos] = static_cast<char>(next()); break;
        case 2: m.resize(pos + 1); break;
        default: m.insert(pos, m.substr(pos, 1 + next() % 16)); break;
      }
    }
    try {
      auto model = tandem::onnx::load_model_from_bytes(m, "mutant.onnx");
      ++loaded;
      try {
        autograd::NoGradGuard ng;
        model->forward_list({from_vector(iota(6, 0.5f), {2, 3})});
      } catch (const Error&) {
      }
    } catch (const Error& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find("mutant.onnx"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(loaded, 0);
  EXPECT_GT(refused, 0);
}

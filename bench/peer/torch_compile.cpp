// The PyTorch (libtorch 1.13) peer of bench_compile.cpp: Fashion-MNIST CNN inference
// (bench/cnn_workload.h) with torch eager and TorchScript. It never links tandem.
//   cnn/b<N>/torch_eager       torch::nn::Sequential under c10::InferenceMode
//   cnn/b<N>/torch_script      the same model as TorchScript (torch::jit::Module::define,
//                              then torch::jit::freeze), under InferenceMode
//   cnn/b<N>/torch_script_opt  frozen, then torch::jit::optimize_for_inference (conv/relu
//                              fusion, MKLDNN layouts where it judges them faster)
// torch.jit.trace has no C++ API in 1.13, so the TorchScript module is scripted from
// source: the same ops (conv2d, relu, max_pool2d, flatten, linear) with the same weights.
//   pointwise/gelu/torch_eager, .../torch_script   the elementwise chain of cnn_workload.h
//                              eagerly and as a scripted function (torch::jit::compile)
#include <torch/script.h>
#include <torch/torch.h>

#include <benchmark/benchmark.h>

#include <string>

#include "../cnn_workload.h"

namespace {

torch::nn::Sequential make_eager() {
  namespace nn = torch::nn;
  nn::Sequential m(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                   nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2), nn::Flatten(),
                   nn::Linear(3136, 128), nn::ReLU(), nn::Linear(128, 10));
  m->eval();
  torch::NoGradGuard ng;
  auto params = m->named_parameters();
  if (params.size() != bench_cnn::kNumParams) throw std::runtime_error("parameter count differs from cnn_workload.h");
  for (int p = 0; p < bench_cnn::kNumParams; ++p) {
    auto& t = params[bench_cnn::kParams[p].name];
    if (t.numel() != bench_cnn::numel(bench_cnn::kParams[p])) throw std::runtime_error("parameter shape differs");
    float* d = t.data_ptr<float>();
    for (int64_t i = 0; i < t.numel(); ++i) d[i] = bench_cnn::param_value(p, i);
  }
  return m;
}

const char* kScript = R"JIT(
def forward(self, x):
    x = torch.relu(torch.conv2d(x, self.p0, self.p1, [1, 1], [1, 1]))
    x = torch.max_pool2d(x, [2, 2])
    x = torch.relu(torch.conv2d(x, self.p2, self.p3, [1, 1], [1, 1]))
    x = torch.max_pool2d(x, [2, 2])
    x = torch.flatten(x, 1)
    x = torch.relu(torch.linear(x, self.p4, self.p5))
    return torch.linear(x, self.p6, self.p7)
)JIT";

torch::jit::Module make_script(bool optimize) {
  auto eager = make_eager();
  torch::jit::Module m("FashionCNN");
  auto params = eager->named_parameters();
  for (int p = 0; p < bench_cnn::kNumParams; ++p)
    m.register_parameter("p" + std::to_string(p), params[bench_cnn::kParams[p].name].detach().clone(), false);
  m.define(kScript);
  m.eval();
  torch::jit::Module frozen = torch::jit::freeze(m);
  return optimize ? torch::jit::optimize_for_inference(frozen) : frozen;
}

torch::Tensor make_input(int64_t n) {
  torch::Tensor x = torch::empty({n, 1, 28, 28});
  float* d = x.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) d[i] = bench_cnn::input_value(i);
  return x;
}

double checksum_of(const torch::Tensor& logits) {
  torch::Tensor c = logits.contiguous();
  return bench_cnn::checksum(c.data_ptr<float>(), c.numel());
}

void eager(benchmark::State& st, int64_t batch) {
  c10::InferenceMode im;
  auto model = make_eager();
  st.counters["checksum"] = checksum_of(model->forward(make_input(bench_cnn::kCheckBatch)));
  torch::Tensor x = make_input(batch);
  model->forward(x);
  for (auto _ : st) {
    torch::Tensor y = model->forward(x);
    benchmark::DoNotOptimize(y);
  }
  st.SetItemsProcessed(st.iterations() * batch);
}

void script(benchmark::State& st, int64_t batch, bool optimize) {
  c10::InferenceMode im;
  torch::jit::Module m = make_script(optimize);
  torch::Tensor x = make_input(batch), check = make_input(bench_cnn::kCheckBatch);
  // The profiling executor specialises after a few runs: warm both shapes up first.
  for (int k = 0; k < 5; ++k) {
    m.forward({check});
    m.forward({x});
  }
  st.counters["checksum"] = checksum_of(m.forward({check}).toTensor());
  for (auto _ : st) {
    torch::Tensor y = m.forward({x}).toTensor();
    benchmark::DoNotOptimize(y);
  }
  st.SetItemsProcessed(st.iterations() * batch);
}

torch::Tensor gelu_chain(const torch::Tensor& x) {
  torch::Tensor inner = (x + x * x * x * 0.044715) * 0.7978845608;
  return x * 0.5 * (inner.tanh() + 1.0);
}

const char* kGeluScript = R"JIT(
def gelu_chain(x):
    inner = (x + x * x * x * 0.044715) * 0.7978845608
    return x * 0.5 * (inner.tanh() + 1.0)
)JIT";

void pointwise(benchmark::State& st, bool script) {
  c10::InferenceMode im;
  torch::Tensor x = torch::empty({bench_cnn::kPointwiseRows, bench_cnn::kPointwiseCols});
  float* d = x.data_ptr<float>();
  for (int64_t i = 0; i < x.numel(); ++i) d[i] = bench_cnn::pointwise_value(i);
  auto cu = torch::jit::compile(kGeluScript);
  auto run = [&] { return script ? cu->run_method("gelu_chain", x).toTensor() : gelu_chain(x); };
  for (int k = 0; k < 5; ++k) run();  // the profiling executor specialises after a few runs
  st.counters["checksum"] = run().to(torch::kFloat64).sum().item<double>();
  for (auto _ : st) {
    torch::Tensor y = run();
    benchmark::DoNotOptimize(y);
  }
  st.SetBytesProcessed(st.iterations() * x.nbytes() * 2);
}

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(2);  // comparisons are at 2 threads, as bench/peer/torch_core.cpp
  benchmark::AddCustomContext("torch_version", TORCH_VERSION);
  benchmark::AddCustomContext("torch_threads", std::to_string(at::get_num_threads()));
  for (int64_t b : bench_cnn::kBatches) {
    const std::string s = "cnn/b" + std::to_string(b);
    benchmark::RegisterBenchmark((s + "/torch_eager").c_str(), eager, b)->UseRealTime();
    benchmark::RegisterBenchmark((s + "/torch_script").c_str(), script, b, false)->UseRealTime();
    benchmark::RegisterBenchmark((s + "/torch_script_opt").c_str(), script, b, true)->UseRealTime();
  }
  benchmark::RegisterBenchmark("pointwise/gelu/torch_eager", pointwise, false)->UseRealTime();
  benchmark::RegisterBenchmark("pointwise/gelu/torch_script", pointwise, true)->UseRealTime();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

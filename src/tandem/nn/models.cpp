#include "tandem/nn/models.h"

namespace tandem::nn::models {

std::shared_ptr<Sequential> fashion_mlp() {
  return std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Flatten>(), std::make_shared<Linear>(784, 256), std::make_shared<ReLU>(),
      std::make_shared<Linear>(256, 128), std::make_shared<ReLU>(), std::make_shared<Linear>(128, 10)});
}

std::shared_ptr<Sequential> mlp(const std::vector<int64_t>& sizes) {
  TANDEM_CHECK(sizes.size() >= 2, ValueError, "models::mlp", "got ", sizes.size(), " size(s), expected at least 2");
  for (int64_t n : sizes) TANDEM_CHECK(n >= 1, ValueError, "models::mlp", "got a layer size ", n, ", expected >= 1");
  std::vector<ModulePtr> layers;
  for (size_t k = 0; k + 1 < sizes.size(); ++k) {
    if (k > 0) layers.push_back(std::make_shared<ReLU>());
    layers.push_back(std::make_shared<Linear>(sizes[k], sizes[k + 1]));
  }
  return std::make_shared<Sequential>(std::move(layers));
}

std::shared_ptr<Sequential> fashion_cnn() {
  ConvOptions pad1;
  pad1.padding = {1, 1};
  return std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Conv2d>(1, 32, std::vector<int64_t>{3, 3}, pad1), std::make_shared<ReLU>(),
      std::make_shared<MaxPool2d>(std::vector<int64_t>{2, 2}),
      std::make_shared<Conv2d>(32, 64, std::vector<int64_t>{3, 3}, pad1), std::make_shared<ReLU>(),
      std::make_shared<MaxPool2d>(std::vector<int64_t>{2, 2}), std::make_shared<Flatten>(),
      std::make_shared<Linear>(3136, 128), std::make_shared<ReLU>(), std::make_shared<Linear>(128, 10)});
}

}  // namespace tandem::nn::models

#include "tandem/nn/models.h"

namespace tandem::nn::models {

std::shared_ptr<Sequential> fashion_mlp() {
  return std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Flatten>(), std::make_shared<Linear>(784, 256), std::make_shared<ReLU>(),
      std::make_shared<Linear>(256, 128), std::make_shared<ReLU>(), std::make_shared<Linear>(128, 10)});
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

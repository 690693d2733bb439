// Checkpoints (io/checkpoint.h): module + optimizer round trip, metadata, and errors that
// name the file.
#include <cstring>
#include <gtest/gtest.h>

#include "support/temp_dir.h"
#include "support/tensor_json.h"
#include "tandem/tandem.h"

namespace {

using namespace tandem;

std::shared_ptr<nn::Sequential> small_model() {
  return std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::ReLU>(), std::make_shared<nn::BatchNorm1d>(3),
      std::make_shared<nn::Linear>(3, 2)});
}

void train_steps(nn::Module& m, optim::Optimizer& opt, int steps) {
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    Tensor loss = m.forward(randn({8, 4})).pow(2).mean();
    loss.backward();
    opt.step();
  }
}

std::string expect_throw_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Checkpoint, RoundTripModelOptimizerAndMetadata) {
  test::TempDir dir;
  manual_seed(1);
  auto a = small_model();
  optim::Adam oa(a->parameters(), optim::AdamOptions(0.01).amsgrad(true));
  train_steps(*a, oa, 3);
  io::save_checkpoint(dir.file("ck.safetensors"), *a, &oa, {{"epoch", "3"}});

  manual_seed(2);  // other initial weights
  auto b = small_model();
  optim::Adam ob(b->parameters(), optim::AdamOptions(0.5));
  io::Metadata meta = io::load_checkpoint(dir.file("ck.safetensors"), *b, &ob);
  EXPECT_EQ(meta, (io::Metadata{{"epoch", "3"}}));
  auto sa = a->state_dict(), sb = b->state_dict();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_EQ(oracle::compare_tensors(sb[i].second, sa[i].second, 0, 0), "") << sa[i].first;
  EXPECT_DOUBLE_EQ(ob.param_groups()[0].options.get("lr"), 0.01);
  EXPECT_DOUBLE_EQ(ob.param_groups()[0].options.get("amsgrad"), 1);
  // Continuing both gives the same weights: the optimizer state came back whole.
  manual_seed(5);
  train_steps(*a, oa, 2);
  manual_seed(5);
  train_steps(*b, ob, 2);
  sa = a->state_dict(), sb = b->state_dict();
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_EQ(oracle::compare_tensors(sb[i].second, sa[i].second, 0, 0), "") << sa[i].first;
  // Other safetensors readers see plain names.
  io::SafetensorsContents raw = io::load_safetensors(dir.file("ck.safetensors"));
  EXPECT_TRUE(raw.find("model.0.weight").has_value());
  EXPECT_TRUE(raw.find("model.2.running_mean").has_value());
  EXPECT_TRUE(raw.find("optimizer.state.0.exp_avg").has_value());
  EXPECT_EQ(raw.metadata.at("tandem.optimizer"), "Adam");
}

TEST(Checkpoint, ModelOnly) {
  test::TempDir dir;
  auto a = small_model();
  io::save_checkpoint(dir.file("m.safetensors"), *a, nullptr);
  auto b = small_model();
  EXPECT_TRUE(io::load_checkpoint(dir.file("m.safetensors"), *b, nullptr).empty());
  optim::SGD opt(b->parameters(), optim::SGDOptions(0.1));
  const std::string msg = expect_throw_message([&] { io::load_checkpoint(dir.file("m.safetensors"), *b, &opt); });
  EXPECT_NE(msg.find("m.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no optimizer state"), std::string::npos) << msg;
}

TEST(Checkpoint, ErrorsNameTheFile) {
  test::TempDir dir;
  auto a = small_model();
  optim::SGD sgd(a->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  train_steps(*a, sgd, 1);
  EXPECT_THROW(io::save_checkpoint(dir.file("x.safetensors"), *a, &sgd, {{"tandem.epoch", "1"}}), ValueError);
  const std::string path = dir.file("ck.safetensors");
  io::save_checkpoint(path, *a, &sgd);

  // Another architecture: the module's error, prefixed with the file.
  nn::Linear other(4, 2);
  std::string msg = expect_throw_message([&] { io::load_checkpoint(path, other, nullptr); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected keys"), std::string::npos) << msg;
  // Another optimizer kind.
  auto b = small_model();
  optim::Adam adam(b->parameters());
  msg = expect_throw_message([&] { io::load_checkpoint(path, *b, &adam); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  // A plain safetensors file is not a checkpoint.
  io::save_safetensors(dir.file("plain.safetensors"), {{"w", ones({2})}});
  msg = expect_throw_message([&] { io::read_checkpoint(dir.file("plain.safetensors")); });
  EXPECT_NE(msg.find("not a tandem checkpoint"), std::string::npos) << msg;
  // Unknown tensor names and malformed group JSON.
  io::save_safetensors(dir.file("odd.safetensors"), {{"w", ones({2})}}, {{"tandem.format", "checkpoint-1"}});
  msg = expect_throw_message([&] { io::read_checkpoint(dir.file("odd.safetensors")); });
  EXPECT_NE(msg.find("unexpected tensor \"w\""), std::string::npos) << msg;
  io::save_safetensors(dir.file("bad.safetensors"), {{"model.w", ones({2})}},
                       {{"tandem.format", "checkpoint-1"}, {"tandem.optimizer", "SGD"}, {"tandem.param_groups", "[{"}});
  msg = expect_throw_message([&] { io::read_checkpoint(dir.file("bad.safetensors")); });
  EXPECT_NE(msg.find("malformed \"tandem.param_groups\""), std::string::npos) << msg;
  // A truncated checkpoint: load_safetensors' error, naming the file.
  {
    std::string bytes = test::read_bytes(path);
    test::write_bytes(dir.file("cut.safetensors"), bytes.substr(0, bytes.size() / 2));
  }
  msg = expect_throw_message([&] { io::read_checkpoint(dir.file("cut.safetensors")); });
  EXPECT_NE(msg.find("cut.safetensors"), std::string::npos) << msg;
}

// Outcome of loading a damaged checkpoint: "" when it loaded, else the tandem::Error text.
// Anything else escaping (a std::exception that is not a tandem::Error) fails the test.
std::string load_damaged(const std::string& path, const std::string& what) {
  auto m = small_model();
  optim::SGD sgd(m->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  try {
    io::load_checkpoint(path, *m, &sgd);
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": a non-tandem exception escaped: " << e.what();
    return "?";
  }
  return "";
}

// Every truncation and many byte changes in the header: each load either succeeds (a
// change the format cannot see, e.g. padding or a metadata digit) or raises a
// tandem::Error naming the file; never another exception or a crash.
TEST(Checkpoint, DamagedFilesRaiseErrorsNamingTheFile) {
  test::TempDir dir;
  manual_seed(3);
  auto a = small_model();
  optim::SGD sgd(a->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  train_steps(*a, sgd, 2);
  const std::string good = dir.file("good.safetensors");
  io::save_checkpoint(good, *a, &sgd, {{"epoch", "2"}});
  const std::string bytes = test::read_bytes(good);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  const size_t data_start = 8 + static_cast<size_t>(header_len);
  ASSERT_LT(data_start, bytes.size());
  const std::string path = dir.file("damaged.safetensors");

  int errors = 0;
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    test::write_bytes(path, bytes.substr(0, cut));
    const std::string msg = load_damaged(path, "truncated at " + std::to_string(cut));
    EXPECT_NE(msg, "") << "truncated at " << cut << " loaded";
    EXPECT_NE(msg.find(path), std::string::npos) << "truncated at " << cut << ": " << msg;
    ++errors;
  }
  // Per header byte: two bit flips and one structural character (rotating through the
  // list, so every character lands in many places without a quadratic test time).
  const char replacements[] = {'"', '{', '}', '[', ']', ',', ':', '9', '-', ' ', '\0', 'e', '.'};
  for (size_t pos = 0; pos < data_start; ++pos) {
    std::vector<std::string> variants;
    for (unsigned char x : {0x01, 0x80}) {
      std::string b = bytes;
      b[pos] = static_cast<char>(b[pos] ^ x);
      variants.push_back(std::move(b));
    }
    if (char r = replacements[pos % std::size(replacements)]; bytes[pos] != r) {
      std::string b = bytes;
      b[pos] = r;
      variants.push_back(std::move(b));
    }
    for (const auto& b : variants) {
      test::write_bytes(path, b);
      const std::string msg = load_damaged(path, "byte " + std::to_string(pos) + " changed");
      if (msg.empty()) continue;
      ++errors;
      EXPECT_NE(msg.find(path), std::string::npos) << "byte " << pos << " changed: " << msg;
    }
  }
  EXPECT_GT(errors, static_cast<int>(bytes.size()));
}

}  // namespace

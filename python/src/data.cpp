// tandem._C datasets and DataLoader: the C++ data layer (Fashion-MNIST/MNIST, tensor
// datasets, the shuffling, prefetching loader) from Python.
#include <memory>
#include <string>

#include "common.h"

namespace tandem::python {

namespace {

py::tuple example_tuple(const data::Example& e) { return py::make_tuple(tensor_or_none(e.data), tensor_or_none(e.target)); }

// One epoch of a DataLoader as a Python iterator. Waiting for the prefetch thread
// happens without the GIL.
struct LoaderIter {
  std::shared_ptr<data::DataLoader> loader;
  data::DataLoader::Iterator it;
  bool started = false;

  py::tuple next() {
    {
      py::gil_scoped_release nogil;
      if (!started) {
        it = loader->begin();
        started = true;
      } else {
        ++it;
      }
    }
    if (it == loader->end()) throw py::stop_iteration();
    const data::Batch& b = *it;
    return py::make_tuple(tensor_or_none(b.data), tensor_or_none(b.target));
  }
};

}  // namespace

void bind_data(py::module_& m) {
  using data::Dataset;
  py::class_<Dataset, std::shared_ptr<Dataset>>(m, "Dataset", "A C++ map-style dataset (torch.utils.data.Dataset).")
      .def("__len__", &Dataset::size)
      .def("__getitem__", [](const Dataset& d, int64_t i) {
        if (i < 0) i += d.size();
        return example_tuple(d.get(i));
      }, "(data, target) of example i (negative counts from the end); IndexError out of range.");
  py::class_<data::TensorDataset, Dataset, std::shared_ptr<data::TensorDataset>>(
      m, "TensorDataset", "Examples are rows (dim 0) of `data` and `targets` (torch.utils.data.TensorDataset).")
      .def(py::init([](const Tensor& d, py::object t) {
        return std::make_shared<data::TensorDataset>(d, t.is_none() ? Tensor() : t.cast<Tensor>());
      }), py::arg("data"), py::arg("targets") = py::none());
  py::class_<data::datasets::MNIST, Dataset, std::shared_ptr<data::datasets::MNIST>>(
      m, "MNIST", "MNIST from gzip'd IDX files: examples (float32 [1, 28, 28] in [0, 1], int64 label).")
      .def(py::init<const std::string&, bool>(), py::arg("root"), py::arg("train") = true)
      .def_property_readonly("targets", &data::datasets::MNIST::targets, "The labels, int64 [N].");
  py::class_<data::datasets::FashionMNIST, data::datasets::MNIST, std::shared_ptr<data::datasets::FashionMNIST>>(
      m, "FashionMNIST", R"doc(Fashion-MNIST from the Debian package dataset-fashion-mnist (or `root`):
examples (float32 [1, 28, 28] in [0, 1], int64 label). RuntimeError when the files are
missing; tandem never downloads (download=True raises NotImplementedError).)doc")
      .def(py::init<const std::string&, bool, bool>(), py::arg("root") = data::datasets::FashionMNIST::kDefaultRoot,
           py::arg("train") = true, py::arg("download") = false)
      .def_property_readonly_static("classes", [](py::object) { return data::datasets::FashionMNIST::classes(); },
                                    "Class names by label.");

  m.def("shuffled_indices", [](int64_t n, uint64_t seed, int64_t epoch) {
    return data::shuffled_indices(n, seed, epoch);
  }, py::arg("n"), py::arg("seed"), py::arg("epoch"), R"doc(The order in which a shuffling DataLoader visits n examples
in epoch `epoch` (a list of ints, a permutation of range(n)): a Fisher-Yates shuffle driven
by a Philox generator seeded with `seed`, as the C++ DataLoader. ValueError for n < 0 or
epoch < 0.)doc");
  m.def("_draw_seed", [] { return default_generator().next_u64() >> 1; },
        "A non-negative 63-bit seed drawn from the default generator (advances it by 2 words).");

  py::class_<LoaderIter>(m, "_LoaderIter")
      .def("__iter__", [](py::handle self) { return py::reinterpret_borrow<py::object>(self); })
      .def("__next__", &LoaderIter::next);
  py::class_<data::DataLoader, std::shared_ptr<data::DataLoader>>(m, "DataLoader", R"doc(Batches of a C++ dataset
(torch.utils.data.DataLoader): each iteration is one epoch of (data [B, ...], target [B])
tuples, shuffled per (seed, epoch) when shuffle, built ahead on a background thread.
ValueError for batch_size < 1.)doc")
      .def(py::init([](std::shared_ptr<Dataset> ds, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last,
                       bool prefetch) {
        data::DataLoaderOptions o;
        o.batch_size = batch_size;
        o.shuffle = shuffle;
        o.seed = seed;
        o.drop_last = drop_last;
        o.prefetch = prefetch;
        return std::make_shared<data::DataLoader>(std::move(ds), o);
      }), py::arg("dataset"), py::arg("batch_size") = 1, py::arg("shuffle") = false, py::arg("seed") = 0,
           py::arg("drop_last") = false, py::arg("prefetch") = true)
      .def("__iter__", [](std::shared_ptr<data::DataLoader> l) { return LoaderIter{std::move(l), {}, false}; },
           "Starts the next epoch.")
      .def("__len__", &data::DataLoader::size, "Batches per epoch.")
      .def_property("epoch", &data::DataLoader::epoch, &data::DataLoader::set_epoch,
                    "The epoch the next iteration uses (settable, >= 0).");
}

}  // namespace tandem::python

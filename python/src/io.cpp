// tandem._C file I/O: the safetensors reader and writer (io/safetensors.h) that
// tandem.save / tandem.load build on.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common.h"

namespace tandem::python {

void bind_io(py::module_& m) {
  m.def("_save_safetensors", [](const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                                const std::map<std::string, std::string>& metadata) {
    py::gil_scoped_release nogil;
    io::save_safetensors(path, tensors, metadata);
  }, py::arg("path"), py::arg("tensors"), py::arg("metadata"),
        R"doc(Writes (name, tensor) pairs and string metadata to `path` in the safetensors format,
atomically (temporary file in the same directory, fsync, rename): `path` keeps its old
contents unless the new file is complete. ValueError for a duplicate, empty or reserved
name; RuntimeError naming the file and the system error when writing fails.)doc");
  m.def("_load_safetensors", [](const std::string& path) {
    io::SafetensorsContents c;
    {
      py::gil_scoped_release nogil;
      c = io::load_safetensors(path);
    }
    return py::make_tuple(py::cast(c.tensors), py::cast(c.metadata));
  }, py::arg("path"),
        R"doc(Reads a safetensors file: ([(name, tensor), ...] in file order, {metadata}). Every tensor
owns its memory. RuntimeError naming the file and the problem for a missing, truncated or
malformed file (header length, JSON, dtypes, shapes, offsets).)doc");
}

}  // namespace tandem::python

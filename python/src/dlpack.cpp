// DLPack exchange (__dlpack__, __dlpack_device__, tandem.from_dlpack): tensors move to
// and from numpy, PyTorch and other DLPack libraries without copies. The structs below
// are the DLPack ABI (the capsule-based protocol, version 0.x), declared from its
// specification; CPU memory only.
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

namespace tandem::python {

namespace {

struct DLDevice {
  int32_t device_type;  // 1 = kDLCPU
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // 0 int, 1 uint, 2 float, 4 bfloat, 6 bool
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null = contiguous
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
constexpr int32_t kDLCPU = 1;
enum : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 };

// What an exported capsule owns: the tensor (keeping its storage alive) and the arrays
// the DLTensor points at.
struct Export {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};

DLDataType dl_dtype(DType t) {
  const auto bits = static_cast<uint8_t>(element_size(t) * 8);
  switch (t) {
    case DType::Bool: return {kDLBool, 8, 1};
    case DType::UInt8: return {kDLUInt, 8, 1};
    case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64: return {kDLInt, bits, 1};
    case DType::Float16: case DType::Float32: case DType::Float64: return {kDLFloat, bits, 1};
    case DType::BFloat16: return {kDLBfloat, 16, 1};
  }
  return {kDLFloat, bits, 1};
}

DType tandem_dtype(const DLDataType& d) {
  TANDEM_CHECK(d.lanes == 1, TypeError, "from_dlpack", "vector dtypes (lanes ", d.lanes, ") are not supported");
  switch (d.code) {
    case kDLBool: if (d.bits == 8) return DType::Bool; break;
    case kDLUInt: if (d.bits == 8) return DType::UInt8; break;
    case kDLInt:
      if (d.bits == 8) return DType::Int8;
      if (d.bits == 16) return DType::Int16;
      if (d.bits == 32) return DType::Int32;
      if (d.bits == 64) return DType::Int64;
      break;
    case kDLFloat:
      if (d.bits == 16) return DType::Float16;
      if (d.bits == 32) return DType::Float32;
      if (d.bits == 64) return DType::Float64;
      break;
    case kDLBfloat: if (d.bits == 16) return DType::BFloat16; break;
    default: break;
  }
  throw TypeError(str_cat("[from_dlpack] unsupported DLPack dtype (code ", int(d.code), ", ", int(d.bits), " bits)"));
}

py::capsule to_dlpack(const Tensor& t) {
  TANDEM_CHECK(!t.requires_grad(), RuntimeError, "__dlpack__",
               "can't export a tensor that requires grad; use tensor.detach().__dlpack__()");
  auto* e = new Export();
  e->tensor = t.detach();
  e->shape.assign(t.sizes().begin(), t.sizes().end());
  e->strides.assign(t.strides().begin(), t.strides().end());
  DLTensor& d = e->managed.dl_tensor;
  d.data = e->tensor.data_ptr();
  d.device = {kDLCPU, 0};
  d.ndim = static_cast<int32_t>(t.dim());
  d.dtype = dl_dtype(t.dtype());
  d.shape = e->shape.data();
  d.strides = e->strides.data();
  d.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](DLManagedTensor* self) { delete static_cast<Export*>(self->manager_ctx); };
  // An unconsumed capsule ("dltensor") frees the export when collected; a consumer renames
  // it "used_dltensor" and calls the deleter itself when done.
  PyObject* cap = PyCapsule_New(&e->managed, "dltensor", [](PyObject* c) {
    if (PyCapsule_IsValid(c, "dltensor")) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
      m->deleter(m);
    }
  });
  if (cap == nullptr) {
    delete e;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(cap);
}

Tensor from_dlpack(py::object obj) {
  py::object cap = obj;
  if (py::hasattr(obj, "__dlpack__")) {
    if (py::hasattr(obj, "__dlpack_device__")) {
      auto dev = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
      TANDEM_CHECK(dev.first == kDLCPU, ValueError, "from_dlpack", "only CPU tensors can be imported (device type ",
                   dev.first, ")");
    }
    cap = obj.attr("__dlpack__")();
  }
  TANDEM_CHECK(PyCapsule_IsValid(cap.ptr(), "dltensor"), TypeError, "from_dlpack",
               "expected an object with __dlpack__ or an unconsumed DLPack capsule");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
  const DLTensor& d = m->dl_tensor;
  TANDEM_CHECK(d.device.device_type == kDLCPU, ValueError, "from_dlpack", "only CPU tensors can be imported");
  const DType dt = tandem_dtype(d.dtype);
  DimVector sizes(d.shape, d.shape + d.ndim);
  std::optional<DimVector> strides;
  if (d.strides != nullptr) strides = DimVector(d.strides, d.strides + d.ndim);
  void* data = static_cast<char*>(d.data) + d.byte_offset;
  // Consume the capsule: from here the tensor owns the producer's memory and calls its
  // deleter (which may need the GIL: producers like numpy drop Python references).
  Tensor t = from_blob(data, sizes, dt, [m](void*) {
    if (m->deleter == nullptr) return;
    if (!Py_IsInitialized()) {
      m->deleter(m);
      return;
    }
    py::gil_scoped_acquire gil;
    m->deleter(m);
  }, strides);
  PyCapsule_SetName(cap.ptr(), "used_dltensor");
  return t;
}

}  // namespace

void bind_dlpack(py::module_& m, py::class_<Tensor>& cls) {
  cls.def("__dlpack__", [](const Tensor& t, py::object stream) { return to_dlpack(t); }, py::arg("stream") = py::none(),
          "A DLPack capsule sharing this tensor's memory (RuntimeError when it requires grad).")
      .def("__dlpack_device__", [](const Tensor&) { return py::make_tuple(kDLCPU, 0); },
           "(device type, id) for DLPack: (1, 0), the CPU.");
  m.def("from_dlpack", &from_dlpack, py::arg("ext_tensor"),
        R"doc(A tensor sharing the memory of a DLPack producer (numpy array, torch tensor,
...) or capsule, without copying. TypeError for dtypes tandem lacks (complex, ...);
ValueError for memory that is not on the CPU.)doc");
}

}  // namespace tandem::python

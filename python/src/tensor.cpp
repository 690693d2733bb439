// tandem._C.Tensor: properties, Python operators, indexing, conversions to Python values
// and numpy (zero-copy both ways), and the creation functions the package wraps.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "common.h"

namespace tandem::python {

namespace {

std::string type_name(py::handle h) { return py::str(py::type::of(h).attr("__name__")).cast<std::string>(); }

PyTypeObject* g_tensor_type = nullptr;
const py::detail::type_info* g_tensor_tinfo = nullptr;
using TensorHolder = py::class_<Tensor>::holder_type;
static_assert(std::is_same_v<TensorHolder, std::unique_ptr<Tensor>>, "wrap_tensor builds a unique_ptr holder");

// Runs a registered op (looked up once per call site); see run_op1 for the GIL.
Tensor run1(const OpDef& op, std::initializer_list<Tensor> inputs) {
  return run_op1(op, ArrayRef<Tensor>(inputs.begin(), inputs.size()));
}

py::object not_implemented() { return py::reinterpret_borrow<py::object>(Py_NotImplemented); }

bool is_tensor_object(PyObject* o) { return PyObject_TypeCheck(o, g_tensor_type) != 0; }

// a OP b for Python's binary operators; `reflected` for __radd__ & co. (b OP a).
// NotImplemented for operands that are neither tensors nor numbers, so Python tries the
// other side (and raises its usual TypeError). Two tensors take the fast path: no
// pybind11 conversion, the GIL kept for small operands.
py::object binary(const OpDef& op, py::handle a, py::handle b, bool reflected) {
  const Tensor* pa = tensor_ptr(a.ptr());
  const Tensor* pb = tensor_ptr(b.ptr());
  if (pa != nullptr && pb != nullptr) {
    const Tensor in[2] = {reflected ? *pb : *pa, reflected ? *pa : *pb};
    return wrap_tensor(run_op1(op, ArrayRef<Tensor>(in, 2)));
  }
  if (pb == nullptr && !is_tensor_object(b.ptr()) && !is_python_number(b)) return not_implemented();
  Tensor ta = pa != nullptr ? *pa : a.cast<Tensor>();
  Tensor tb = pb != nullptr ? *pb : to_tensor_arg(b, "other");
  return wrap_tensor(reflected ? run1(op, {tb, ta}) : run1(op, {ta, tb}));
}

// a OP= b: the op's in-place variant writes into a, which Python then rebinds to itself.
py::object inplace(const OpDef& op, py::handle a, py::handle b) {
  const Tensor* pb = tensor_ptr(b.ptr());
  if (pb == nullptr && !is_tensor_object(b.ptr()) && !is_python_number(b)) return not_implemented();
  const Tensor* pa = tensor_ptr(a.ptr());
  Tensor ta = pa != nullptr ? *pa : a.cast<Tensor>();
  run1(op, {ta, pb != nullptr ? *pb : to_tensor_arg(b, "other")});
  return py::reinterpret_borrow<py::object>(a);
}

// The number slots of tandem.Tensor's type, filled by hand (install_operator_slots) so
// that `a + b` calls C++ at once: the slots pybind11's methods give the type look up
// `__add__` on each call and go through pybind11's argument dispatch. They compute what
// those methods compute: the left operand's `__add__` when it is a tensor, else the
// right one's `__radd__`. A Python subclass of Tensor gets them too for the operators it
// does not override (inherit_operator_slots); one that overrides `__add__` or `__radd__`
// keeps Python's generic slot, so its methods are found as before.
enum SlotOp { kAdd, kSub, kMul, kTrueDiv, kFloorDiv, kMod, kPow, kMatMul, kAnd, kOr, kXor, kNumSlotOps };
struct SlotOps {
  const OpDef* op = nullptr;
  const OpDef* inplace = nullptr;  // nullptr: no in-place slot (matmul)
};
SlotOps g_slot_ops[kNumSlotOps];

template <int K>
PyObject* binary_slot(PyObject* a, PyObject* b) {
  try {
    const OpDef& op = *g_slot_ops[K].op;
    if (is_tensor_object(a)) return binary(op, a, b, false).release().ptr();
    return binary(op, b, a, true).release().ptr();
  } catch (...) {
    set_python_error_from_current_exception();
    return nullptr;
  }
}

template <int K>
PyObject* inplace_slot(PyObject* a, PyObject* b) {
  try {
    if (!is_tensor_object(a)) return not_implemented().release().ptr();
    return inplace(*g_slot_ops[K].inplace, a, b).release().ptr();
  } catch (...) {
    set_python_error_from_current_exception();
    return nullptr;
  }
}

// a ** b (nb_power is ternary: pow(a, b, m) has no tensor meaning, so NotImplemented, and
// Python raises its TypeError).
template <int K>
PyObject* power_slot(PyObject* a, PyObject* b, PyObject* mod) {
  if (mod != Py_None) return not_implemented().release().ptr();
  return binary_slot<K>(a, b);
}

template <int K>
PyObject* inplace_power_slot(PyObject* a, PyObject* b, PyObject* mod) {
  if (mod != Py_None) return not_implemented().release().ptr();
  return inplace_slot<K>(a, b);
}

// self OP other for the rich comparisons (tp_richcompare): Python passes the tensor as
// self, swapping the operator when the tensor is on the right (2 < t is t > 2). Indexed
// by Py_LT .. Py_GE.
const OpDef* g_compare_ops[6] = {};

PyObject* richcompare_slot(PyObject* self, PyObject* other, int op) {
  try {
    if (op < Py_LT || op > Py_GE || !is_tensor_object(self)) return not_implemented().release().ptr();
    return binary(*g_compare_ops[op], self, other, false).release().ptr();
  } catch (...) {
    set_python_error_from_current_exception();
    return nullptr;
  }
}

// -x, abs(x), ~x (nb_negative, nb_absolute, nb_invert).
enum UnaryOp { kNeg, kAbs, kInvert, kNumUnaryOps };
const OpDef* g_unary_ops[kNumUnaryOps] = {};

Tensor unary(const OpDef& op, py::handle x) {
  const Tensor* p = tensor_ptr(x.ptr());
  return run1(op, {p != nullptr ? *p : x.cast<Tensor>()});
}

template <int K>
PyObject* unary_slot(PyObject* x) {
  try {
    return wrap_tensor(unary(*g_unary_ops[K], x)).release().ptr();
  } catch (...) {
    set_python_error_from_current_exception();
    return nullptr;
  }
}

using indexing::TensorIndex;

std::optional<int64_t> opt_index(py::handle h) {
  if (h.is_none()) return std::nullopt;
  return py::reinterpret_borrow<py::object>(h).attr("__index__")().cast<int64_t>();
}

TensorIndex to_index(py::handle h) {
  if (h.is_none()) return TensorIndex(indexing::None);
  if (h.ptr() == Py_Ellipsis) return TensorIndex(indexing::Ellipsis);
  if (PyBool_Check(h.ptr())) return TensorIndex(h.ptr() == Py_True);
  if (py::isinstance<Tensor>(h)) return TensorIndex(h.cast<Tensor>());
  if (PySlice_Check(h.ptr())) {
    auto s = py::reinterpret_borrow<py::slice>(h);
    return TensorIndex(indexing::Slice(opt_index(s.attr("start")), opt_index(s.attr("stop")), opt_index(s.attr("step"))));
  }
  if (PyIndex_Check(h.ptr()) && !py::isinstance<py::array>(h)) {
    return TensorIndex(py::reinterpret_borrow<py::object>(h).attr("__index__")().cast<int64_t>());
  }
  if (PyList_Check(h.ptr()) || py::isinstance<py::array>(h)) {
    // A list or array of indices (or bools) becomes an index tensor, as in PyTorch.
    return TensorIndex(py::module_::import("tandem").attr("tensor")(h).cast<Tensor>());
  }
  throw IndexError("[__getitem__] only integers, slices (`:`), ellipsis (`...`), None, bools, lists and tensors "
                   "are valid indices, got " + type_name(h));
}

std::vector<TensorIndex> to_indices(py::handle key) {
  std::vector<TensorIndex> out;
  if (PyTuple_Check(key.ptr())) {
    for (py::handle e : py::reinterpret_borrow<py::tuple>(key)) out.push_back(to_index(e));
  } else {
    out.push_back(to_index(key));
  }
  return out;
}

py::object scalar_to_py(const Scalar& s) {
  if (s.is_bool()) return py::bool_(s.to_bool());
  if (s.is_integral()) return py::int_(s.to_int());
  return py::float_(s.to_double());
}

// Nested lists of sizes[d:] from contiguous data of type T.
template <typename T, typename Py>
py::object nested_list(const T* data, IntArrayRef sizes, size_t d, int64_t& pos) {
  py::list out(sizes[d]);
  for (int64_t i = 0; i < sizes[d]; ++i) {
    if (d + 1 == sizes.size()) out[i] = Py(data[pos++]);
    else out[i] = nested_list<T, Py>(data, sizes, d + 1, pos);
  }
  return out;
}

// numpy's name for a tandem dtype; TypeError for bfloat16 (numpy has none).
py::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::Bool: return py::dtype("bool");
    case DType::UInt8: return py::dtype("uint8");
    case DType::Int8: return py::dtype("int8");
    case DType::Int16: return py::dtype("int16");
    case DType::Int32: return py::dtype("int32");
    case DType::Int64: return py::dtype("int64");
    case DType::Float16: return py::dtype("float16");
    case DType::Float32: return py::dtype("float32");
    case DType::Float64: return py::dtype("float64");
    case DType::BFloat16: break;
  }
  throw TypeError("[numpy] numpy has no " + std::string(dtype_name(t)) + " dtype; convert first, e.g. x.float().numpy()");
}

DType dtype_of_numpy(const py::dtype& d) {
  const char kind = d.kind();
  const auto size = d.itemsize();
  const bool native = d.attr("isnative").cast<bool>();
  if (native) {
    if (kind == 'b' && size == 1) return DType::Bool;
    if (kind == 'u' && size == 1) return DType::UInt8;
    if (kind == 'i' && size == 1) return DType::Int8;
    if (kind == 'i' && size == 2) return DType::Int16;
    if (kind == 'i' && size == 4) return DType::Int32;
    if (kind == 'i' && size == 8) return DType::Int64;
    if (kind == 'f' && size == 2) return DType::Float16;
    if (kind == 'f' && size == 4) return DType::Float32;
    if (kind == 'f' && size == 8) return DType::Float64;
  }
  throw TypeError("[from_numpy] can't convert a numpy array of dtype " + py::str(py::handle(d)).cast<std::string>() +
                  "; the supported dtypes are bool, uint8, int8, int16, int32, int64, float16, float32 and float64");
}

py::array to_numpy(const Tensor& t, bool force) {
  TANDEM_CHECK(force || !t.requires_grad(), RuntimeError, "numpy",
               "can't call numpy() on a tensor that requires grad; use tensor.detach().numpy()");
  py::dtype dt = numpy_dtype(t.dtype());
  std::vector<py::ssize_t> shape(t.sizes().begin(), t.sizes().end());
  std::vector<py::ssize_t> strides;
  for (int64_t s : t.strides()) strides.push_back(static_cast<py::ssize_t>(s * t.element_size()));
  // The capsule owns a reference to the tensor: the array keeps its storage alive.
  auto* keep = new Tensor(t.detach());
  py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(dt, shape, strides, keep->data_ptr(), owner);
}

// The buffer protocol (PEP 3118): memoryview(t), and numpy.asarray(t) without a copy.
// pybind11's own getbuffer ignores the consumer's contiguity requests and lets C++
// exceptions cross C frames, so the slots are filled by hand. The exported view holds a
// handle on the tensor's data (Exported), so it stays valid whatever happens to the
// Python object. Tensors that require grad, bfloat16 tensors and contiguity requests the
// layout does not meet raise BufferError (numpy then falls back to __array__, which says
// why it cannot convert).
struct Exported {
  Tensor keep;
  std::vector<Py_ssize_t> shape, strides;
  std::string format;
};

const char* buffer_format(DType t) {
  switch (t) {
    case DType::Bool: return "?";
    case DType::UInt8: return "B";
    case DType::Int8: return "b";
    case DType::Int16: return "h";
    case DType::Int32: return "i";
    case DType::Int64: return "q";
    case DType::Float16: return "e";
    case DType::Float32: return "f";
    case DType::Float64: return "d";
    case DType::BFloat16: break;
  }
  return nullptr;
}

bool f_contiguous(const Tensor& t) {
  int64_t expected = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1 && t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

int tensor_getbuffer(PyObject* obj, Py_buffer* view, int flags) {
  if (view == nullptr) {
    PyErr_SetString(PyExc_BufferError, "[Tensor] NULL view in getbuffer");
    return -1;
  }
  view->obj = nullptr;
  try {
    Tensor t = py::handle(obj).cast<Tensor>();
    const char* fmt = buffer_format(t.dtype());
    const char* why = nullptr;
    if (t.requires_grad()) {
      why = "[Tensor] can't export the buffer of a tensor that requires grad; use tensor.detach()";
    } else if (fmt == nullptr) {
      why = "[Tensor] bfloat16 has no buffer format; convert first, e.g. x.float()";
    } else if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !t.is_contiguous()) {
      why = "[Tensor] a C-contiguous buffer was requested of a non-contiguous tensor; use tensor.contiguous()";
    } else if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !f_contiguous(t)) {
      why = "[Tensor] a Fortran-contiguous buffer was requested of a tensor that is not";
    } else if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !t.is_contiguous() && !f_contiguous(t)) {
      why = "[Tensor] a contiguous buffer was requested of a non-contiguous tensor; use tensor.contiguous()";
    } else if ((flags & PyBUF_STRIDES) != PyBUF_STRIDES && !t.is_contiguous()) {
      why = "[Tensor] the consumer needs a contiguous buffer (no strides); use tensor.contiguous()";
    }
    if (why != nullptr) {
      PyErr_SetString(PyExc_BufferError, why);
      return -1;
    }
    auto* e = new Exported{t.detach(), {}, {}, fmt};
    const int64_t item = t.element_size();
    for (int64_t d = 0; d < t.dim(); ++d) {
      e->shape.push_back(static_cast<Py_ssize_t>(t.size(d)));
      e->strides.push_back(static_cast<Py_ssize_t>(t.stride(d) * item));
    }
    view->buf = t.numel() == 0 ? nullptr : e->keep.data_ptr();
    view->len = static_cast<Py_ssize_t>(t.numel() * item);
    view->itemsize = static_cast<Py_ssize_t>(item);
    view->readonly = 0;
    view->ndim = static_cast<int>(t.dim());
    view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT ? e->format.data() : nullptr;
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? e->shape.data() : nullptr;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? e->strides.data() : nullptr;
    view->suboffsets = nullptr;
    view->internal = e;
    if ((flags & PyBUF_ND) != PyBUF_ND) view->ndim = 1;  // a plain byte range
    view->obj = obj;
    Py_INCREF(obj);
    return 0;
  } catch (const std::exception& ex) {
    PyErr_SetString(PyExc_BufferError, ex.what());
    return -1;
  }
}

void tensor_releasebuffer(PyObject*, Py_buffer* view) { delete static_cast<Exported*>(view->internal); }

Tensor from_numpy(py::handle obj) {
  if (!py::isinstance<py::array>(obj)) throw TypeError("[from_numpy] expected a numpy.ndarray, got " + type_name(obj));
  auto a = py::reinterpret_borrow<py::array>(obj);
  const DType dt = dtype_of_numpy(a.dtype());
  const auto item = a.itemsize();
  DimVector sizes, strides;
  for (py::ssize_t d = 0; d < a.ndim(); ++d) {
    sizes.push_back(a.shape(d));
    const auto s = a.strides(d);
    TANDEM_CHECK(s >= 0 && s % item == 0, ValueError, "from_numpy",
                 "the array's strides (", py::str(a.attr("strides")).cast<std::string>(),
                 ") are negative or not a multiple of its element size; copy it first (np.ascontiguousarray)");
    strides.push_back(s / item);
  }
  void* data = const_cast<void*>(a.data());
  TANDEM_CHECK(reinterpret_cast<uintptr_t>(data) % static_cast<uintptr_t>(item) == 0, ValueError, "from_numpy",
               "the array's data is not aligned to its element size; copy it first");
  // The tensor holds a reference to the array; dropping it needs the GIL, which the
  // thread that frees the storage (any thread) may not hold.
  PyObject* ref = a.inc_ref().ptr();
  auto release = [ref](void*) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    Py_DECREF(ref);
  };
  return from_blob(data, sizes, dt, release, strides);
}

py::tuple sizes_tuple(IntArrayRef s) {
  py::tuple out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = py::int_(s[i]);
  return out;
}

DimVector to_sizes(const std::vector<int64_t>& v) { return DimVector(v.begin(), v.end()); }

// Sizes given as ints (x.reshape(2, 3)) or as one sequence (x.reshape((2, 3))).
DimVector shape_args(const py::args& args) {
  if (args.size() == 1 && (PyList_Check(args[0].ptr()) || PyTuple_Check(args[0].ptr()))) {
    return to_sizes(args[0].cast<std::vector<int64_t>>());
  }
  DimVector out;
  for (py::handle a : args) out.push_back(py::reinterpret_borrow<py::object>(a).attr("__index__")().cast<int64_t>());
  return out;
}

TensorOptions options(std::optional<DType> dtype, bool requires_grad) {
  TensorOptions o;
  if (dtype) o = o.dtype(*dtype);
  return o.requires_grad(requires_grad);
}

}  // namespace

const Tensor* tensor_ptr(PyObject* o) {
  if (!is_tensor_object(o)) return nullptr;
  // A subclass mixing in another pybind11 class has the non-simple layout: left to
  // pybind11. A null value pointer: __init__ has not run (pybind11 then raises).
  auto* inst = reinterpret_cast<py::detail::instance*>(o);
  if (!inst->simple_layout) return nullptr;
  return static_cast<const Tensor*>(inst->simple_value_holder[0]);
}

py::object wrap_tensor(Tensor t) {
  // What pybind11's cast of a moved value does (make the instance, move the value to the
  // heap, register the instance, construct the holder), with the type info looked up once.
  auto self = py::reinterpret_steal<py::object>(py::detail::make_new_instance(g_tensor_type));
  if (!self) throw py::error_already_set();
  auto* inst = reinterpret_cast<py::detail::instance*>(self.ptr());
  auto v_h = inst->get_value_and_holder(g_tensor_tinfo);
  auto* value = new Tensor(std::move(t));
  v_h.value_ptr() = value;
  inst->owned = true;
  // The holder first: if registering throws, the instance's dealloc frees the value.
  new (std::addressof(v_h.holder<TensorHolder>())) TensorHolder(value);
  v_h.set_holder_constructed();
  py::detail::register_instance(inst, value, g_tensor_tinfo);
  v_h.set_instance_registered();
  return self;
}

bool small_enough_for_gil(ArrayRef<Tensor> inputs) {
  int64_t work = 1;
  for (const Tensor& x : inputs) {
    if (!x.defined()) continue;
    const int64_t n = x.numel();
    if (n > kGrainSize) return false;
    work *= std::max<int64_t>(n, 1);
    if (work > kGrainSize) return false;
  }
  return true;
}

Tensor run_op1(const OpDef& op, ArrayRef<Tensor> inputs) {
  if (small_enough_for_gil(inputs)) return dispatch1(op, inputs);
  py::gil_scoped_release nogil;
  return dispatch1(op, inputs);
}

void set_python_error_from_current_exception() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (...) {
    if (py::detail::apply_exception_translators(py::detail::get_local_internals().registered_exception_translators))
      return;
    if (py::detail::apply_exception_translators(py::detail::get_internals().registered_exception_translators)) return;
    PyErr_SetString(PyExc_SystemError, "Exception escaped from default exception translator!");
  }
}

namespace {

// The number slots install_operator_slots fills, and the methods each one stands for.
template <typename Fn>
struct SlotEntry {
  Fn PyNumberMethods::*slot;
  Fn fn;
  const char* names[2];
};
const SlotEntry<binaryfunc> kSlotEntries[] = {
    {&PyNumberMethods::nb_add, binary_slot<kAdd>, {"__add__", "__radd__"}},
    {&PyNumberMethods::nb_subtract, binary_slot<kSub>, {"__sub__", "__rsub__"}},
    {&PyNumberMethods::nb_multiply, binary_slot<kMul>, {"__mul__", "__rmul__"}},
    {&PyNumberMethods::nb_true_divide, binary_slot<kTrueDiv>, {"__truediv__", "__rtruediv__"}},
    {&PyNumberMethods::nb_floor_divide, binary_slot<kFloorDiv>, {"__floordiv__", "__rfloordiv__"}},
    {&PyNumberMethods::nb_remainder, binary_slot<kMod>, {"__mod__", "__rmod__"}},
    {&PyNumberMethods::nb_matrix_multiply, binary_slot<kMatMul>, {"__matmul__", "__rmatmul__"}},
    {&PyNumberMethods::nb_and, binary_slot<kAnd>, {"__and__", "__rand__"}},
    {&PyNumberMethods::nb_or, binary_slot<kOr>, {"__or__", "__ror__"}},
    {&PyNumberMethods::nb_xor, binary_slot<kXor>, {"__xor__", "__rxor__"}},
    {&PyNumberMethods::nb_inplace_add, inplace_slot<kAdd>, {"__iadd__", nullptr}},
    {&PyNumberMethods::nb_inplace_subtract, inplace_slot<kSub>, {"__isub__", nullptr}},
    {&PyNumberMethods::nb_inplace_multiply, inplace_slot<kMul>, {"__imul__", nullptr}},
    {&PyNumberMethods::nb_inplace_true_divide, inplace_slot<kTrueDiv>, {"__itruediv__", nullptr}},
    {&PyNumberMethods::nb_inplace_floor_divide, inplace_slot<kFloorDiv>, {"__ifloordiv__", nullptr}},
    {&PyNumberMethods::nb_inplace_remainder, inplace_slot<kMod>, {"__imod__", nullptr}},
    {&PyNumberMethods::nb_inplace_and, inplace_slot<kAnd>, {"__iand__", nullptr}},
    {&PyNumberMethods::nb_inplace_or, inplace_slot<kOr>, {"__ior__", nullptr}},
    {&PyNumberMethods::nb_inplace_xor, inplace_slot<kXor>, {"__ixor__", nullptr}},
};
const SlotEntry<unaryfunc> kUnarySlotEntries[] = {
    {&PyNumberMethods::nb_negative, unary_slot<kNeg>, {"__neg__", nullptr}},
    {&PyNumberMethods::nb_absolute, unary_slot<kAbs>, {"__abs__", nullptr}},
    {&PyNumberMethods::nb_invert, unary_slot<kInvert>, {"__invert__", nullptr}},
};
constexpr const char* kCompareNames[] = {"__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__"};
const SlotEntry<ternaryfunc> kTernarySlotEntries[] = {
    {&PyNumberMethods::nb_power, power_slot<kPow>, {"__pow__", "__rpow__"}},
    {&PyNumberMethods::nb_inplace_power, inplace_power_slot<kPow>, {"__ipow__", nullptr}},
};

// Calls f(entry) for every number-slot entry above (binary, ternary and unary ones).
template <typename F>
void for_each_number_slot(F f) {
  for (const auto& e : kSlotEntries) f(e);
  for (const auto& e : kTernarySlotEntries) f(e);
  for (const auto& e : kUnarySlotEntries) f(e);
}

// Gives a Python subclass of Tensor the C++ slots for the operators none of its classes
// below Tensor defines (Python gave it generic slots that look the methods up per call;
// with the C++ ones an nn.Parameter operand costs what a tensor does). Called by
// Tensor.__init_subclass__ (tandem/_tensor.py).
void inherit_operator_slots(py::handle cls) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  if (!PyType_Check(cls.ptr()) || !(type->tp_flags & Py_TPFLAGS_HEAPTYPE) || type == g_tensor_type ||
      !PyType_IsSubtype(type, g_tensor_type) || type->tp_as_number == nullptr) {
    throw TypeError("[_inherit_operator_slots] expected a Python subclass of tandem.Tensor");
  }
  py::tuple mro = py::reinterpret_borrow<py::tuple>(type->tp_mro);
  auto overridden = [&](const char* const* names, size_t n) {
    for (py::handle k : mro) {
      if (k.ptr() == reinterpret_cast<PyObject*>(g_tensor_type)) break;
      PyObject* dict = reinterpret_cast<PyTypeObject*>(k.ptr())->tp_dict;
      for (size_t i = 0; i < n; ++i)
        if (names[i] != nullptr && dict != nullptr && PyDict_GetItemString(dict, names[i]) != nullptr) return true;
    }
    return false;
  };
  for_each_number_slot([&](const auto& e) {
    if (!overridden(e.names, 2)) type->tp_as_number->*e.slot = e.fn;
  });
  if (!overridden(kCompareNames, 6)) type->tp_richcompare = richcompare_slot;
  PyType_Modified(type);
}

}  // namespace

void install_operator_slots() {
  auto* heap = reinterpret_cast<PyHeapTypeObject*>(g_tensor_type);
  for_each_number_slot([&](const auto& e) { heap->as_number.*e.slot = e.fn; });
  g_tensor_type->tp_richcompare = richcompare_slot;
  PyType_Modified(g_tensor_type);
}

py::class_<Tensor> bind_tensor(py::module_& m) {
  py::class_<Tensor> t(m, "Tensor", R"doc(A strided n-dimensional array with autograd (torch.Tensor).

Create tensors with tandem.tensor, zeros, ones, full, arange, randn, rand, empty or
from_numpy. Every registered op is also a method (x.sum(dim=0), x.relu()).)doc");

  g_tensor_type = reinterpret_cast<PyTypeObject*>(t.ptr());
  g_tensor_tinfo = py::detail::get_type_info(typeid(Tensor));
  {
    auto* heap = reinterpret_cast<PyHeapTypeObject*>(t.ptr());
    heap->as_buffer.bf_getbuffer = tensor_getbuffer;
    heap->as_buffer.bf_releasebuffer = tensor_releasebuffer;
    heap->ht_type.tp_as_buffer = &heap->as_buffer;
  }
  // Tensor(t): another handle on t's tensor (same data, flags and history). Exists so that
  // Python subclasses (tandem.nn.Parameter) can initialise their C++ part.
  t.def(py::init([](const Tensor& other) { return Tensor(other); }), py::arg("other"));
  t.def_property_readonly("shape", [](const Tensor& x) { return sizes_tuple(x.sizes()); },
                          "The sizes as a tuple of ints.")
      .def("size", [](const Tensor& x, std::optional<int64_t> dim) -> py::object {
        if (dim) return py::int_(x.size(*dim));
        return sizes_tuple(x.sizes());
      }, py::arg("dim") = py::none(),
           "size() -> tuple of the sizes; size(dim) -> the size of one dim (IndexError out of range).")
      .def("stride", [](const Tensor& x, std::optional<int64_t> dim) -> py::object {
        if (dim) return py::int_(x.stride(*dim));
        return sizes_tuple(x.strides());
      }, py::arg("dim") = py::none(), "Strides in elements: a tuple, or one dim's stride.")
      .def("dim", &Tensor::dim, "The number of dims.")
      .def("ndimension", &Tensor::dim, "The number of dims.")
      .def_property_readonly("ndim", &Tensor::dim, "The number of dims.")
      .def("numel", &Tensor::numel, "The number of elements.")
      .def("nelement", &Tensor::numel, "The number of elements.")
      .def("element_size", &Tensor::element_size, "Bytes per element.")
      .def_property_readonly("dtype", [](const Tensor& x) { return dtype_object(x.dtype()); }, "The element type.")
      .def_property_readonly("device", [](const Tensor&) { return std::string("cpu"); }, "Always 'cpu' for now.")
      .def("is_contiguous", &Tensor::is_contiguous, "True when the strides are row-major contiguous.")
      .def("is_floating_point", &Tensor::is_floating_point, "True for floating dtypes.")
      .def("storage_offset", &Tensor::storage_offset, "Offset of the first element in its storage (elements).")
      .def("data_ptr", [](const Tensor& x) { return reinterpret_cast<uintptr_t>(x.data_ptr()); },
           "Address of the first element.")
      .def_property_readonly("_version", &Tensor::_version, "The storage's version counter (bumped by in-place writes).")
      .def("__repr__", &Tensor::to_string)
      .def("__hash__", [](py::handle self) { return reinterpret_cast<intptr_t>(self.ptr()); })
      .def("__len__", [](const Tensor& x) {
        TANDEM_CHECK(x.dim() > 0, TypeError, "len", "len() of a 0-d tensor");
        return x.size(0);
      })
      .def("__iter__", [](const Tensor& x) {
        TANDEM_CHECK(x.dim() > 0, TypeError, "iter", "iteration over a 0-d tensor");
        return py::iter(py::cast(x.unbind(0)));
      })
      .def("__bool__", [](const Tensor& x) {
        TANDEM_CHECK(x.numel() == 1, RuntimeError, "bool",
                     "the truth value of a tensor with ", x.numel(), " elements is ambiguous");
        return x.item().to_bool();
      })
      .def("__float__", [](const Tensor& x) { return x.item().to_double(); })
      .def("__int__", [](const Tensor& x) { return x.item().to_int(); })
      .def("__index__", [](const Tensor& x) {
        TANDEM_CHECK(is_integral(x.dtype(), true) && x.numel() == 1, TypeError, "__index__",
                     "only integer tensors of a single element can be converted to an index");
        return x.item().to_int();
      })
      .def("item", [](const Tensor& x) { return scalar_to_py(x.item()); },
           "The value of a one-element tensor as a Python bool, int or float (ValueError otherwise).")
      .def("tolist", [](const Tensor& x) -> py::object {
        NoGradGuard no_grad;
        if (x.dim() == 0) return scalar_to_py(x.item());
        int64_t pos = 0;
        if (x.dtype() == DType::Bool) {
          Tensor c = x.contiguous();
          return nested_list<bool, py::bool_>(c.data_ptr<bool>(), c.sizes(), 0, pos);
        }
        if (x.is_floating_point()) {
          Tensor c = x.to(DType::Float64).contiguous();
          return nested_list<double, py::float_>(c.data_ptr<double>(), c.sizes(), 0, pos);
        }
        Tensor c = x.to(DType::Int64).contiguous();
        return nested_list<int64_t, py::int_>(c.data_ptr<int64_t>(), c.sizes(), 0, pos);
      }, "The elements as nested Python lists (a Python number for a 0-d tensor).")
      .def("numpy", &to_numpy, py::arg("force") = false,
           R"doc(A numpy array sharing this tensor's memory (any strides; no copy).

RuntimeError when the tensor requires grad (unless force=True); TypeError for bfloat16.)doc")
      .def("__array__", [](const Tensor& x, py::object dtype) {
        py::object a = to_numpy(x, false);
        if (!dtype.is_none()) a = a.attr("astype")(dtype);
        return a;
      }, py::arg("dtype") = py::none())
      .def("to", [](const Tensor& x, DType dtype, bool copy) {
        py::gil_scoped_release nogil;
        return x.to(dtype, copy);
      }, py::arg("dtype"), py::arg("copy") = false, "Converts to `dtype` (the tensor itself if it has it and not copy).")
      .def("__getitem__", [](const Tensor& x, py::handle key) {
        // NumPy/PyTorch indexing: ints, slices, None, ..., bools, lists and tensors (int64
        // indices or bool masks). Basic indices give views; IndexError out of range.
        auto idx = to_indices(key);
        py::gil_scoped_release nogil;
        return x.index(idx);
      })
      .def("__setitem__", [](Tensor& x, py::handle key, py::handle value) {
        // x[key] = value in place: value is a number, a tensor or nested lists, broadcast
        // to the indexed shape and converted to x's dtype.
        auto idx = to_indices(key);
        if (is_python_number(value)) {
          Scalar v = to_scalar(value);
          py::gil_scoped_release nogil;
          x.index_put_(idx, v);
          return;
        }
        Tensor v = py::isinstance<Tensor>(value) ? value.cast<Tensor>()
                                                 : py::module_::import("tandem").attr("tensor")(value).cast<Tensor>();
        py::gil_scoped_release nogil;
        x.index_put_(idx, v);
      });

  // Python operators, all through the registered ops (so autograd and capture see them).
  // The methods serve explicit calls (Tensor.__add__(a, b)) and Python subclasses; the
  // type's own slots go straight to C++ (install_operator_slots).
  struct Bin {
    const char* py;
    const char* op;
    int slot;  // SlotOp, or -1
  };
  for (Bin b : {Bin{"add", "add", kAdd}, Bin{"sub", "sub", kSub}, Bin{"mul", "mul", kMul}, Bin{"truediv", "div", kTrueDiv},
                Bin{"floordiv", "floor_divide", kFloorDiv}, Bin{"mod", "remainder", kMod}, Bin{"pow", "pow", kPow},
                Bin{"matmul", "matmul", kMatMul}, Bin{"and", "bitwise_and", kAnd}, Bin{"or", "bitwise_or", kOr},
                Bin{"xor", "bitwise_xor", kXor}}) {
    // Ops are looked up once, here (they registered at load time).
    const std::string n = b.py;
    const OpDef* op = &get_op(b.op);
    t.def(("__" + n + "__").c_str(), [op](py::handle a, py::handle o) { return binary(*op, a, o, false); }, py::is_operator());
    t.def(("__r" + n + "__").c_str(), [op](py::handle a, py::handle o) { return binary(*op, a, o, true); }, py::is_operator());
    const OpDef* op_ = nullptr;
    if (n != "matmul") {
      op_ = &get_op(std::string(b.op) + "_");
      t.def(("__i" + n + "__").c_str(), [op_](py::handle a, py::handle o) { return inplace(*op_, a, o); }, py::is_operator());
    }
    if (b.slot >= 0) g_slot_ops[b.slot] = SlotOps{op, op_};
  }
  for (Bin b : {Bin{"lt", "lt", Py_LT}, Bin{"le", "le", Py_LE}, Bin{"eq", "eq", Py_EQ}, Bin{"ne", "ne", Py_NE},
                Bin{"gt", "gt", Py_GT}, Bin{"ge", "ge", Py_GE}}) {
    const OpDef* op = &get_op(b.op);
    t.def((std::string("__") + b.py + "__").c_str(), [op](py::handle a, py::handle o) { return binary(*op, a, o, false); },
          py::is_operator());
    g_compare_ops[b.slot] = op;
  }
  for (Bin b : {Bin{"neg", "neg", kNeg}, Bin{"abs", "abs", kAbs}, Bin{"invert", "bitwise_not", kInvert}}) {
    const OpDef* op = &get_op(b.op);
    t.def((std::string("__") + b.py + "__").c_str(), [op](py::handle x) { return wrap_tensor(unary(*op, x)); });
    g_unary_ops[b.slot] = op;
  }
  t.def("__pos__", [](const Tensor& x) { return x; });

  // C++ Tensor methods that are compositions of registered ops (no registry entry of
  // their own), with PyTorch's Python signatures. Shapes given unpacked or as one sequence.
  t.def("reshape", [](const Tensor& x, py::args shape) {
    const DimVector sizes = shape_args(shape);
    py::gil_scoped_release nogil;
    return x.reshape(sizes);
  },
        "A view with the given shape when the strides allow, else a copy; one size may be -1. "
        "ShapeError when the element counts differ.")
      .def("t", [](const Tensor& x) { return x.t(); }, "Transpose of a tensor of at most 2 dims (a view); ShapeError above 2.")
      .def("zero_", [](py::handle self) {
        Tensor x = self.cast<Tensor>();
        {
          py::gil_scoped_release nogil;
          x.zero_();
        }
        return py::reinterpret_borrow<py::object>(self);
      }, "Fills with zeros in place; returns self.")
      .def("contiguous", [](const Tensor& x) { return x.contiguous(); }, "self if contiguous, else a contiguous copy.")
      .def("flatten", [](const Tensor& x, int64_t s, int64_t e) { return x.flatten(s, e); },
           py::arg("start_dim") = 0, py::arg("end_dim") = -1, "Dims start_dim..end_dim merged into one (a view when possible).")
      .def("unflatten", [](const Tensor& x, int64_t dim, const std::vector<int64_t>& sizes) {
        return x.unflatten(dim, to_sizes(sizes));
      }, py::arg("dim"), py::arg("sizes"), "Dim `dim` split into `sizes` (one may be -1).")
      .def("narrow", &Tensor::narrow, py::arg("dim"), py::arg("start"), py::arg("length"),
           "The view of `length` elements of dim `dim` from `start`; IndexError out of range.")
      .def("split", [](const Tensor& x, py::object size, int64_t dim) {
        if (PyList_Check(size.ptr()) || PyTuple_Check(size.ptr())) {
          return x.split_with_sizes(to_sizes(size.cast<std::vector<int64_t>>()), dim);
        }
        return x.split(size.cast<int64_t>(), dim);
      }, py::arg("split_size_or_sections"), py::arg("dim") = 0,
           "Views of `split_size` elements along `dim` (the last may be shorter), or of the given sizes.")
      .def("chunk", &Tensor::chunk, py::arg("chunks"), py::arg("dim") = 0, "At most `chunks` views along `dim`.")
      .def("unbind", &Tensor::unbind, py::arg("dim") = 0, "The slices along `dim` (views), as a list.")
      .def("expand_as", &Tensor::expand_as, py::arg("other"), "expand to other's shape (a view).")
      .def("view_as", &Tensor::view_as, py::arg("other"), "view with other's shape.")
      .def("reshape_as", &Tensor::reshape_as, py::arg("other"), "reshape to other's shape.")
      .def("broadcast_to", [](const Tensor& x, const std::vector<int64_t>& s) { return x.expand(to_sizes(s)); },
           py::arg("size"), "expand to `size` (a view).")
      .def("clone", [](const Tensor& x) {
        py::gil_scoped_release nogil;
        return x.clone();
      }, "A contiguous copy (differentiable).");

  m.def("_inherit_operator_slots", &inherit_operator_slots, py::arg("cls"),
        "Gives a Python subclass of Tensor the C++ operator slots for the operators it does not override "
        "(Tensor.__init_subclass__ calls it). TypeError for anything but such a subclass.");
  m.def("from_numpy", &from_numpy, py::arg("ndarray"),
        R"doc(A tensor sharing the memory of a numpy array (no copy), which it keeps alive.

dtype: the array's (bool, uint8, int8, int16, int32, int64, float16, float32, float64;
TypeError otherwise). ValueError for negative or unaligned strides.)doc");
  m.def("_empty", [](const std::vector<int64_t>& size, std::optional<DType> dtype, bool rg) {
    return empty(to_sizes(size), options(dtype, rg));
  });
  m.def("_zeros", [](const std::vector<int64_t>& size, std::optional<DType> dtype, bool rg) {
    return zeros(to_sizes(size), options(dtype, rg));
  });
  m.def("_ones", [](const std::vector<int64_t>& size, std::optional<DType> dtype, bool rg) {
    return ones(to_sizes(size), options(dtype, rg));
  });
  m.def("_full", [](const std::vector<int64_t>& size, py::handle value, std::optional<DType> dtype, bool rg) {
    return full(to_sizes(size), to_scalar(value), options(dtype, rg));
  });
  m.def("_rand", [](const std::vector<int64_t>& size, std::optional<DType> dtype, bool rg) {
    return rand(to_sizes(size), options(dtype, rg));
  });
  m.def("_randn", [](const std::vector<int64_t>& size, std::optional<DType> dtype, bool rg) {
    return randn(to_sizes(size), options(dtype, rg));
  });
  m.def("_arange", [](py::handle start, py::handle end, py::handle step, std::optional<DType> dtype, bool rg) {
    return arange(to_scalar(start), to_scalar(end), to_scalar(step), options(dtype, rg));
  });
  m.def("manual_seed", [](uint64_t seed) { manual_seed(seed); }, py::arg("seed"),
        "Seeds the default random generator (torch.manual_seed).");
  m.def("set_num_threads", [](int n) { set_num_threads(n); }, py::arg("n"),
        "Sets the threads of intra-op parallel loops and oneDNN (torch.set_num_threads). "
        "ValueError unless 1 <= n <= 4096.");
  m.def("get_num_threads", [] { return get_num_threads(); },
        "The threads intra-op parallel loops use (torch.get_num_threads).");
  return t;
}

}  // namespace tandem::python

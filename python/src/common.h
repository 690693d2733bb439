#pragma once
// Shared pieces of the tandem._C extension: conversions between Python objects and
// tandem values (dtypes, scalars, tensors), used by every binding file.
#include <memory>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "tandem/tandem.h"

namespace tandem::python {

namespace py = pybind11;

/// The cached Python object for `t` (one per dtype, so `x.dtype is tandem.float32` holds).
py::object dtype_object(DType t);

/// True for Python bool/int/float (and numpy scalars of those kinds), not for tensors.
bool is_python_number(py::handle h);
/// A Python number as a Scalar of the same category (bool, int or float).
/// Raises TypeError for anything else.
Scalar to_scalar(py::handle h);
/// A tensor argument: a Tensor, or a Python number wrapped as a 0-d tensor that ranks
/// below tensors in type promotion (as PyTorch wraps `x + 2`). `what` names the argument
/// in the TypeError raised for anything else.
Tensor to_tensor_arg(py::handle h, const char* what);
/// Tensor -> Python object; an undefined tensor becomes None.
py::object tensor_or_none(const Tensor& t);

/// The C++ tensor inside `o` when o is a tandem.Tensor (or an instance of a Python
/// subclass) whose C++ part is constructed; nullptr for anything else (the caller then
/// takes pybind11's generic conversion, which raises its usual errors). No pybind11 type
/// lookups: the operators' fast paths call this once per operand.
const Tensor* tensor_ptr(PyObject* o);
/// A new Python tandem.Tensor owning `t`: what py::cast(std::move(t)) makes (an owned,
/// registered instance), without the type lookups py::cast does per call.
py::object wrap_tensor(Tensor t);
/// True when an op on `inputs` is small enough to run with the GIL held: the product of
/// their element counts is at most kernels' parallel grain, which bounds the work of an
/// elementwise op (broadcast or not) and of a matmul, and keeps every parallel loop on
/// the calling thread. Releasing and re-taking the GIL costs more than such an op's kernel.
bool small_enough_for_gil(ArrayRef<Tensor> inputs);
/// Runs `op` on `inputs` (one output), without the GIL unless small_enough_for_gil.
Tensor run_op1(const OpDef& op, ArrayRef<Tensor> inputs);
/// Inside a catch block of a raw CPython slot function (no pybind11 dispatcher around it):
/// sets the Python error for the exception in flight as pybind11's dispatcher would
/// (error_already_set restored; others through the registered translators, so tandem
/// errors become tandem's Python exceptions).
void set_python_error_from_current_exception();
/// Points tandem.Tensor's number slots (+, -, *, /, //, %, **, @, &, |, ^ and their in-place
/// forms; unary -, abs, ~) and its rich comparison at C++ directly. Called last at import,
/// after every method is bound (binding an operator method resets its slot).
void install_operator_slots();

/// A Python object shared with C++ code that may drop it on any thread, with or without
/// the GIL: the deleter takes the GIL, and after interpreter shutdown leaks the reference
/// (a C++ static can outlive the interpreter).
std::shared_ptr<py::object> shared_py(py::object o);

void bind_dtypes_and_errors(py::module_& m);
py::class_<Tensor> bind_tensor(py::module_& m);
void bind_ops(py::module_& m);
void bind_autograd(py::module_& m, py::class_<Tensor>& cls);
void bind_optim_jit(py::module_& m);
void bind_optim(py::module_& m);
void bind_function(py::module_& m);
void bind_data(py::module_& m);
void bind_dlpack(py::module_& m, py::class_<Tensor>& cls);
void bind_nn(py::module_& m, py::class_<Tensor>& cls);
void bind_io(py::module_& m);
void bind_modules(py::module_& m);

}  // namespace tandem::python

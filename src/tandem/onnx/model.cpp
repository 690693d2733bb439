// Loading ONNX files: ModelProto / TensorProto -> tandem::onnx::Graph and Tensors, with
// every field checked before use; OnnxModel (the nn::Module that interprets the graph).
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "tandem/autograd/engine.h"
#include "tandem/core/capture_state.h"
#include "tandem/io/file_util.h"
#include "tandem/onnx/graph.h"
#include "tandem/onnx/onnx.h"
#include "tandem/ops/creation.h"

namespace tandem::onnx {
namespace {

// Files larger than protobuf's 2 GiB message limit cannot be ModelProtos (weights beyond
// that live in external data files).
constexpr uint64_t kMaxProtoBytes = (uint64_t{1} << 31) - 1;
// No tensor may hold more elements than this (1 TiB of float32: far beyond any model, and
// far below int64 overflow of numel * element size).
constexpr int64_t kMaxElements = int64_t{1} << 38;

std::string prefix(const std::string& source) { return "[onnx] " + source + ": "; }

std::string read_file(const std::string& path, const char* fn) {
  io::FileReader f(path, fn);
  if (f.size() > kMaxProtoBytes)
    throw RuntimeError(prefix(path) + "file of " + std::to_string(f.size()) +
                       " bytes exceeds protobuf's 2 GiB message limit");
  std::string bytes(f.size(), '\0');
  if (!bytes.empty()) f.read_at(bytes.data(), bytes.size(), 0);
  return bytes;
}

std::string dirname(const std::string& path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? "." : path.substr(0, pos == 0 ? 1 : pos);
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Element count of dims, checked: no negative dim, no overflow, at most kMaxElements.
int64_t checked_numel(const std::vector<int64_t>& dims, const std::string& where) {
  // The bound applies with zero-sized dims counted as 1: they make the element count 0,
  // not the other dims' strides small (a tensor [0, 2^62, 7936] cannot be laid out).
  int64_t n = 1, span = 1;
  for (int64_t d : dims) {
    if (d < 0) throw ValueError(where + "negative dim " + std::to_string(d));
    const int64_t d1 = std::max<int64_t>(d, 1);
    if (span > kMaxElements / d1)
      throw ValueError(where + "dims describe more than 2^38 elements (absurd shape; zero-sized dims count as 1)");
    span *= d1;
    n *= d;
  }
  return n;
}

// Copies `n` typed values into t's storage, converting to the element type (used for the
// typed repeated fields: int32_data also carries int8/16, uint8, bool, and float16 /
// bfloat16 bit patterns).
template <typename Src>
void fill_typed(Tensor& t, const Src& src, const std::string& where) {
  const int64_t n = t.numel();
  DispatchDepthGuard quiet;  // a fresh tensor of the loader, not a data read of user code
  switch (t.dtype()) {
    case DType::Float32: { auto* p = t.data_ptr<float>(); for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(src[i]); break; }
    case DType::Float64: { auto* p = t.data_ptr<double>(); for (int64_t i = 0; i < n; ++i) p[i] = static_cast<double>(src[i]); break; }
    case DType::Int64: { auto* p = t.data_ptr<int64_t>(); for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(src[i]); break; }
    case DType::Int32: { auto* p = t.data_ptr<int32_t>(); for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(src[i]); break; }
    case DType::Int16: { auto* p = t.data_ptr<int16_t>(); for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int16_t>(src[i]); break; }
    case DType::Int8: { auto* p = t.data_ptr<int8_t>(); for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int8_t>(src[i]); break; }
    case DType::UInt8: { auto* p = t.data_ptr<uint8_t>(); for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(src[i]); break; }
    case DType::Bool: { auto* p = t.data_ptr<bool>(); for (int64_t i = 0; i < n; ++i) p[i] = src[i] != 0; break; }
    case DType::Float16:
    case DType::BFloat16: {
      auto* p = static_cast<uint16_t*>(t.data_ptr());
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint16_t>(src[i]);
      break;
    }
    default: throw TypeError(where + "unsupported element type");
  }
}

}  // namespace

DType dtype_from_onnx(int64_t code, const std::string& what) {
  switch (code) {
    case ::onnx::TensorProto::FLOAT: return DType::Float32;
    case ::onnx::TensorProto::DOUBLE: return DType::Float64;
    case ::onnx::TensorProto::FLOAT16: return DType::Float16;
    case ::onnx::TensorProto::BFLOAT16: return DType::BFloat16;
    case ::onnx::TensorProto::INT64: return DType::Int64;
    case ::onnx::TensorProto::INT32: return DType::Int32;
    case ::onnx::TensorProto::INT16: return DType::Int16;
    case ::onnx::TensorProto::INT8: return DType::Int8;
    case ::onnx::TensorProto::UINT8: return DType::UInt8;
    case ::onnx::TensorProto::BOOL: return DType::Bool;
    default: break;
  }
  std::string name = ::onnx::TensorProto_DataType_IsValid(static_cast<int>(code))
                         ? ::onnx::TensorProto_DataType_Name(static_cast<::onnx::TensorProto_DataType>(code))
                         : "code " + std::to_string(code);
  throw TypeError(what + "element type " + name + " has no tandem dtype (expected one of FLOAT, DOUBLE, "
                  "FLOAT16, BFLOAT16, INT64, INT32, INT16, INT8, UINT8, BOOL)");
}

namespace {

// TensorProto -> Tensor. `where` prefixes errors ("[onnx] FILE: initializer 'w': ");
// `base_dir` locates external data ("" refuses it).
Tensor tensor_from_proto(const ::onnx::TensorProto& p, const std::string& where, const std::string& base_dir) {
  if (p.has_segment()) throw NotImplementedError(where + "segmented tensors are not supported");
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  const int64_t n = checked_numel(dims, where);
  const DType dt = dtype_from_onnx(p.data_type(), where);
  const int64_t esize = element_size(dt);
  const uint64_t nbytes = static_cast<uint64_t>(n) * static_cast<uint64_t>(esize);
  // The tensor is allocated only once the data it needs is known to be there (absurd dims
  // with little data must not allocate).
  auto alloc = [&] {
    Tensor t = empty(dims, dt);
    TANDEM_INTERNAL_ASSERT(static_cast<uint64_t>(t.nbytes()) == nbytes, where, "empty() gave ", t.nbytes(),
                           " bytes for ", dims_str(dims), " ", dtype_name(dt), ", expected ", nbytes);
    return t;
  };
  if (p.data_location() == ::onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0, length = nbytes;
    bool has_length = false;
    for (const auto& kv : p.external_data()) {
      auto num = [&](const std::string& v) -> uint64_t {
        if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos)
          throw ValueError(where + "external_data '" + kv.key() + "' is not a non-negative integer: '" +
                           v.substr(0, 40) + "'");
        return std::stoull(v);
      };
      if (kv.key() == "location") location = kv.value();
      else if (kv.key() == "offset") offset = num(kv.value());
      else if (kv.key() == "length") { length = num(kv.value()); has_length = true; }
    }
    if (base_dir.empty()) throw ValueError(where + "external data, but the model was not loaded from a file");
    if (location.empty()) throw ValueError(where + "external data without a 'location'");
    if (location[0] == '/' || location.find("..") != std::string::npos)
      throw ValueError(where + "external data location '" + location.substr(0, 200) +
                       "' must be a relative path inside the model's folder");
    if (has_length && length != nbytes)
      throw ValueError(where + "external data length " + std::to_string(length) + " bytes, but dims " +
                       dims_str(dims) + " need " + std::to_string(nbytes));
    const std::string path = base_dir + "/" + location;
    io::FileReader f(path, "onnx");
    if (offset > f.size() || nbytes > f.size() - offset)
      throw ValueError(where + "external data [" + std::to_string(offset) + ", " + std::to_string(offset + nbytes) +
                       ") lies outside " + path + " (" + std::to_string(f.size()) + " bytes)");
    Tensor t = alloc();
    DispatchDepthGuard quiet;
    if (nbytes) f.read_at(t.data_ptr(), nbytes, offset);
    return t;
  }
  auto count_check = [&](int64_t have, const char* field) {
    if (have != n)
      throw ValueError(where + field + " holds " + std::to_string(have) + " values, but dims " + dims_str(dims) +
                       " need " + std::to_string(n));
  };
  if (p.has_raw_data()) {
    if (p.raw_data().size() != nbytes)
      throw ValueError(where + "raw_data holds " + std::to_string(p.raw_data().size()) + " bytes, but dims " +
                       dims_str(dims) + " of " + std::string(dtype_name(dt)) + " need " + std::to_string(nbytes));
    Tensor t = alloc();
    DispatchDepthGuard quiet;
    if (nbytes) std::memcpy(t.data_ptr(), p.raw_data().data(), nbytes);
    if (dt == DType::Bool) {  // any nonzero byte is true; tandem's bool must be 0/1
      auto* b = static_cast<uint8_t*>(t.data_ptr());
      for (int64_t i = 0; i < n; ++i) b[i] = b[i] != 0;
    }
    return t;
  }
  Tensor t;
  switch (dt) {
    case DType::Float32: count_check(p.float_data_size(), "float_data"); t = alloc(); fill_typed(t, p.float_data(), where); break;
    case DType::Float64: count_check(p.double_data_size(), "double_data"); t = alloc(); fill_typed(t, p.double_data(), where); break;
    case DType::Int64: count_check(p.int64_data_size(), "int64_data"); t = alloc(); fill_typed(t, p.int64_data(), where); break;
    default: count_check(p.int32_data_size(), "int32_data"); t = alloc(); fill_typed(t, p.int32_data(), where); break;
  }
  return t;
}

// Everything the parse of one graph (the model's, or a subgraph) needs from around it.
struct ParseEnv {
  std::string source;  // the file, for messages
  std::string base_dir;
  const std::map<std::string, int64_t>* opsets;
};

std::shared_ptr<Graph> parse_graph(const ::onnx::GraphProto& gp, const ParseEnv& pe,
                                   const std::unordered_set<std::string>* outer, const std::string& label);

Attr attr_from_proto(const ::onnx::AttributeProto& a, const std::string& where, const ParseEnv& pe,
                     const std::unordered_set<std::string>& visible) {
  Attr r;
  r.kind = ::onnx::AttributeProto_AttributeType_IsValid(a.type()) ? ::onnx::AttributeProto_AttributeType_Name(a.type())
                                                                  : "UNDEFINED";
  // Files written by old exporters may leave `type` unset: infer it from the field present.
  if (r.kind == "UNDEFINED") {
    if (a.has_i()) r.kind = "INT";
    else if (a.has_f()) r.kind = "FLOAT";
    else if (a.has_s()) r.kind = "STRING";
    else if (a.has_t()) r.kind = "TENSOR";
    else if (a.has_g()) r.kind = "GRAPH";
    else if (a.ints_size()) r.kind = "INTS";
    else if (a.floats_size()) r.kind = "FLOATS";
    else if (a.strings_size()) r.kind = "STRINGS";
  }
  r.i = a.i();
  r.f = a.f();
  r.s = a.s();
  r.ints.assign(a.ints().begin(), a.ints().end());
  r.floats.assign(a.floats().begin(), a.floats().end());
  r.strings.assign(a.strings().begin(), a.strings().end());
  if (a.has_t()) r.t = tensor_from_proto(a.t(), where + "attribute '" + a.name() + "': ", pe.base_dir);
  if (a.has_g()) r.g = parse_graph(a.g(), pe, &visible, where + "attribute '" + a.name() + "' (subgraph): ");
  return r;
}

// Parses one graph. `outer`: the names the enclosing graphs define (nullptr for the main
// graph); `label` prefixes messages about this graph ("[onnx] FILE: " for the main graph,
// "... node N (If): attribute 'then_branch' (subgraph): " inside).
std::shared_ptr<Graph> parse_graph(const ::onnx::GraphProto& gp, const ParseEnv& pe,
                                   const std::unordered_set<std::string>* outer, const std::string& label) {
  auto g = std::make_shared<Graph>();
  g->source = pe.source;
  g->opset = pe.opsets->at("");
  const std::string& pre = label;

  std::unordered_set<std::string> defined;
  auto define = [&](const std::string& name, const std::string& what) {
    if (name.empty()) return;
    if (!defined.insert(name).second) throw ValueError(pre + what + " defines value '" + name + "', already defined");
  };
  std::unordered_set<std::string> init_names;
  for (int i = 0; i < gp.initializer_size(); ++i) {
    const auto& tp = gp.initializer(i);
    const std::string name = tp.name();
    if (name.empty()) throw ValueError(pre + "initializer #" + std::to_string(i) + " has no name");
    if (!init_names.insert(name).second) throw ValueError(pre + "initializer '" + name + "' is given twice");
    g->initializers.emplace_back(name, tensor_from_proto(tp, pre + "initializer '" + name + "': ", pe.base_dir));
  }
  if (gp.sparse_initializer_size())
    throw NotImplementedError(pre + "sparse initializers are not supported");
  // Tensors, sequences and optionals are values tandem handles; maps and sparse tensors not.
  auto check_type = [&](const ::onnx::ValueInfoProto& v, const char* what) {
    if (!v.has_type()) return;
    const auto c = v.type().value_case();
    if (c == ::onnx::TypeProto::kMapType || c == ::onnx::TypeProto::kSparseTensorType)
      throw NotImplementedError(pre + what + " '" + v.name() + "' is a " +
                                (c == ::onnx::TypeProto::kMapType ? "map" : "sparse tensor") +
                                " (map and sparse values are not supported)");
  };
  for (const auto& o : gp.output()) check_type(o, "graph output");
  for (const auto& in : gp.input()) {
    check_type(in, "graph input");
    g->all_inputs.push_back(in.name());
    if (in.name().empty()) throw ValueError(pre + "a graph input has no name");
    if (!init_names.count(in.name())) {
      define(in.name(), "graph input");
      g->user_inputs.push_back(in.name());
    }
  }
  for (const auto& [name, t] : g->initializers) define(name, "initializer '" + name + "'");

  // The names subgraphs may read: the enclosing graphs' and every value this graph defines.
  std::unordered_set<std::string> visible = outer ? *outer : std::unordered_set<std::string>{};
  visible.insert(defined.begin(), defined.end());
  for (const auto& np : gp.node())
    for (const auto& o : np.output())
      if (!o.empty()) visible.insert(o);

  // Nodes: parse, then order topologically (Kahn), which finds undefined inputs and cycles.
  // A node's subgraphs' free variables count as its inputs.
  std::vector<Node> nodes;
  std::vector<std::vector<std::string>> implicit;  // per node: outer values its subgraphs read
  nodes.reserve(gp.node_size());
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& np = gp.node(i);
    Node n;
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.name = np.name().empty() ? "#" + std::to_string(i) : np.name();
    const std::string where = pre + "node " + n.name + " (" + n.op_type + "): ";
    if (n.op_type.empty()) throw ValueError(where + "no op_type");
    auto it = pe.opsets->find(n.domain);
    if (it == pe.opsets->end())
      throw ValueError(where + "domain '" + n.domain + "' is not in the model's opset_import");
    n.opset = it->second;
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    std::vector<std::string> reads;
    for (const auto& a : np.attribute()) {
      if (a.name().empty()) throw ValueError(where + "an attribute has no name");
      auto [slot, fresh] = n.attrs.emplace(a.name(), attr_from_proto(a, where, pe, visible));
      if (!fresh) throw ValueError(where + "attribute '" + a.name() + "' is given twice");
      if (slot->second.g) reads.insert(reads.end(), slot->second.g->free_vars.begin(), slot->second.g->free_vars.end());
    }
    nodes.push_back(std::move(n));
    implicit.push_back(std::move(reads));
  }
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& o : nodes[i].outputs) {
      if (o.empty()) continue;
      if (defined.count(o) || !producer.emplace(o, i).second)
        throw ValueError(pre + "node " + nodes[i].name + " (" + nodes[i].op_type + ") defines value '" + o +
                         "', already defined");
    }
  std::set<std::string> free;
  // A name neither this graph nor an enclosing one defines is an error; one only an
  // enclosing graph defines is a free variable of this graph.
  auto resolve = [&](const std::string& in, size_t i, std::vector<int>& pending,
                     std::vector<std::vector<size_t>>& users) {
    if (in.empty() || defined.count(in)) return;
    auto it = producer.find(in);
    if (it == producer.end()) {
      if (outer && outer->count(in)) {
        free.insert(in);
        return;
      }
      throw ValueError(pre + "node " + nodes[i].name + " (" + nodes[i].op_type + ") reads value '" + in +
                       "', which no graph input, initializer or node defines");
    }
    if (it->second == i) return;  // a subgraph reading its own node's output: caught at run time
    ++pending[i];
    users[it->second].push_back(i);
  };
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> users(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& in : nodes[i].inputs) resolve(in, i, pending, users);
    std::set<std::string> uniq(implicit[i].begin(), implicit[i].end());
    for (const auto& in : uniq) resolve(in, i, pending, users);
  }
  std::deque<size_t> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0) ready.push_back(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.push_back(u);
  }
  if (order.size() != nodes.size()) {
    for (size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] > 0)
        throw ValueError(pre + "the graph has a cycle through node " + nodes[i].name + " (" + nodes[i].op_type + ")");
  }
  for (size_t i : order) g->nodes.push_back(std::move(nodes[i]));
  for (const auto& o : gp.output()) {
    if (!defined.count(o.name()) && !producer.count(o.name())) {
      if (outer && outer->count(o.name())) free.insert(o.name());
      else
        throw ValueError(pre + "graph output '" + o.name() + "' is not defined by any node, input or initializer");
    }
    g->outputs.push_back(o.name());
  }
  g->free_vars.assign(free.begin(), free.end());
  return g;
}

std::shared_ptr<Graph> graph_from_model(const ::onnx::ModelProto& m, const std::string& source,
                                        const std::string& base_dir) {
  const std::string pre = prefix(source);
  if (!m.has_graph()) throw ValueError(pre + "the model has no graph");
  std::map<std::string, int64_t> opsets;
  for (const auto& o : m.opset_import()) opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  // IR version 3+ requires opset_import; older files imply opset 1.
  if (!opsets.count("")) opsets[""] = m.opset_import_size() ? 0 : 1;
  ParseEnv pe{source, base_dir, &opsets};
  return parse_graph(m.graph(), pe, nullptr, pre);
}

std::shared_ptr<OnnxModel> parse_model(const std::string& bytes, const std::string& label, const std::string& base_dir) {
  ::onnx::ModelProto m;
  if (!m.ParseFromString(bytes))
    throw RuntimeError(prefix(label) + "not a valid ONNX ModelProto (truncated or malformed protobuf, " +
                       std::to_string(bytes.size()) + " bytes)");
  return std::make_shared<OnnxModel>(graph_from_model(m, label, base_dir));
}

std::string sanitize(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (c == '.') c = '_';
  if (s.empty()) s = "_";
  return s;
}

}  // namespace

// ------------------------------------------------------------------------ public loading

std::shared_ptr<OnnxModel> load_model(const std::string& path) {
  return parse_model(read_file(path, "onnx"), path, dirname(path));
}

std::shared_ptr<OnnxModel> load_model_from_bytes(const std::string& bytes, const std::string& label,
                                                 const std::string& base_dir) {
  return parse_model(bytes, label, base_dir);
}

Tensor load_tensor_from_bytes(const std::string& bytes, const std::string& label) {
  ::onnx::TensorProto p;
  if (!p.ParseFromString(bytes))
    throw RuntimeError(prefix(label) + "not a valid ONNX TensorProto (truncated or malformed protobuf, " +
                       std::to_string(bytes.size()) + " bytes)");
  return tensor_from_proto(p, prefix(label), "");
}

Tensor load_tensor(const std::string& path) { return load_tensor_from_bytes(read_file(path, "onnx"), path); }

void save_tensor(const std::string& path, const Tensor& t, const std::string& name) {
  ::onnx::TensorProto p;
  p.set_name(name);
  int code = 0;
  switch (t.dtype()) {
    case DType::Float32: code = ::onnx::TensorProto::FLOAT; break;
    case DType::Float64: code = ::onnx::TensorProto::DOUBLE; break;
    case DType::Float16: code = ::onnx::TensorProto::FLOAT16; break;
    case DType::BFloat16: code = ::onnx::TensorProto::BFLOAT16; break;
    case DType::Int64: code = ::onnx::TensorProto::INT64; break;
    case DType::Int32: code = ::onnx::TensorProto::INT32; break;
    case DType::Int16: code = ::onnx::TensorProto::INT16; break;
    case DType::Int8: code = ::onnx::TensorProto::INT8; break;
    case DType::UInt8: code = ::onnx::TensorProto::UINT8; break;
    case DType::Bool: code = ::onnx::TensorProto::BOOL; break;
  }
  p.set_data_type(code);
  for (int64_t d : t.sizes()) p.add_dims(d);
  Tensor c = t.contiguous();
  p.set_raw_data(std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.nbytes())));
  const std::string bytes = p.SerializeAsString();
  io::atomic_write(path, "onnx", [&](io::FileWriter& w) { w.write(bytes.data(), bytes.size()); });
}

std::vector<std::string> supported_ops() { return converter_names(); }

// ------------------------------------------------------------------------ OnnxModel

OnnxModel::OnnxModel(std::shared_ptr<const Graph> graph) : nn::Module("OnnxModel"), graph_(std::move(graph)) {
  // Every op must have a converter: refuse the model at load, naming the op and opset.
  check_converters(*graph_);
  std::set<std::string> used;
  for (const auto& [name, t] : graph_->initializers) {
    std::string key = sanitize(name);
    while (!used.insert(key).second) key += "_";
    storage_.push_back(std::make_unique<Tensor>(t));
    Tensor* slot = storage_.back().get();
    if (t.is_floating_point()) register_parameter(key, slot, /*requires_grad=*/true);
    else register_buffer(key, slot);
    slots_.emplace_back(name, slot);
  }
}

const std::vector<std::string>& OnnxModel::input_names() const { return graph_->user_inputs; }
const std::vector<std::string>& OnnxModel::output_names() const { return graph_->outputs; }
int64_t OnnxModel::opset() const { return graph_->opset; }

std::vector<std::string> OnnxModel::op_types() const {
  std::set<std::string> s;
  for (const auto& n : graph_->nodes) s.insert(n.op_type);
  return {s.begin(), s.end()};
}

Tensor OnnxModel::forward(const Tensor& input) {
  auto out = forward_list({input});
  if (out.size() != 1)
    throw ValueError(prefix(graph_->source) + "forward(Tensor) needs a model with one output; this one has " +
                     std::to_string(out.size()) + " (call forward_list)");
  return out[0];
}

std::vector<Tensor> OnnxModel::forward_list(const std::vector<Tensor>& inputs) {
  std::vector<Value> vs;
  vs.reserve(inputs.size());
  for (const Tensor& t : inputs) vs.push_back(Value::tensor(t));
  std::vector<Value> outs = forward_values(vs);
  std::vector<Tensor> result;
  result.reserve(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    if (outs[i].kind != Value::Kind::Tensor)
      throw NotImplementedError(prefix(graph_->source) + "graph output '" + graph_->outputs[i] + "' is a " +
                                outs[i].kind_name() + ", not a tensor (call forward_values)");
    result.push_back(std::move(outs[i].t));
  }
  return result;
}

namespace {
// Subgraph runs (If branches, Loop / Scan / SequenceMap bodies) allowed in one call of
// forward_values, nested ones included (see set_max_subgraph_runs).
std::atomic<int64_t> g_max_subgraph_runs{int64_t{1} << 20};
thread_local int64_t t_subgraph_runs = 0;
}  // namespace

int64_t set_max_subgraph_runs(int64_t n) {
  if (n < 1) throw ValueError("[onnx] set_max_subgraph_runs: the bound must be positive, got " + std::to_string(n));
  return g_max_subgraph_runs.exchange(n);
}

std::vector<Value> OnnxModel::forward_values(const std::vector<Value>& inputs) {
  const Graph& g = *graph_;
  struct RunCount {  // per call; restored for a model called from inside another's call
    int64_t saved = t_subgraph_runs;
    RunCount() { t_subgraph_runs = 0; }
    ~RunCount() { t_subgraph_runs = saved; }
  } run_count;
  const std::string pre = prefix(g.source);
  std::unordered_map<std::string, Value> env;
  env.reserve(g.nodes.size() * 2 + g.initializers.size() + inputs.size());
  for (const auto& [name, slot] : slots_) env[name] = Value{*slot, !slot->is_floating_point()};
  const std::vector<std::string>* names = &g.user_inputs;
  if (inputs.size() != g.user_inputs.size()) {
    if (inputs.size() == g.all_inputs.size() && !g.all_inputs.empty()) names = &g.all_inputs;
    else
      throw ValueError(pre + "got " + std::to_string(inputs.size()) + " inputs, expected " +
                       std::to_string(g.user_inputs.size()) + " (the graph inputs that are not initializers)");
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].kind == Value::Kind::Tensor && !inputs[i].t.defined())
      throw ValueError(pre + "input " + std::to_string(i) + " ('" + (*names)[i] + "') is undefined");
    Value v = inputs[i];
    v.known = false;
    env[(*names)[i]] = std::move(v);
  }
  return run_graph(g, env, nullptr);
}

void check_converters(const Graph& g) {
  for (const Node& n : g.nodes) {
    const std::string where = prefix(g.source) + "node " + n.name + " (" + n.op_type + ", opset " +
                              std::to_string(n.opset) + "): ";
    // Gradient (training domain) is run_graph's own: it re-runs part of the graph.
    const bool gradient = n.domain == "ai.onnx.preview.training" && n.op_type == "Gradient";
    const bool found = n.domain.empty() ? (find_converter(n.op_type) || find_value_converter(n.op_type))
                                        : (find_converter(n.op_type, n.domain) != nullptr || gradient);
    if (!found) {
      if (!n.domain.empty() && n.domain != "ai.onnx.preview.training")
        throw NotImplementedError(where + "domain '" + n.domain +
                                  "' is not supported (only the default ONNX domain and ai.onnx.preview.training)");
      throw NotImplementedError(where + "has no converter in tandem");
    }
    for (const auto& [name, a] : n.attrs)
      if (a.g) check_converters(*a.g);
  }
}

namespace {

const char* const kTrainingDomain = "ai.onnx.preview.training";

bool is_gradient(const Node& n) { return n.domain == kTrainingDomain && n.op_type == "Gradient"; }

// Gradient (ai.onnx.preview.training): d y / d x for each name x in attribute `xs` (the
// node's first inputs carry their values), y named by attribute `y`, by tandem's autograd.
// The nodes of `g` that y depends on (back to xs, graph inputs and initializers) run again
// with gradient recording on, xs replaced by fresh leaves that require grad; the other
// values they read come from `scope`. A scalar-weighted sum is differentiated
// (grad_output ones). An x that y does not depend on gets zeros.
std::vector<Value> gradient_node(const Graph& g, const Node& n, const Scope& scope, Ctx& ctx) {
  const Attr* xs_a = ctx.attr("xs");
  const Attr* y_a = ctx.attr("y");
  if (!xs_a || xs_a->strings.empty() || !y_a || y_a->s.empty())
    ctx.invalid("needs attributes xs (value names) and y (a value name)");
  const std::vector<std::string>& xs = xs_a->strings;
  const std::string& yname = y_a->s;
  if (ctx.num_inputs() < xs.size()) ctx.invalid("takes the values of xs as its first inputs");
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer[o] = i;
  const std::set<std::string> xset(xs.begin(), xs.end());
  if (!xset.count(yname) && !producer.count(yname) && !scope.find(yname))
    ctx.invalid("y names value '" + yname + "', which the graph does not define");
  std::vector<bool> need(g.nodes.size(), false);
  std::vector<std::string> todo{yname};
  std::set<std::string> seen;
  while (!todo.empty()) {
    std::string name = todo.back();
    todo.pop_back();
    if (xset.count(name) || !seen.insert(name).second) continue;
    auto it = producer.find(name);
    if (it == producer.end()) continue;  // a graph input, initializer or outer value: a constant here
    const Node& p = g.nodes[it->second];
    if (&p == &n || is_gradient(p)) ctx.invalid("y depends on a Gradient node");
    need[it->second] = true;
    for (const auto& in : p.inputs)
      if (!in.empty()) todo.push_back(in);
  }
  autograd::EnableGradGuard grad_on;
  std::unordered_map<std::string, Value> env;
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = ctx.in(i);
    if (!is_floating_point(x.dtype())) ctx.invalid("x '" + xs[i] + "' is not a floating-point tensor");
    Tensor leaf = x.detach();
    leaf.requires_grad_(true);
    leaves.push_back(leaf);
    env[xs[i]] = Value::tensor(leaf);
  }
  Graph slice;
  slice.source = g.source;
  slice.opset = g.opset;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (need[i]) slice.nodes.push_back(g.nodes[i]);
  slice.outputs = {yname};
  std::vector<Value> yv = run_graph(slice, env, &scope);
  if (yv[0].kind != Value::Kind::Tensor) ctx.invalid("y '" + yname + "' is not a tensor");
  const Tensor& y = yv[0].t;
  std::vector<Tensor> grads(leaves.size());
  if (y.requires_grad())
    grads = autograd::grad({y}, leaves, {ones_like(y)}, std::nullopt, false, /*allow_unused=*/true);
  std::vector<Value> outs;
  for (size_t i = 0; i < leaves.size(); ++i)
    outs.push_back(Value::tensor(grads[i].defined() ? grads[i].detach() : zeros_like(leaves[i])));
  return outs;
}

}  // namespace

std::vector<Value> run_graph(const Graph& g, std::unordered_map<std::string, Value>& env, const Scope* outer) {
  const std::string pre = prefix(g.source);
  Scope scope{&env, outer};
  std::vector<const Value*> ins;
  for (const Node& n : g.nodes) {
    ins.clear();
    bool known = true;
    for (const auto& name : n.inputs) {
      if (name.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      const Value* v = scope.find(name);
      if (!v)  // defined at load; missing only when a converter did not produce an optional output
        throw NotImplementedError(pre + "node " + n.name + " (" + n.op_type + ") reads value '" + name +
                                  "', an optional output tandem's converter does not compute");
      ins.push_back(v);
      known = known && v->known;
    }
    Ctx ctx(n, ins, g.source, &scope);
    std::vector<Value> outs;
    if (const ValueConverter* vc = n.domain.empty() ? find_value_converter(n.op_type) : nullptr) {
      outs = (*vc)(ctx);
    } else if (is_gradient(n)) {
      outs = gradient_node(g, n, scope, ctx);
    } else {
      const Converter* conv = find_converter(n.op_type, n.domain);
      if (!conv) ctx.unsupported("has no converter in tandem");
      for (Tensor& t : (*conv)(ctx)) outs.push_back(Value::tensor(std::move(t)));
    }
    // Shape-like ops read only sizes; random ops are never known.
    if (n.op_type == "Shape" || n.op_type == "Size") known = true;
    if (n.op_type.rfind("Random", 0) == 0 || n.op_type == "Bernoulli" || n.op_type == "Dropout") known = false;
    // Subgraphs read outer values their node does not list as inputs.
    for (const auto& [name, a] : n.attrs)
      if (a.g) known = false;
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      if (k >= outs.size() || (outs[k].kind == Value::Kind::Tensor && !outs[k].t.defined())) {
        // An optional output the converter does not produce: an error only if it is used.
        continue;
      }
      outs[k].known = known;
      env[n.outputs[k]] = std::move(outs[k]);
    }
  }
  std::vector<Value> result;
  result.reserve(g.outputs.size());
  for (const auto& o : g.outputs) {
    const Value* v = scope.find(o);
    if (!v)
      throw NotImplementedError(pre + "graph output '" + o + "' is an optional output tandem's converter does not compute");
    result.push_back(*v);
  }
  return result;
}

// ------------------------------------------------------------------------ Ctx

std::string Ctx::where() const {
  return "[onnx] " + source_ + ": node " + node_.name + " (" + node_.op_type + ", opset " +
         std::to_string(node_.opset) + "): ";
}
void Ctx::unsupported(const std::string& what) const { throw NotImplementedError(where() + what); }
void Ctx::invalid(const std::string& what) const { throw ValueError(where() + what); }

const Tensor& Ctx::in(size_t i) const {
  if (i < inputs_.size() && inputs_[i] && inputs_[i]->kind != Value::Kind::Tensor)
    invalid("input " + std::to_string(i) + " is a " + inputs_[i]->kind_name() + ", expected a tensor");
  if (!has(i)) invalid("input " + std::to_string(i) + " is required but missing");
  return inputs_[i]->t;
}

const Value& Ctx::value(size_t i) const {
  if (i >= inputs_.size() || !inputs_[i]) invalid("input " + std::to_string(i) + " is required but missing");
  return *inputs_[i];
}

const std::vector<Tensor>& Ctx::seq(size_t i) const {
  const Value& v = value(i);
  if (v.kind != Value::Kind::Sequence)
    invalid("input " + std::to_string(i) + " is a " + v.kind_name() + ", expected a sequence");
  return v.seq;
}

const Graph& Ctx::graph_attr(const std::string& name) const {
  const Attr* a = attr(name);
  if (!a) invalid("the graph attribute '" + name + "' is required but missing");
  if (!a->g) invalid("attribute '" + name + "' is a " + a->kind + ", expected a GRAPH");
  return *a->g;
}

std::vector<Value> Ctx::run(const Graph& body, std::vector<Value> inputs) const {
  const int64_t bound = g_max_subgraph_runs.load();
  if (++t_subgraph_runs > bound)
    invalid("the call ran " + std::to_string(bound) +
            " subgraphs (If branches, Loop / Scan / SequenceMap bodies, nested ones included): tandem's bound "
            "(set_max_subgraph_runs), e.g. a Loop whose condition never turns false");
  if (inputs.size() != body.user_inputs.size())
    invalid("its subgraph takes " + std::to_string(body.user_inputs.size()) + " inputs, the op passes " +
            std::to_string(inputs.size()));
  std::unordered_map<std::string, Value> env;
  for (const auto& [name, t] : body.initializers) env[name] = Value{t, !t.is_floating_point()};
  for (size_t i = 0; i < inputs.size(); ++i) env[body.user_inputs[i]] = std::move(inputs[i]);
  return run_graph(body, env, scope_);
}

std::vector<int64_t> Ctx::ints(size_t i) const {
  const Tensor& t = in(i);
  if (is_floating_point(t.dtype()) || t.dtype() == DType::Bool)
    invalid("input " + std::to_string(i) + " must be an integer tensor, got " + std::string(dtype_name(t.dtype())));
  Tensor c = t.to(DType::Int64).contiguous();
  std::vector<int64_t> v(c.numel());
  if (known(i)) {
    DispatchDepthGuard quiet;  // a known value: the same on every replay (see Value)
    std::memcpy(v.data(), c.data_ptr(), v.size() * sizeof(int64_t));
  } else if (!v.empty()) {
    std::memcpy(v.data(), c.data_ptr(), v.size() * sizeof(int64_t));
  }
  return v;
}

std::vector<double> Ctx::doubles(size_t i) const {
  const Tensor& t = in(i);
  Tensor c = t.to(DType::Float64).contiguous();
  std::vector<double> v(c.numel());
  if (known(i)) {
    DispatchDepthGuard quiet;
    std::memcpy(v.data(), c.data_ptr(), v.size() * sizeof(double));
  } else if (!v.empty()) {
    std::memcpy(v.data(), c.data_ptr(), v.size() * sizeof(double));
  }
  return v;
}

const Attr* Ctx::attr(const std::string& name) const {
  auto it = node_.attrs.find(name);
  return it == node_.attrs.end() ? nullptr : &it->second;
}
int64_t Ctx::attr_i(const std::string& name, int64_t dflt) const {
  const Attr* a = attr(name);
  return a ? a->i : dflt;
}
double Ctx::attr_f(const std::string& name, double dflt) const {
  const Attr* a = attr(name);
  return a ? a->f : dflt;
}
std::string Ctx::attr_s(const std::string& name, const std::string& dflt) const {
  const Attr* a = attr(name);
  return a ? a->s : dflt;
}
std::vector<int64_t> Ctx::attr_ints(const std::string& name, std::vector<int64_t> dflt) const {
  const Attr* a = attr(name);
  return a ? a->ints : dflt;
}
std::vector<double> Ctx::attr_floats(const std::string& name) const {
  const Attr* a = attr(name);
  return a ? a->floats : std::vector<double>{};
}

}  // namespace tandem::onnx

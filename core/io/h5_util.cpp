#include "core/io/h5_util.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/io/schema.h"
#include "core/util/errors.h"

namespace relpos::h5 {

namespace {

herr_t collect_error(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* out = static_cast<std::vector<std::string>*>(data);
  if (err && err->desc && *err->desc) out->push_back(err->desc);
  return 0;
}

// The innermost message of the last failed HDF5 call. Captured when the call fails: by the
// time a C++ exception reaches a catch block, destructors of HDF5 objects have made other HDF5
// calls, which clear the error stack.
std::string& last_error() {
  static std::string message;
  return message;
}

herr_t capture_error(hid_t stack, void* /*client_data*/) {
  std::vector<std::string> messages;  // innermost (most specific) first
  H5Ewalk2(stack, H5E_WALK_UPWARD, collect_error, &messages);
  last_error() = messages.empty() ? std::string() : messages.front();
  return 0;
}

}  // namespace

void quiet() { H5Eset_auto2(H5E_DEFAULT, capture_error, nullptr); }

void clear_error() { last_error().clear(); }

std::string error_detail(const H5::Exception& e) {
  std::string msg = last_error();
  last_error().clear();
  if (msg.empty()) msg = e.getDetailMsg();
  if (msg.empty()) return "HDF5 error";
  // A failed system call: HDF5's message spans two lines ("file write failed: time = ...,
  // filename = ..., errno = 28, error message = 'No space left on device', buf = ..."); its
  // first words and the OS's reason say it all.
  const std::string reason = "error message = '";
  const size_t at = msg.find(reason), colon = msg.find(':');
  if (at == std::string::npos || colon == std::string::npos || colon > at) return msg;
  const size_t end = msg.find('\'', at + reason.size());
  return msg.substr(0, colon) + ": " + msg.substr(at + reason.size(), end - at - reason.size());
}

H5::FileAccPropList unlocked_access() {
  H5::FileAccPropList fapl;
  // ignore_when_disabled: also open on file systems without flock support.
  H5Pset_file_locking(fapl.getId(), false, true);
  return fapl;
}

H5::FileAccPropList writer_access() {
  H5::FileAccPropList fapl = unlocked_access();
  // No evictions: the metadata cache writes dirty entries only when the file is flushed, so
  // between flushes the metadata on disk stays what the last flush wrote.
  H5AC_cache_config_t config;
  config.version = H5AC__CURR_CACHE_CONFIG_VERSION;
  H5Pget_mdc_config(fapl.getId(), &config);
  config.evictions_enabled = false;
  config.incr_mode = H5C_incr__off;
  config.flash_incr_mode = H5C_flash_incr__off;
  config.decr_mode = H5C_decr__off;
  if (H5Pset_mdc_config(fapl.getId(), &config) < 0)
    throw H5::PropListIException("writer_access", "H5Pset_mdc_config failed");
  // No raw data chunk cache and no sieve buffer: every dataset write goes to the file at once,
  // so that closing a dataset writes nothing. A close that must write and fails (a full disk)
  // frees the dataset but leaves its id behind in HDF5 1.10, and the next use of that id (the
  // C++ destructor's second close, the library's own clean-up at exit) reads freed memory and
  // can crash.
  if (H5Pset_cache(fapl.getId(), 0, 1, 0, 1.0) < 0 || H5Pset_sieve_buf_size(fapl.getId(), 0) < 0)
    throw H5::PropListIException("writer_access", "H5Pset_cache failed");
  return fapl;
}

H5::FileCreatPropList writer_creation() {
  H5::FileCreatPropList fcpl;
  // No reuse of freed space. A flush is not atomic: after a crash in the middle of one, the
  // disk can hold old metadata that points at space freed and then filled with new data (a
  // replaced /weights showing its old step with the new values). Never handing freed space out
  // again rules that out; files of replaced objects grow instead (replacing is rare).
  if (H5Pset_file_space_strategy(fcpl.getId(), H5F_FSPACE_STRATEGY_NONE, false, 1) < 0)
    throw H5::PropListIException("writer_creation", "H5Pset_file_space_strategy failed");
  return fcpl;
}

std::string join_dims(const std::vector<std::string>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? "," : "") + dims[i];
  return out;
}

std::vector<std::string> split_dims(const std::string& dims) { return schema::axis_names(dims); }

void check_link_name(const std::string& name, const std::string& what) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    throw SchemaError(fmt::format("{} name '{}' cannot be stored in a run file", what, name),
                      "names must be non-empty and contain no '/'");
}

namespace {

// The stored form of a tensor and its HDF5 file and memory types.
struct Stored {
  torch::Tensor tensor;
  H5::PredType file_type;
  H5::PredType mem_type;
};

Stored to_stored(const torch::Tensor& value, Store store) {
  torch::Tensor t = value.detach().to(torch::kCPU);  // shape of value
  const bool floating = t.is_floating_point();
  torch::ScalarType dtype = torch::kFloat32;
  switch (store) {
    case Store::Float32:
      dtype = torch::kFloat32;
      break;
    case Store::Float32OrInt64:
      dtype = floating ? torch::kFloat32 : torch::kInt64;
      break;
    case Store::AsGiven:
      dtype = !floating                            ? torch::kInt64
              : t.scalar_type() == torch::kFloat64 ? torch::kFloat64
                                                   : torch::kFloat32;
      break;
    case Store::Int64:
      dtype = torch::kInt64;
      break;
    case Store::UInt8:
      dtype = torch::kUInt8;
      break;
  }
  t = t.to(dtype).contiguous();  // shape of value
  switch (dtype) {
    case torch::kFloat64:
      return {t, H5::PredType::IEEE_F64LE, H5::PredType::NATIVE_DOUBLE};
    case torch::kInt64:
      return {t, H5::PredType::STD_I64LE, H5::PredType::NATIVE_INT64};
    case torch::kUInt8:
      return {t, H5::PredType::STD_U8LE, H5::PredType::NATIVE_UINT8};
    default:
      return {t, H5::PredType::IEEE_F32LE, H5::PredType::NATIVE_FLOAT};
  }
}

H5::DataSpace space_of(const std::vector<hsize_t>& shape) {
  if (shape.empty()) return H5::DataSpace(H5S_SCALAR);
  return H5::DataSpace(static_cast<int>(shape.size()), shape.data());
}

// Chunk shape for a checksummed dataset: the whole dataset, with leading axes halved until a
// chunk holds at most 16 MiB (HDF5 chunks must stay under 4 GiB; whole reads are the norm).
std::vector<hsize_t> chunk_shape(const std::vector<hsize_t>& shape, size_t element_size) {
  constexpr hsize_t kMaxChunkBytes = hsize_t{16} << 20;
  std::vector<hsize_t> chunk = shape;
  auto bytes = [&] {
    hsize_t n = element_size;
    for (hsize_t d : chunk) n *= d;
    return n;
  };
  for (size_t axis = 0; axis < chunk.size() && bytes() > kMaxChunkBytes;) {
    if (chunk[axis] > 1)
      chunk[axis] = (chunk[axis] + 1) / 2;
    else
      ++axis;
  }
  return chunk;
}

}  // namespace

void write_tensor(H5::Group& group, const std::string& name, const torch::Tensor& value,
                  const std::vector<std::string>& dims, Store store) {
  TORCH_CHECK(value.defined(), "dataset '", name, "': the tensor is undefined");
  TORCH_CHECK(dims.empty() || static_cast<int64_t>(dims.size()) == value.dim(), "dataset '", name,
              "': ", dims.size(), " axis names (", join_dims(dims), ") for a tensor of shape ",
              value.sizes());
  check_link_name(name, "dataset");
  Stored s = to_stored(value, store);
  std::vector<hsize_t> shape(s.tensor.sizes().begin(), s.tensor.sizes().end());
  std::vector<std::string> axis_names = dims;
  if (axis_names.empty())
    for (int64_t i = 0; i < value.dim(); ++i)
      axis_names.push_back(schema::kDimsGenericPrefix + std::to_string(i));
  remove_link(group, name);
  H5::DSetCreatPropList plist;
  if (s.tensor.numel() > 0 && !shape.empty()) {
    // Chunked with a Fletcher-32 checksum per chunk: a damaged value is a read error, not a
    // silently wrong number (HDF5 checks it on every read, h5py included).
    const std::vector<hsize_t> chunk = chunk_shape(shape, s.file_type.getSize());
    plist.setChunk(static_cast<int>(chunk.size()), chunk.data());
    plist.setFletcher32();
  }
  H5::DataSet ds = group.createDataSet(name, s.file_type, space_of(shape), plist);
  if (s.tensor.numel() > 0) ds.write(s.tensor.data_ptr(), s.mem_type);
  write_string_attr(ds, schema::kAttrDims, join_dims(axis_names));
}

void write_strings(H5::Group& group, const std::string& name,
                   const std::vector<std::string>& values, const std::string& dim) {
  check_link_name(name, "dataset");
  remove_link(group, name);
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(H5T_CSET_UTF8);
  const hsize_t n[1] = {values.size()};
  H5::DataSet ds = group.createDataSet(name, type, H5::DataSpace(1, n));
  std::vector<const char*> data;
  for (const auto& v : values) data.push_back(v.c_str());
  if (!data.empty()) ds.write(data.data(), type);
  write_string_attr(ds, schema::kAttrDims, dim);
}

std::vector<std::string> read_strings(const H5::DataSet& ds, const std::string& where) {
  const H5::DataType type = ds.getDataType();
  const H5::DataSpace space = ds.getSpace();
  if (type.getClass() != H5T_STRING || space.getSimpleExtentNdims() > 1)
    throw SchemaError(fmt::format("{}: expected a 1-D dataset of strings, found {} of {} axes",
                                  where, type_name(type), space.getSimpleExtentNdims()));
  const size_t n = static_cast<size_t>(space.getSimpleExtentNpoints());
  std::vector<std::string> out;
  if (n == 0) return out;
  const H5::StrType mem(H5::PredType::C_S1, H5T_VARIABLE);
  if (ds.getStrType().isVariableStr()) {
    std::vector<char*> data(n, nullptr);
    ds.read(data.data(), mem);
    for (char* v : data) out.emplace_back(v ? v : "");
    H5Dvlen_reclaim(mem.getId(), space.getId(), H5P_DEFAULT, data.data());
  } else {  // fixed length (h5py can write these): NUL-padded
    const size_t width = type.getSize();
    std::vector<char> data(n * width);
    ds.read(data.data(), ds.getStrType());
    for (size_t i = 0; i < n; ++i) {
      const char* v = data.data() + i * width;
      out.emplace_back(v, strnlen(v, width));
    }
  }
  return out;
}

torch::Tensor read_tensor(const H5::DataSet& ds, const std::string& where) {
  const H5::DataType type = ds.getDataType();
  const H5T_class_t cls = type.getClass();
  const size_t size = type.getSize();
  torch::ScalarType dtype;
  H5::PredType mem = H5::PredType::NATIVE_FLOAT;
  if (cls == H5T_FLOAT && size <= 4) {
    dtype = torch::kFloat32;  // float16 in the file is converted by HDF5
    mem = H5::PredType::NATIVE_FLOAT;
  } else if (cls == H5T_FLOAT && size == 8) {
    dtype = torch::kFloat64;
    mem = H5::PredType::NATIVE_DOUBLE;
  } else if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type.getId()) == H5T_SGN_2;
    if (size == 1 && !is_signed) {
      dtype = torch::kUInt8;
      mem = H5::PredType::NATIVE_UINT8;
    } else if (size == 1) {
      dtype = torch::kInt8;
      mem = H5::PredType::NATIVE_INT8;
    } else if (size == 2 && is_signed) {
      dtype = torch::kInt16;
      mem = H5::PredType::NATIVE_INT16;
    } else if (size <= 4 && (is_signed || size < 4)) {
      dtype = torch::kInt32;
      mem = H5::PredType::NATIVE_INT32;
    } else {
      dtype = torch::kInt64;  // int64 and uint32; uint64 values above 2^63 would not fit
      mem = H5::PredType::NATIVE_INT64;
    }
  } else {
    throw SchemaError(
        fmt::format("{}: element type {} cannot be read as a tensor", where, type_name(type)),
        "expected float32, float64 or an integer type (docs/hdf5-schema.md)");
  }
  const H5::DataSpace space = ds.getSpace();
  const int rank = space.getSimpleExtentNdims();
  std::vector<hsize_t> dims(static_cast<size_t>(std::max(rank, 0)));
  if (rank > 0) space.getSimpleExtentDims(dims.data());
  std::vector<int64_t> shape(dims.begin(), dims.end());
  torch::Tensor out = torch::empty(shape, torch::TensorOptions().dtype(dtype));  // the stored shape
  if (out.numel() > 0) ds.read(out.data_ptr(), mem);
  return out;
}

void write_string_attr(H5::H5Object& obj, const std::string& name, const std::string& value) {
  if (obj.attrExists(name)) obj.removeAttr(name);
  H5::StrType type(H5::PredType::C_S1, H5T_VARIABLE);
  type.setCset(H5T_CSET_UTF8);
  H5::Attribute attr = obj.createAttribute(name, type, H5::DataSpace(H5S_SCALAR));
  const char* data = value.c_str();
  attr.write(type, &data);
}

void write_int_attr(H5::H5Object& obj, const std::string& name, int64_t value) {
  if (obj.attrExists(name)) obj.removeAttr(name);
  H5::Attribute attr =
      obj.createAttribute(name, H5::PredType::STD_I64LE, H5::DataSpace(H5S_SCALAR));
  attr.write(H5::PredType::NATIVE_INT64, &value);
}

bool has_attr(const H5::H5Object& obj, const std::string& name) { return obj.attrExists(name); }

namespace {

bool is_scalar_or_single(const H5::Attribute& attr) {
  return attr.getSpace().getSimpleExtentNpoints() == 1;
}

}  // namespace

std::optional<std::string> read_string_attr(const H5::H5Object& obj, const std::string& name) {
  if (!obj.attrExists(name)) return std::nullopt;
  H5::Attribute attr = obj.openAttribute(name);
  if (attr.getTypeClass() != H5T_STRING || !is_scalar_or_single(attr)) return std::nullopt;
  std::string value;
  attr.read(attr.getStrType(), value);
  // Fixed-length strings may carry NUL padding.
  const size_t nul = value.find('\0');
  if (nul != std::string::npos) value.resize(nul);
  return value;
}

std::optional<int64_t> read_int_attr(const H5::H5Object& obj, const std::string& name) {
  if (!obj.attrExists(name)) return std::nullopt;
  H5::Attribute attr = obj.openAttribute(name);
  if (attr.getTypeClass() != H5T_INTEGER || !is_scalar_or_single(attr)) return std::nullopt;
  int64_t value = 0;
  attr.read(H5::PredType::NATIVE_INT64, &value);
  return value;
}

std::string type_name(const H5::DataType& type) {
  const size_t size = type.getSize();
  switch (type.getClass()) {
    case H5T_FLOAT:
      return fmt::format("float{}", 8 * size);
    case H5T_INTEGER:
      return fmt::format("{}int{}", H5Tget_sign(type.getId()) == H5T_SGN_2 ? "" : "u", 8 * size);
    case H5T_STRING:
      return "string";
    case H5T_ENUM:
      return "enum";
    case H5T_COMPOUND:
      return "compound";
    case H5T_ARRAY:
      return "array";
    case H5T_VLEN:
      return "vlen";
    case H5T_REFERENCE:
      return "reference";
    case H5T_BITFIELD:
      return "bitfield";
    case H5T_OPAQUE:
      return "opaque";
    default:
      return "unknown";
  }
}

namespace {

// A long or multi-line string shown by its first line and its size.
std::string abbreviate(const std::string& s) {
  const size_t newline = s.find('\n');
  if (newline == std::string::npos && s.size() <= 72) return "\"" + s + "\"";
  const std::string first = s.substr(0, std::min<size_t>({newline, s.size(), 60}));
  const auto lines = std::count(s.begin(), s.end(), '\n') + (s.empty() || s.back() == '\n' ? 0 : 1);
  return fmt::format("\"{}…\" ({} lines, {} bytes)", first, lines, s.size());
}

}  // namespace

std::string describe_attr(const H5::Attribute& attr) {
  const H5::DataType type = attr.getDataType();
  const H5T_class_t cls = type.getClass();
  const hssize_t n = attr.getSpace().getSimpleExtentNpoints();
  if (n == 1 && cls == H5T_STRING) {
    std::string value;
    attr.read(attr.getStrType(), value);
    const size_t nul = value.find('\0');
    if (nul != std::string::npos) value.resize(nul);
    return "string " + abbreviate(value);
  }
  if (n == 1 && cls == H5T_INTEGER) {
    int64_t value = 0;
    attr.read(H5::PredType::NATIVE_INT64, &value);
    return fmt::format("{} {}", type_name(type), value);
  }
  if (n == 1 && cls == H5T_FLOAT) {
    double value = 0;
    attr.read(H5::PredType::NATIVE_DOUBLE, &value);
    return fmt::format("{} {}", type_name(type), value);
  }
  return fmt::format("{} [{} values]", type_name(type), n);
}

bool path_exists(const H5::H5File& file, const std::string& path) {
  if (path.empty() || path[0] != '/') return false;
  std::string partial;
  size_t start = 1;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    partial += "/" + path.substr(start, slash - start);
    start = slash + 1;
    const htri_t e = H5Lexists(file.getId(), partial.c_str(), H5P_DEFAULT);
    if (e <= 0) {
      clear_error();
      return false;
    }
  }
  return true;
}

H5::Group ensure_group(H5::H5File& file, const std::string& path) {
  H5::Group group = file.openGroup(schema::kRoot);
  size_t start = 1;
  while (start < path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    const std::string name = path.substr(start, slash - start);
    start = slash + 1;
    if (name.empty()) continue;
    group = group.nameExists(name) ? group.openGroup(name) : group.createGroup(name);
  }
  return group;
}

void remove_link(H5::Group& group, const std::string& name) {
  if (group.nameExists(name)) group.unlink(name);
}

void remove_path(H5::H5File& file, const std::string& path) {
  if (path_exists(file, path)) file.unlink(path);
}

std::vector<std::string> child_names(const H5::Group& group) {
  std::vector<std::string> out;
  const hsize_t n = group.getNumObjs();
  for (hsize_t i = 0; i < n; ++i) out.push_back(group.getObjnameByIdx(i));
  std::sort(out.begin(), out.end());
  return out;
}

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      // Compare digit runs by value: strip leading zeros, then length, then text.
      std::string x = a.substr(i, ie - i), y = b.substr(j, je - j);
      x.erase(0, std::min(x.find_first_not_of('0'), x.size()));
      y.erase(0, std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace relpos::h5

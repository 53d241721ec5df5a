// Small helpers over the HDF5 C++ API shared by the run-file writer, reader and `inspect`.
// Internal to core/io: everything else goes through run_file.h.
#pragma once

#include <H5Cpp.h>
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace relpos::h5 {

// Replaces HDF5's automatic printing of error stacks with a handler that keeps the most
// specific message of the last failed call (errors become exceptions only).
void quiet();
void clear_error();

// The most specific message of the last failed HDF5 call (e.g. "truncated file: eof = ..."; a
// failed system call as "file write failed: No space left on device"), or the exception's own
// text when none was kept; forgets the kept message.
std::string error_detail(const H5::Exception& e);

// File access without HDF5's file locks, so that a reader can open run.h5 while training
// writes it (HDF5 1.10 locks a file open for writing against every other process).
H5::FileAccPropList unlocked_access();
// For writers: unlocked, a metadata cache that writes to disk only when flushed, and no raw
// data chunk cache (a dataset's close has nothing left to write).
H5::FileAccPropList writer_access();
// For creating run files: space that is freed is never used again.
H5::FileCreatPropList writer_creation();

// How write_tensor stores a tensor.
enum class Store {
  Float32,         // floating tensors as float32 (attention, scores, weights)
  Float32OrInt64,  // floating -> float32, integer/bool -> int64 (position tensors)
  AsGiven,         // float32, float64 kept; integer/bool -> int64 (eval columns)
  Int64,           // probe tokens
  UInt8,           // probe key mask (bool -> 0/1)
};

// Writes `value` as dataset `name` of `group` with a `dims` attribute: chunked, each chunk with a
// Fletcher-32 checksum that HDF5 verifies on read (empty and scalar datasets: contiguous).
// `dims` names each axis; empty means generic names dim0, dim1, ... . Replaces an existing
// dataset of that name.
void write_tensor(H5::Group& group, const std::string& name, const torch::Tensor& value,
                  const std::vector<std::string>& dims, Store store);

// Reads a whole dataset into a CPU tensor of the stored type (float32, float64, int64, int32,
// uint8, ...); throws SchemaError for types a tensor cannot hold.
torch::Tensor read_tensor(const H5::DataSet& ds, const std::string& where);

// A 1-D dataset of variable-length UTF-8 strings with a `dims` attribute of one axis name
// (contiguous: a checksum would cover the heap references only). Replaces an existing one.
void write_strings(H5::Group& group, const std::string& name,
                   const std::vector<std::string>& values, const std::string& dim);
// Reads a 1-D (or scalar) string dataset; throws SchemaError naming `where` for another type.
std::vector<std::string> read_strings(const H5::DataSet& ds, const std::string& where);

// "a,b,c" <-> {"a","b","c"}; "" <-> {}.
std::string join_dims(const std::vector<std::string>& dims);
std::vector<std::string> split_dims(const std::string& dims);

// Attributes. Strings are variable-length UTF-8, integers int64; writing replaces.
void write_string_attr(H5::H5Object& obj, const std::string& name, const std::string& value);
void write_int_attr(H5::H5Object& obj, const std::string& name, int64_t value);
bool has_attr(const H5::H5Object& obj, const std::string& name);
// nullopt when the attribute is missing or not of that class.
std::optional<std::string> read_string_attr(const H5::H5Object& obj, const std::string& name);
std::optional<int64_t> read_int_attr(const H5::H5Object& obj, const std::string& name);
// A human-readable rendering of any attribute: its type and value.
std::string describe_attr(const H5::Attribute& attr);

// "float32[2,4,16,16]"-style type name of a dataset's element type.
std::string type_name(const H5::DataType& type);

// Whether every component of the absolute `path` exists ("/" always exists).
bool path_exists(const H5::H5File& file, const std::string& path);
// Opens group `path`, creating it and its parents when missing.
H5::Group ensure_group(H5::H5File& file, const std::string& path);
// Removes link `name` from `group` when present.
void remove_link(H5::Group& group, const std::string& name);
// Removes the object at absolute `path` when present.
void remove_path(H5::H5File& file, const std::string& path);
// Names of the links of a group, sorted by std::string order.
std::vector<std::string> child_names(const H5::Group& group);
// "step_2" < "step_10": digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b);

// Rejects names HDF5 would turn into paths ("a/b") or that are empty, "." or "..".
void check_link_name(const std::string& name, const std::string& what);

}  // namespace relpos::h5

// The HDF5 run file (DIR/run.h5). Layout, names and versions: docs/hdf5-schema.md; the path
// constants live in core/io/schema.h only. Writers flush after every write, and mirror every
// write to DIR/run.h5.shadow (removed by a clean close), so the file stays readable while a run
// trains and after it is killed at any moment (core/io/run_file_internal.h).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace relpos {

struct RunAttributes {
  std::string config_yaml;     // resolved config
  std::string position_types;  // "learned+tisa"
  int64_t seed = 0;
  std::string torch_version;
  std::string git_commit;
  std::string created;         // ISO 8601, UTC
  int64_t positional_parameters = -1;  // of the position encodings; -1: not written
  std::string attention;               // fused | eager; "": not written
};

// A tensor with the names of its axes, written as a float32/int64 dataset with a `dims`
// attribute (comma-separated axis names).
struct NamedTensor {
  std::string name;
  torch::Tensor value;
  std::vector<std::string> dims;
};

// /init_from: where a run started with `relpos train --init-from` took its parameters from.
// Parameter paths are LibTorch's (those of /weights).
struct InitFromRecord {
  std::string source;                         // the run folder given to --init-from
  std::vector<std::string> loaded;            // copied from its checkpoint
  std::vector<std::string> initialised;       // initialised fresh (new, or another shape)
  std::vector<std::string> shape_mismatched;  // of `initialised`: in the checkpoint, other shape
  std::vector<std::string> unused;            // in the checkpoint, not in this model
};

// /split: the run's train/valid/test split of the corpus's documents (the split units of
// docs/data.md), by index in corpus order and by name.
struct SplitRecord {
  struct Part {
    std::string split;               // "train", "valid" or "test"
    std::vector<int64_t> ids;        // document indices, ascending
    std::vector<std::string> names;  // the documents' names, one per id
  };
  int64_t split_seed = 0;
  std::string corpus;  // data.corpus as given
  std::vector<Part> parts;
};

class RunFileWriter {
 public:
  // Creates (truncate) or reopens (append, for --resume) a run file. open_append first repairs
  // a run.h5 damaged by a crash from its shadow. Empty torch_version/created are filled in.
  static std::unique_ptr<RunFileWriter> create(const std::string& path, const RunAttributes& attrs);
  static std::unique_ptr<RunFileWriter> open_append(const std::string& path);
  virtual ~RunFileWriter() = default;

  // /metrics/<name>/{step,value}: appends one point (extensible datasets). Points at steps
  // >= `step` written before (a resumed run repeating steps) are replaced.
  virtual void append_metric(const std::string& name, int64_t step, double value) = 0;
  // Drops metric points after `step` (used when resuming from an earlier checkpoint).
  virtual void truncate_metrics_after(int64_t step) = 0;

  // /probe/tokens (P,T) int64, and /probe/key_mask (P,T) uint8 when given.
  virtual void write_probe(const torch::Tensor& tokens, const torch::Tensor& key_mask) = 0;

  // /snapshots/step_<N>/ with `attention` (L,H,T,T) float32 (left out when undefined: a run
  // made by `relpos import` has no probe), position_scores/<variant> (L',H,T,T), and
  // position/<variant>/<name>. Replaces a snapshot of the same step. Flushes.
  virtual void write_snapshot(int64_t step, const torch::Tensor& attention,
                              const std::vector<NamedTensor>& position_scores,
                              const std::map<std::string, std::vector<NamedTensor>>& position) = 0;

  // /weights/<parameter path> for every parameter (float32). Replaces earlier weights. Flushes.
  virtual void write_weights(const std::vector<NamedTensor>& parameters, int64_t step) = 0;

  // /eval/<group>/<name>: 1-D datasets of one evaluation table (e.g. group "extrapolation":
  // "length", "loss", ...), plus string attributes. Replaces the group. Flushes.
  virtual void write_eval(const std::string& group, const std::vector<NamedTensor>& columns,
                          const std::map<std::string, std::string>& attrs) = 0;

  // /init_from: attribute `source`, and one 1-D string dataset per list of the record.
  // Replaces an earlier record. Flushes.
  virtual void write_init_from(const InitFromRecord& record) = 0;

  // /split: attributes `split_seed`, `corpus`; per part, /split/<split>/ids (int64) and
  // /split/<split>/names (strings). Replaces an earlier record. Flushes.
  virtual void write_split(const SplitRecord& record) = 0;

  // Replaces the root `config` attribute (a resumed run with changed train.*/eval.* settings,
  // so that run.h5 and config.yaml stay the same record). Flushes.
  virtual void set_config(const std::string& config_yaml) = 0;

  virtual void flush() = 0;
  virtual void close() = 0;
};

// Read side (analysis, tests, `relpos inspect`). Refuses files with a newer schema version.
// Opens run.h5, or its shadow when a crash left run.h5 damaged. snapshot_steps() lists only
// completed snapshots.
class RunFileReader {
 public:
  static std::unique_ptr<RunFileReader> open(const std::string& path);
  virtual ~RunFileReader() = default;

  virtual int64_t schema_version() const = 0;
  virtual std::string root_attribute(const std::string& name) const = 0;  // string attrs
  // A string or integer attribute (integers as decimal text) of the group or dataset at `path`,
  // e.g. attribute("/snapshots/step_10", "step"); root_attribute(n) is attribute("/", n).
  virtual std::string attribute(const std::string& path, const std::string& name) const = 0;
  virtual std::vector<std::string> metric_names() const = 0;
  // (steps, values) of a metric.
  virtual std::pair<std::vector<int64_t>, std::vector<double>> metric(const std::string& name) const = 0;
  virtual std::vector<int64_t> snapshot_steps() const = 0;  // sorted
  virtual bool exists(const std::string& path) const = 0;
  // Any dataset as a CPU tensor (float32, float64 or int64 as stored), with its dims attribute.
  virtual NamedTensor dataset(const std::string& path) const = 0;
  // A 1-D string dataset (/init_from/loaded, /split/train/names), in order.
  virtual std::vector<std::string> strings(const std::string& path) const = 0;
  // Child names of a group, sorted.
  virtual std::vector<std::string> children(const std::string& group) const = 0;
};

// `relpos inspect`: the tree with shapes, dtypes and attributes.
std::string describe_run_file(const std::string& path);

}  // namespace relpos

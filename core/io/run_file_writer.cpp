// The writer of one HDF5 run file. Every public write ends with a flush (H5Fflush); objects
// being replaced are removed and flushed first; the file never reuses freed space and its
// metadata cache writes only at flushes (h5_util.cpp: writer_access, writer_creation). Not the
// 1.10 "latest" format: it carries an "open for writing" flag that would make a killed run's
// file unreadable until h5clear is run. RunFileWriter::create/open_append (run_file_mirror.cpp)
// pair two of these: run.h5 and its shadow.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <H5Cpp.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/io/h5_util.h"
#include "core/io/run_file.h"
#include "core/io/run_file_internal.h"
#include "core/io/schema.h"
#include "core/util/errors.h"

namespace relpos {

namespace {

namespace sc = schema;

// Metric points per chunk of the extensible /metrics/<name>/{step,value} datasets.
constexpr hsize_t kMetricChunk = 256;

// One HDF5 file.
class H5RunFileWriter : public SingleRunFileWriter {
 public:
  H5RunFileWriter(std::string path, const H5::H5File& file)
      : path_(std::move(path)), file_(std::make_unique<H5::H5File>(file)) {}
  ~H5RunFileWriter() override {
    try {
      close();
    } catch (...) {
      // A destructor must not throw; a failed flush was reported by the write before it.
      release();
    }
  }

  void append_metric(const std::string& name, int64_t step, double value) override {
    guarded(fmt::format("append metric '{}'", name), [&] {
      h5::check_link_name(name, "metric");
      Metric& m = metric(name);
      if (m.size > 0 && step <= m.last_step) {
        // A resumed run repeating steps: drop the points at steps >= `step`.
        const std::vector<int64_t> steps = read_steps(m.step);
        hsize_t keep = 0;
        while (keep < steps.size() && steps[keep] < step) ++keep;
        resize(m, keep, steps);
        file_->flush(H5F_SCOPE_GLOBAL);  // see remove()
      }
      const hsize_t n = m.size;
      write_point(m.step, n, &step, H5::PredType::NATIVE_INT64);
      write_point(m.value, n, &value, H5::PredType::NATIVE_DOUBLE);
      m.size = n + 1;
      m.last_step = step;
      file_->flush(H5F_SCOPE_GLOBAL);
    });
  }

  void truncate_metrics_after(int64_t step) override {
    guarded(fmt::format("truncate metrics after step {}", step), [&] {
      if (!h5::path_exists(*file_, sc::kMetrics)) return;
      for (const auto& name : h5::child_names(file_->openGroup(sc::kMetrics))) {
        Metric& m = metric(name);
        const std::vector<int64_t> steps = read_steps(m.step);
        hsize_t keep = 0;
        while (keep < steps.size() && steps[keep] <= step) ++keep;
        resize(m, keep, steps);
      }
      file_->flush(H5F_SCOPE_GLOBAL);
    });
  }

  void write_probe(const torch::Tensor& tokens, const torch::Tensor& key_mask) override {
    TORCH_CHECK(tokens.defined() && tokens.dim() == 2, "probe tokens must be (P,T), got ",
                tokens.defined() ? tokens.sizes() : torch::IntArrayRef{});
    TORCH_CHECK(!key_mask.defined() || key_mask.sizes() == tokens.sizes(), "probe key mask ",
                key_mask.sizes(), " must have the shape of the tokens ", tokens.sizes());
    guarded("write the probe set", [&] {
      remove(sc::kProbe);
      H5::Group probe = h5::ensure_group(*file_, sc::kProbe);
      const auto dims = h5::split_dims(sc::kDimsProbe);
      h5::write_tensor(probe, sc::kProbeTokens, tokens, dims, h5::Store::Int64);
      if (key_mask.defined())
        h5::write_tensor(probe, sc::kProbeKeyMask, key_mask, dims, h5::Store::UInt8);
      file_->flush(H5F_SCOPE_GLOBAL);
    });
  }

  void write_snapshot(int64_t step, const torch::Tensor& attention,
                      const std::vector<NamedTensor>& position_scores,
                      const std::map<std::string, std::vector<NamedTensor>>& position) override {
    // Undefined attention: a snapshot of position-only quantities (`relpos import` has no probe).
    TORCH_CHECK(
        !attention.defined() || (attention.dim() == 4 && attention.size(2) == attention.size(3)),
        "snapshot attention must be (L,H,T,T), got ",
        attention.defined() ? attention.sizes() : torch::IntArrayRef{});
    for (const auto& s : position_scores)
      TORCH_CHECK(s.value.defined() && s.value.dim() == 4, "position_scores '", s.name,
                  "' must be (L,H,T,T), got ",
                  s.value.defined() ? s.value.sizes() : torch::IntArrayRef{});
    guarded(fmt::format("write snapshot {}", step), [&] {
      H5::Group snapshots = h5::ensure_group(*file_, sc::kSnapshots);
      remove(sc::snapshot_group(step));
      H5::Group group = snapshots.createGroup(sc::snapshot_name(step));
      if (attention.defined())
        h5::write_tensor(group, sc::kAttention, attention, h5::split_dims(sc::kDimsAttention),
                         h5::Store::Float32);
      H5::Group scores = group.createGroup(sc::kPositionScores);
      for (const auto& s : position_scores)
        h5::write_tensor(scores, s.name, s.value,
                         s.dims.empty() ? h5::split_dims(sc::kDimsAttention) : s.dims,
                         h5::Store::Float32);
      H5::Group tensors = group.createGroup(sc::kPosition);
      for (const auto& [variant, list] : position) {
        h5::check_link_name(variant, "position variant");
        H5::Group v = tensors.createGroup(variant);
        for (const auto& t : list)
          h5::write_tensor(v, t.name, t.value, t.dims, h5::Store::Float32OrInt64);
      }
      h5::write_int_attr(group, sc::kAttrStep, step);  // last: marks the snapshot complete
      file_->flush(H5F_SCOPE_GLOBAL);
    });
  }

  void write_weights(const std::vector<NamedTensor>& parameters, int64_t step) override {
    guarded(fmt::format("write the weights of step {}", step), [&] {
      remove(sc::kWeights);
      H5::Group weights = h5::ensure_group(*file_, sc::kWeights);
      for (const auto& p : parameters)
        h5::write_tensor(weights, p.name, p.value, p.dims, h5::Store::Float32);
      h5::write_int_attr(weights, sc::kAttrStep, step);  // last: marks the weights complete
      file_->flush(H5F_SCOPE_GLOBAL);
    });
  }

  void write_eval(const std::string& group, const std::vector<NamedTensor>& columns,
                  const std::map<std::string, std::string>& attrs) override {
    for (const auto& c : columns) {
      TORCH_CHECK(c.value.defined() && c.value.dim() == 1, "eval column '", group, "/", c.name,
                  "' must be 1-D, got ",
                  c.value.defined() ? c.value.sizes() : torch::IntArrayRef{});
      TORCH_CHECK(c.value.size(0) == columns.front().value.size(0), "eval column '", group, "/",
                  c.name, "' has ", c.value.size(0), " rows, column '", columns.front().name,
                  "' has ", columns.front().value.size(0));
    }
    guarded(fmt::format("write evaluation '{}'", group), [&] {
      h5::check_link_name(group, "evaluation group");
      H5::Group eval = h5::ensure_group(*file_, sc::kEval);
      remove(sc::eval_group(group));
      H5::Group g = eval.createGroup(group);
      for (const auto& c : columns)
        h5::write_tensor(g, c.name, c.value,
                         c.dims.empty() ? h5::split_dims(sc::kDimsEvalRow) : c.dims,
                         h5::Store::AsGiven);
      for (const auto& [key, value] : attrs) h5::write_string_attr(g, key, value);
      file_->flush(H5F_SCOPE_GLOBAL);
    });
  }

  void write_init_from(const InitFromRecord& r) override {
    guarded("write the --init-from record", [&] {
      remove(sc::kInitFrom);
      H5::Group g = h5::ensure_group(*file_, sc::kInitFrom);
      h5::write_string_attr(g, sc::kAttrInitSource, r.source);
      h5::write_strings(g, sc::kInitLoaded, r.loaded, sc::kDimsParameter);
      h5::write_strings(g, sc::kInitInitialised, r.initialised, sc::kDimsParameter);
      h5::write_strings(g, sc::kInitShapeMismatched, r.shape_mismatched, sc::kDimsParameter);
      h5::write_strings(g, sc::kInitUnused, r.unused, sc::kDimsParameter);
      file_->flush(H5F_SCOPE_GLOBAL);
    });
  }

  void write_split(const SplitRecord& r) override {
    for (const auto& p : r.parts)
      TORCH_CHECK(p.ids.size() == p.names.size(), "split '", p.split, "': ", p.ids.size(),
                  " ids and ", p.names.size(), " names");
    guarded("write the data split", [&] {
      remove(sc::kSplit);
      H5::Group g = h5::ensure_group(*file_, sc::kSplit);
      h5::write_int_attr(g, sc::kAttrSplitSeed, r.split_seed);
      h5::write_string_attr(g, sc::kAttrSplitCorpus, r.corpus);
      for (const auto& p : r.parts) {
        h5::check_link_name(p.split, "split");
        H5::Group part = g.createGroup(p.split);
        const auto n = static_cast<int64_t>(p.ids.size());
        const torch::Tensor ids = torch::from_blob(const_cast<int64_t*>(p.ids.data()), {n},
                                                   torch::kInt64);  // (N)
        h5::write_tensor(part, sc::kSplitIds, ids, {sc::kDimsDocument}, h5::Store::Int64);
        h5::write_strings(part, sc::kSplitNames, p.names, sc::kDimsDocument);
      }
      file_->flush(H5F_SCOPE_GLOBAL);
    });
  }

  void set_config(const std::string& config_yaml) override {
    guarded("write the config attribute", [&] {
      H5::Group root = file_->openGroup("/");
      h5::write_string_attr(root, sc::kAttrConfig, config_yaml);
      file_->flush(H5F_SCOPE_GLOBAL);
    });
  }

  void flush() override {
    guarded("flush", [&] { file_->flush(H5F_SCOPE_GLOBAL); });
  }

  // The root attributes of a new file (docs/hdf5-schema.md), then a flush. Throws H5::Exception.
  void write_root_attributes(const RunAttributes& attrs) {
    H5::Group root = file_->openGroup(sc::kRoot);
    h5::write_int_attr(root, sc::kAttrSchemaVersion, sc::kSchemaVersion);
    h5::write_string_attr(root, sc::kAttrConfig, attrs.config_yaml);
    h5::write_string_attr(root, sc::kAttrPositionTypes, attrs.position_types);
    h5::write_int_attr(root, sc::kAttrSeed, attrs.seed);
    h5::write_string_attr(root, sc::kAttrTorchVersion, attrs.torch_version);
    h5::write_string_attr(root, sc::kAttrGitCommit, attrs.git_commit);
    h5::write_string_attr(root, sc::kAttrCreated, attrs.created);
    if (attrs.positional_parameters >= 0)
      h5::write_int_attr(root, sc::kAttrPositionalParameters, attrs.positional_parameters);
    if (!attrs.attention.empty()) h5::write_string_attr(root, sc::kAttrAttention, attrs.attention);
    file_->flush(H5F_SCOPE_GLOBAL);
  }

  // Flushes, then closes the datasets and the file. When the flush fails the file stays open,
  // so that close_torn() can still release it.
  void close() override {
    if (!file_) return;
    try {
      file_->flush(H5F_SCOPE_GLOBAL);
    } catch (const H5::Exception& e) {
      torn_ = true;
      throw RunError(fmt::format("run file '{}': cannot close: {}", path_, h5::error_detail(e)),
                     "is the disk full?");
    }
    release();
  }

  bool torn() const override { return torn_; }

  void close_torn() override {
    if (!file_) return;
    divert_writes_to_memory();
    release();
  }

 private:
  // Removes the object at `path` when present, and flushes at once: HDF5 may hand the freed
  // space to the next allocation, and until a flush the metadata on disk still points there,
  // so new data written into it would show up, after a crash, as the old object's values.
  void remove(const std::string& path) {
    if (!h5::path_exists(*file_, path)) return;
    file_->unlink(path);
    file_->flush(H5F_SCOPE_GLOBAL);
  }

  struct Metric {
    H5::DataSet step, value;
    hsize_t size = 0;
    int64_t last_step = 0;
  };

  template <class F>
  void guarded(const std::string& what, F&& body) {
    if (!file_) throw RunError(fmt::format("run file '{}' is closed; cannot {}", path_, what));
    try {
      body();
    } catch (const H5::Exception& e) {
      torn_ = true;
      throw RunError(fmt::format("run file '{}': cannot {}: {}", path_, what, h5::error_detail(e)),
                     "is the disk full, or was the file removed or changed by another program?");
    }
  }

  // The metric's datasets, created empty on first use; size and last step cached.
  Metric& metric(const std::string& name) {
    auto it = metrics_.find(name);
    if (it != metrics_.end()) return it->second;
    Metric m;
    if (h5::path_exists(*file_, sc::metric_group(name))) {
      m.step = file_->openDataSet(sc::metric_step_path(name));
      m.value = file_->openDataSet(sc::metric_value_path(name));
      const std::vector<int64_t> steps = read_steps(m.step);
      m.size = std::min<hsize_t>(steps.size(), extent(m.value));
      if (m.size > 0) m.last_step = steps[m.size - 1];
    } else {
      H5::Group g = h5::ensure_group(*file_, sc::metric_group(name));
      m.step = create_series(g, sc::kMetricStep, H5::PredType::STD_I64LE);
      m.value = create_series(g, sc::kMetricValue, H5::PredType::IEEE_F64LE);
    }
    return metrics_.emplace(name, m).first->second;
  }

  static H5::DataSet create_series(H5::Group& g, const char* name, const H5::PredType& type) {
    const hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {kMetricChunk};
    H5::DataSpace space(1, dims, maxdims);
    H5::DSetCreatPropList plist;
    plist.setChunk(1, chunk);
    plist.setFletcher32();  // a damaged value is a read error (see h5::write_tensor)
    H5::DataSet ds = g.createDataSet(name, type, space, plist);
    h5::write_string_attr(ds, sc::kAttrDims, sc::kDimsMetric);
    return ds;
  }

  static hsize_t extent(const H5::DataSet& ds) {
    hsize_t n = 0;
    ds.getSpace().getSimpleExtentDims(&n);
    return n;
  }

  static std::vector<int64_t> read_steps(const H5::DataSet& ds) {
    std::vector<int64_t> steps(extent(ds));
    if (!steps.empty()) ds.read(steps.data(), H5::PredType::NATIVE_INT64);
    return steps;
  }

  static void resize(Metric& m, hsize_t keep, const std::vector<int64_t>& steps) {
    const hsize_t size[1] = {keep};
    m.step.extend(size);
    m.value.extend(size);
    m.size = keep;
    m.last_step = keep > 0 ? steps[keep - 1] : 0;
  }

  static void write_point(H5::DataSet& ds, hsize_t index, const void* value,
                          const H5::PredType& mem_type) {
    const hsize_t size[1] = {index + 1}, offset[1] = {index}, count[1] = {1};
    ds.extend(size);
    H5::DataSpace file_space = ds.getSpace();
    file_space.selectHyperslab(H5S_SELECT_SET, count, offset);
    H5::DataSpace mem_space(1, count);
    ds.write(value, mem_type, mem_space, file_space);
  }

  // Points the file's descriptor at a file in memory (memfd), so that what HDF5 writes from now
  // on (the cached metadata a close writes) cannot fail for want of room on the disk, and the
  // torn file on disk is not changed any further. Where that is not possible the file is cut to
  // 0 bytes instead, freeing its space for the close (which another writer may take first).
  void divert_writes_to_memory() {
    void* handle = nullptr;
    const int memory = ::memfd_create("relpos-torn-run-file", MFD_CLOEXEC);
    if (memory >= 0 && H5Fget_vfd_handle(file_->getId(), H5P_DEFAULT, &handle) >= 0 &&
        handle != nullptr && ::dup2(memory, *static_cast<int*>(handle)) >= 0) {
      ::close(memory);
      return;
    }
    if (memory >= 0) ::close(memory);
    h5::clear_error();
    std::error_code ec;
    std::filesystem::resize_file(path_, 0, ec);
  }

  // Closes the metric datasets (they cache nothing: writer_access), then the file, and forgets them
  // even when a close fails: a failure is reported by the write or flush before it.
  void release() {
    if (!file_) return;
    for (auto& [name, m] : metrics_)
      for (H5::DataSet* ds : {&m.step, &m.value}) {
        try {
          ds->close();
        } catch (const H5::Exception&) {
        }
      }
    metrics_.clear();
    try {
      file_->close();
      file_.reset();
    } catch (const H5::Exception&) {
      // HDF5 keeps the id of a file it failed to close, pointing at freed memory: closing it
      // again (as ~H5File would) can crash, so the handle is let go without a second close.
      (void)file_.release();
    }
  }

  std::string path_;
  bool torn_ = false;
  std::unique_ptr<H5::H5File> file_;
  std::map<std::string, Metric> metrics_;
};

// H5Fcreate writes the new file's first blocks, and when that write fails (a full disk) it
// returns no id but leaves the library's metadata cache unreleasable: HDF5 then prints
// "infinite loop closing library" at exit and nothing can close it. So the room for them is
// reserved (and released again by H5Fcreate's truncation) first, failing cleanly where there
// is none. Only a disk that fills in the microseconds between the two can still cause it.
void check_room_for_new_file(const std::string& path) {
  constexpr off_t kFirstBlocks = 64 * 1024;  // superblock, root group, attribute heap: ~2 kB
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int error = fd < 0 ? errno : ::posix_fallocate(fd, 0, kFirstBlocks);
  if (fd >= 0) ::close(fd);
  // A file system that cannot reserve (not supported, ...) is left to H5Fcreate.
  if (fd >= 0 && error != ENOSPC && error != EDQUOT) error = 0;
  if (error != 0)
    throw RunError(fmt::format("cannot create run file '{}': {}", path, std::strerror(error)),
                   "check that the folder exists, is writable and has free space");
}

}  // namespace

std::unique_ptr<SingleRunFileWriter> create_single_run_file(const std::string& path,
                                                            const RunAttributes& attrs) {
  check_room_for_new_file(path);
  std::unique_ptr<H5RunFileWriter> writer;
  try {
    const H5::FileCreatPropList fcpl = h5::writer_creation();
    const H5::FileAccPropList fapl = h5::writer_access();
    writer = std::make_unique<H5RunFileWriter>(path, H5::H5File(path, H5F_ACC_TRUNC, fcpl, fapl));
    writer->write_root_attributes(attrs);
    return writer;
  } catch (const H5::Exception& e) {
    const std::string detail = h5::error_detail(e);
    // A new file that a write left torn (a full disk): nothing of it is worth keeping, and its
    // close must not need room (see close_torn).
    if (writer) writer->close_torn();
    throw RunError(fmt::format("cannot create run file '{}': {}", path, detail),
                   "check that the folder exists, is writable and has free space");
  }
}

std::unique_ptr<SingleRunFileWriter> single_run_file_writer(const std::string& path,
                                                            H5::H5File file) {
  return std::make_unique<H5RunFileWriter>(path, file);
}

}  // namespace relpos

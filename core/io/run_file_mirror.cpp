// RunFileWriter::create and ::open_append: run.h5 and its shadow written in turn, so that a
// process killed at any moment leaves one of them complete (run_file_internal.h).
#include <H5Cpp.h>
#include <fmt/format.h>
#include <torch/version.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "core/io/h5_util.h"
#include "core/io/run_file.h"
#include "core/io/run_file_internal.h"
#include "core/io/schema.h"
#include "core/util/errors.h"
#include "core/util/system.h"

namespace relpos {

namespace {

namespace sc = schema;

// run.h5 and its shadow: every call goes to run.h5, then to the shadow. A clean close removes
// the shadow. After a failed call (a full disk) the file it was writing is torn and the other
// intact: the torn one is closed with close_torn(), so that every HDF5 object is released even
// on a full disk and the library shuts down quietly.
class MirroredRunFileWriter : public RunFileWriter {
 public:
  MirroredRunFileWriter(std::string path, std::unique_ptr<SingleRunFileWriter> primary,
                        std::unique_ptr<SingleRunFileWriter> shadow)
      : path_(std::move(path)), primary_(std::move(primary)), shadow_(std::move(shadow)) {}
  ~MirroredRunFileWriter() override {
    try {
      close();
    } catch (...) {
      // A destructor must not throw; both files were flushed by the last call.
    }
  }

  void append_metric(const std::string& name, int64_t step, double value) override {
    both([&](RunFileWriter& w) { w.append_metric(name, step, value); });
  }
  void truncate_metrics_after(int64_t step) override {
    both([&](RunFileWriter& w) { w.truncate_metrics_after(step); });
  }
  void write_probe(const torch::Tensor& tokens, const torch::Tensor& key_mask) override {
    both([&](RunFileWriter& w) { w.write_probe(tokens, key_mask); });
  }
  void write_snapshot(int64_t step, const torch::Tensor& attention,
                      const std::vector<NamedTensor>& position_scores,
                      const std::map<std::string, std::vector<NamedTensor>>& position) override {
    both([&](RunFileWriter& w) { w.write_snapshot(step, attention, position_scores, position); });
  }
  void write_weights(const std::vector<NamedTensor>& parameters, int64_t step) override {
    both([&](RunFileWriter& w) { w.write_weights(parameters, step); });
  }
  void write_eval(const std::string& group, const std::vector<NamedTensor>& columns,
                  const std::map<std::string, std::string>& attrs) override {
    both([&](RunFileWriter& w) { w.write_eval(group, columns, attrs); });
  }
  void write_init_from(const InitFromRecord& record) override {
    both([&](RunFileWriter& w) { w.write_init_from(record); });
  }
  void write_split(const SplitRecord& record) override {
    both([&](RunFileWriter& w) { w.write_split(record); });
  }
  void set_config(const std::string& config_yaml) override {
    both([&](RunFileWriter& w) { w.set_config(config_yaml); });
  }
  void flush() override {
    both([&](RunFileWriter& w) { w.flush(); });
  }
  void close() override {
    if (!primary_) return;
    auto primary = std::move(primary_);
    auto shadow = std::move(shadow_);
    if (torn_ == Torn::primary) {
      // The marker stays: readers and open_append's repair take the intact shadow.
      primary->close_torn();
      shadow->close();
      return;
    }
    // A torn shadow goes: run.h5 is complete, and open_append makes a new shadow from it.
    if (torn_ == Torn::shadow) shadow->close_torn();
    const bool primary_torn = has_writing_marker(path_);  // by a write that failed
    set_writing_marker(path_);
    try {
      primary->close();
    } catch (...) {
      // Its last flush failed: run.h5 is torn (the marker stays), the shadow intact.
      primary->close_torn();
      shadow->close();
      throw;
    }
    if (!primary_torn) clear_writing_marker(path_);
    shadow->close();
    // After a call that failed before writing (the marker could not be made) run.h5 may be
    // torn and the shadow is the intact copy: keep it for the reader and for open_append's
    // repair.
    if (failed_ && torn_ != Torn::shadow) return;
    std::error_code ec;
    std::filesystem::remove(shadow_path(path_), ec);
  }

 private:
  // Which file a failed call left torn.
  enum class Torn { none, primary, shadow };

  template <class F>
  void both(F&& op) {
    if (!primary_) throw RunError(fmt::format("run file '{}' is closed", path_));
    if (torn_ != Torn::none)
      throw RunError(fmt::format("run file '{}': an earlier write failed", path_));
    // The marker stays when run.h5's write fails or the process dies in it: readers and
    // open_append then take the shadow, which this call has not touched yet.
    try {
      set_writing_marker(path_);
    } catch (...) {
      failed_ = true;
      throw;
    }
    call(op, *primary_, Torn::primary);
    clear_writing_marker(path_);
    call(op, *shadow_, Torn::shadow);
  }

  // `op` on one of the two files; a write that failed inside HDF5 marks that file torn (a
  // refused argument does not).
  template <class F>
  void call(F&& op, SingleRunFileWriter& file, Torn if_failed) {
    try {
      op(file);
    } catch (...) {
      failed_ = true;
      if (file.torn()) torn_ = if_failed;
      throw;
    }
  }

  std::string path_;
  bool failed_ = false;
  Torn torn_ = Torn::none;
  std::unique_ptr<SingleRunFileWriter> primary_, shadow_;
};

}  // namespace

std::unique_ptr<RunFileWriter> RunFileWriter::create(const std::string& path,
                                                     const RunAttributes& attrs) {
  h5::quiet();
  RunAttributes a = attrs;
  if (a.torch_version.empty()) a.torch_version = TORCH_VERSION;
  if (a.created.empty()) a.created = utc_timestamp();
  auto primary = create_single_run_file(path, a);
  auto shadow = create_single_run_file(shadow_path(path), a);
  return std::make_unique<MirroredRunFileWriter>(path, std::move(primary), std::move(shadow));
}

std::unique_ptr<RunFileWriter> RunFileWriter::open_append(const std::string& path) {
  h5::quiet();
  // Repair first: run.h5 from an intact shadow when run.h5 is damaged; then the shadow becomes
  // a fresh copy of run.h5, so the two start equal.
  std::error_code ec;
  const std::string shadow = shadow_path(path);
  try {
    if (has_writing_marker(path) && std::filesystem::is_regular_file(shadow, ec))
      throw DamagedRunFile(fmt::format("run file '{}' was being written when its writer stopped",
                                       path));
    open_intact_run_file(path, /*writable=*/false);
  } catch (const DamagedRunFile&) {
    if (!std::filesystem::is_regular_file(shadow, ec)) throw;
    try {
      open_intact_run_file(shadow, /*writable=*/false);
    } catch (const SchemaError&) {
      throw DamagedRunFile(
          fmt::format("run file '{}' and its shadow '{}' are both damaged", path, shadow),
          "start the run again with --overwrite");
    }
    copy_file_atomically(shadow, path);
  }
  clear_writing_marker(path);
  copy_file_atomically(path, shadow);
  OpenedRunFile opened = open_run_file(path, /*writable=*/true);
  if (opened.version != sc::kSchemaVersion)
    throw SchemaError(
        fmt::format("run file '{}' has schema version {}; this relpos appends only to "
                    "version {}",
                    path, opened.version, sc::kSchemaVersion),
        "start a new run, or resume with the relpos version that wrote the file");
  OpenedRunFile opened_shadow = open_run_file(shadow, /*writable=*/true);
  return std::make_unique<MirroredRunFileWriter>(
      path, single_run_file_writer(path, opened.file),
      single_run_file_writer(shadow, opened_shadow.file));
}

}  // namespace relpos

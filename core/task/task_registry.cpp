#include "core/task/task_registry.h"

#include <stdexcept>

#include <fmt/format.h>

#include "core/data/task.h"
#include "core/util/text_util.h"

namespace relpos {

// One registration function per task file.
void register_mlm(TaskRegistry& r);
void register_clm(TaskRegistry& r);
void register_classify(TaskRegistry& r);
void register_span_qa(TaskRegistry& r);
void register_synthetic(TaskRegistry& r);

namespace {

TaskRegistry build_task_registry() {
  TaskRegistry r;
  register_mlm(r);
  register_clm(r);
  register_classify(r);
  register_span_qa(r);
  register_synthetic(r);
  return r;
}

}  // namespace

std::string MetricInfo::axis_label() const {
  return unit.empty() ? quantity : quantity + " (" + unit + ")";
}

const MetricInfo* TaskInfo::metric(const std::string& name) const {
  for (const auto& m : metrics)
    if (m.name == name) return &m;
  return nullptr;
}

const TaskRegistry& TaskRegistry::get() {
  static const TaskRegistry registry = build_task_registry();
  return registry;
}

void TaskRegistry::add(TaskInfo info) {
  if (find(info.name)) throw std::logic_error("task registered twice: " + info.name);
  if (info.metrics.empty()) throw std::logic_error("task without metrics: " + info.name);
  tasks_.push_back(std::move(info));
}

const TaskInfo* TaskRegistry::find(const std::string& name) const {
  for (const auto& t : tasks_)
    if (t.name == name) return &t;
  return nullptr;
}

const TaskInfo& TaskRegistry::at(const std::string& name, const std::string& path,
                                 const SourceMap* sources) const {
  if (const TaskInfo* t = find(name)) return *t;
  const std::string near = closest_name(name, names());
  config_fail(sources, path, "unknown value", "'" + name + "'",
              "one of " + join_names(names(), " | "), {}, near.empty() ? "" : "'" + near + "'");
}

std::vector<std::string> TaskRegistry::names() const {
  std::vector<std::string> n;
  for (const auto& t : tasks_) n.push_back(t.name);
  return n;
}

const TaskInfo& task_info(const std::string& type) { return TaskRegistry::get().at(type); }

const TaskInfo& pretraining_task(ModelMode mode) {
  const TaskRegistry& r = TaskRegistry::get();
  const TaskInfo* found = nullptr;
  for (const auto& name : r.names()) {
    const TaskInfo& t = *r.find(name);
    if (t.head != HeadKind::Lm || !t.tokenized || !t.fixed_length_rows || t.mode != mode) continue;
    if (found)
      throw std::logic_error("two pre-training tasks for one model mode: " + found->name + ", " +
                             t.name);
    found = &t;
  }
  if (!found) throw std::logic_error("no pre-training task registered for this model mode");
  return *found;
}

const MetricInfo* common_metric(const std::string& name) {
  static const std::vector<MetricInfo> common = {
      {"ppl", "perplexity (nonoverlapping chunks)", "", false},
      {"ppl_sliding", "perplexity (sliding window)", "", false},
      {"loss", "loss", "nats per target", false},
      {"loss_sliding", "loss, sliding window", "nats per target", false},
      {"bits_per_byte", "loss", "bits/byte", false},
      {"bits_per_token", "loss", "bits/token", false},
      {"accuracy", "accuracy", "", true},
      {"seq_accuracy", "sequence accuracy", "", true}};
  for (const auto& m : common)
    if (m.name == name) return &m;
  return nullptr;
}

std::unique_ptr<TaskData> make_task_data(const Config& cfg) {
  return task_info(cfg.task.type).make_data(cfg);
}

// ---- the config layer's task checks (declared in core/config/config.h) ------------------------

std::vector<std::string> known_task_types() { return TaskRegistry::get().names(); }

void validate_task(const Config& c, const SourceMap* src) {
  const TaskInfo& t = TaskRegistry::get().at(c.task.type, "task.type", src);
  const ModelConfig& m = c.model;
  if (t.mode == ModelMode::Causal && !m.causal())
    config_fail(src, "task.type", fmt::format("the {} task needs a causal model", t.name),
                fmt::format("'{}' with model.mode encoder", t.name), "model.mode: decoder");
  if (t.mode == ModelMode::Bidirectional && m.causal())
    config_fail(src, "task.type", "this task needs a bidirectional model",
                fmt::format("'{}' with model.mode decoder", t.name), "model.mode: encoder");
  if (t.validate) t.validate(c, src);
  const int64_t probe = c.snapshots.probe_len;
  if (probe > 0 && probe < t.min_probe_len)
    config_fail(src, "snapshots.probe_len",
                fmt::format("too short for an {} probe ({})", t.name, t.probe),
                std::to_string(probe),
                fmt::format(">= {}, or 0 for task.seq_len", t.min_probe_len));
}

void reject_corpora(const Config& c, const SourceMap* src, const std::vector<std::string>& unfit,
                    const std::string& need) {
  const DataConfig& d = c.data;
  for (const auto& [key, corpus] :
       {std::pair<const char*, const std::string&>{"data.corpus", d.corpus},
        {"data.valid_corpus", d.valid_corpus},
        {"data.test_corpus", d.test_corpus}})
    for (const auto& name : unfit)
      if (corpus == name)
        config_fail(src, key, "corpus does not fit the task",
                    fmt::format("'{}' for task '{}', set at {}", corpus, c.task.type,
                                src ? src->describe("task.type") : "<config>"),
                    need);
}

}  // namespace relpos

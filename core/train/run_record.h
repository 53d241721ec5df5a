// The records a run keeps beside its metrics (docs/training.md): the data split (DIR/split.json
// and run.h5's /split), what `--init-from` loaded (run.h5's /init_from and result.json), and
// result.json itself. Internal to core/train.
#pragma once

#include <optional>
#include <string>

#include "core/config/config.h"
#include "core/data/task.h"
#include "core/io/run_file.h"
#include "core/train/trainer.h"

namespace relpos {

// The split of `data`'s documents, part by part (train, valid, test).
SplitRecord make_split_record(const TaskData& data, const DataConfig& cfg);

// DIR/split.json: split_seed, the fractions and corpus files, and per split its document count,
// ids and names. Written atomically.
void write_split_json(const std::string& dir, const SplitRecord& split, const DataConfig& cfg);

// The /init_from record of a run file, or nullopt when the run did not start from another.
std::optional<InitFromRecord> read_init_from(const RunFileReader& file);

// DIR/result.json, written atomically when the run finished. `init` adds "init_from" (the source
// folder) and "init_from_parameters" (the record's lists).
void write_result_json(const std::string& dir, const TrainResult& r, double total_seconds,
                       const std::optional<InitFromRecord>& init);

}  // namespace relpos

// Length extrapolation: a trained run evaluated at several sequence lengths on held-out text
// (the test split).
//   clm: perplexity over the test stream cut into nonoverlapping chunks of length L, and with a
//        sliding window of length L moved by `stride` tokens where each window scores only its
//        last `stride` tokens (the first window scores all) — the protocol of Press et al. 2022.
//   mlm: masked-token loss and accuracy on test windows of length L.
//   classify, span_qa: the task's metrics (accuracy; EM/F1) on every test example, in rows of
//        L tokens (more of a long input fits at a longer L).
//   synthetic tasks: sequence accuracy per test length (the task's own length range).
// A length is reported as not applicable, with the reason, when it is beyond what the position
// encodings support (learned without clamp), reaches rows of a learned table that training
// never reached (past the longest training length, its own or its --init-from run's; clamped
// or not), is longer than the test text, or when one layer's attention scores at that length
// would not fit in this machine's memory (CPU runs). Synthetic tasks: only a length that is
// not one of the task's test lengths, or whose rows exceed an unclamped learned table, is not
// applicable (the untrained-row check does not apply to their varying row lengths).
#pragma once

#include <string>
#include <vector>

#include "core/train/run_model.h"

namespace relpos {

struct ExtrapolationOptions {
  std::vector<int64_t> lengths;
  int64_t stride = 0;          // sliding window stride (clm); 0 = no sliding-window column
  int64_t max_tokens = 65536;  // per length: clm scored targets per protocol, mlm window tokens
  int64_t batch_size = 8;
};

struct ExtrapolationRow {
  int64_t length = 0;
  bool applicable = true;
  // Why not applicable; for an applicable row, how it was evaluated when that is out of the
  // ordinary (a learned table's last row reused past its length: position.learned.beyond=clamp).
  std::string note;
  std::map<std::string, double> metrics;   // e.g. loss, accuracy, ppl, ppl_sliding
};

// Options from the config's eval section (lengths default to 1x, 2x, 4x task.seq_len; for the
// synthetic tasks to none, which means every test length of the task).
ExtrapolationOptions extrapolation_options(const Config& cfg);

std::vector<ExtrapolationRow> evaluate_lengths(LoadedRun& run, const ExtrapolationOptions& opts);

// Why `batch` sequences of `length` tokens cannot be evaluated in `memory_bytes`, or "" when they
// can: one layer's attention scores and probabilities (2 x batch x heads x length^2 floats) are
// a lower bound on what the evaluation holds at once.
std::string attention_memory_note(int64_t batch, int64_t heads, int64_t length, double memory_bytes);

// Writes /eval/<table> into DIR/run.h5 and DIR/eval_<table>.csv. Beside the metrics, rows carry
// what sets their sampling error: `tokens` / `tokens_sliding` (scored targets: clm, mlm),
// `examples` (classify, span_qa, synthetic tasks) and `loss_sd` / `loss_sliding_sd` (clm: the
// standard deviation of the per-token loss). A second table of the same run (e.g.
// "extrapolation_clamped": `learned` evaluated with position.learned.beyond=clamp) is read by
// the analysis as a row of its own.
void save_extrapolation(const std::string& dir, const LoadedRun& run,
                        const std::vector<ExtrapolationRow>& rows, const ExtrapolationOptions& opts,
                        const std::string& table = "extrapolation");

}  // namespace relpos

#include "core/bench/bench.h"
#include "core/bench/measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "core/position/position_registry.h"
#include "core/util/process.h"

namespace relpos {

const char* const kResultTag = "RELPOS_BENCH_RESULT ";

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct RunRecord {
  double step_ms = kNaN, cpu_ms = kNaN, tokens_per_s = kNaN, peak_mb = kNaN, base_mb = kNaN,
         cuda_peak_mb = -1;
  std::vector<double> paired_log_ratios;  // the child's paired rounds, log(variant / baseline)
  nlohmann::ordered_json child;
  std::string error;
  bool ok = false;
};

std::string last_lines(const std::string& text, size_t n) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

RunRecord run_one(const BenchPlan& plan, const BenchCase& c) {
  std::vector<std::string> args = plan.child_args;
  std::vector<std::string> sets = {"position.type=" + c.variant,
                                   "position.relative_impl=" + relative_impl_of(c.impl),
                                   "task.seq_len=" + std::to_string(c.length)};
  if (!attention_impl_of(c.impl).empty())
    sets.push_back("model.attention_impl=" + attention_impl_of(c.impl));
  for (const std::string& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  if (plan.paired > 0 && c.variant != Registry::get().baseline()) {
    args.push_back("--paired");
    args.push_back(std::to_string(plan.paired));
  }
  // A table whose rows bound the length (VariantInfo::length_key) must cover the benchmarked
  // length.
  std::stringstream parts(c.variant);  // a stack such as learned+shaw
  for (std::string part; std::getline(parts, part, '+');)
    if (const VariantInfo* v = Registry::get().find(part); v && !v->length_key.empty()) {
      args.push_back("--set");
      args.push_back(fmt::format("position.{}.{}={}", part, v->length_key, c.length));
    }
  ChildLimits limits;
  limits.timeout_s = plan.timeout_s;
  limits.max_memory_mb = plan.max_memory_mb;
  const ChildResult r = run_child(plan.program, args, limits, plan.extra_env);
  RunRecord rec;
  const size_t at = r.out.rfind(kResultTag);
  if (!r.ok() || at == std::string::npos) {
    std::string why = r.describe(plan.timeout_s, plan.max_memory_mb);
    const std::string tail = last_lines(r.err, 2);
    rec.error = tail.empty() ? why : why + ": " + tail;
    return rec;
  }
  const size_t begin = at + std::string(kResultTag).size();
  const size_t end = r.out.find('\n', begin);
  try {
    rec.child = nlohmann::ordered_json::parse(r.out.substr(begin, end - begin));
  } catch (const nlohmann::json::exception& e) {
    rec.error = std::string("unreadable child report: ") + e.what();
    return rec;
  }
  rec.ok = true;
  rec.step_ms = rec.child.at("step_ms").get<double>();
  rec.cpu_ms = rec.child.at("cpu_ms").get<double>();
  rec.tokens_per_s = rec.child.at("tokens_per_s").get<double>();
  rec.base_mb = rec.child.at("base_rss_mb").get<double>();
  rec.cuda_peak_mb = rec.child.at("cuda_peak_mb").get<double>();
  // The parent's view, ru_maxrss from wait4(); with --paired, whose second model raises it, the
  // child's high-water mark from before that model was built (for every case, `none` included,
  // so that the ratios compare like with like; without --paired the two agree to the kB at the
  // bench model's sizes).
  rec.peak_mb = plan.paired > 0 ? rec.child.at("peak_rss_mb").get<double>() : r.max_rss_mb;
  if (rec.child.contains("paired")) {
    const auto& p = rec.child.at("paired");
    const auto base = p.at("baseline_ms").get<std::vector<double>>();
    const auto mine = p.at("variant_ms").get<std::vector<double>>();
    for (size_t i = 0; i < std::min(base.size(), mine.size()); ++i)
      rec.paired_log_ratios.push_back(std::log(mine[i] / base[i]));
  }
  rec.child["ru_maxrss_mb"] = r.max_rss_mb;
  rec.child["child_wall_s"] = r.wall_s;
  return rec;
}

std::string key_of(const BenchCase& c) {
  return c.variant + "/" + c.impl + "/" + std::to_string(c.length);
}

}  // namespace

std::string relative_impl_of(const std::string& impl) { return impl.substr(0, impl.find('/')); }

std::string attention_impl_of(const std::string& impl) {
  const size_t slash = impl.find('/');
  return slash == std::string::npos ? std::string() : impl.substr(slash + 1);
}

std::string on_same_attention(const std::string& relative_impl, const std::string& impl) {
  const std::string att = attention_impl_of(impl);
  return att.empty() ? relative_impl : relative_impl + "/" + att;
}

std::vector<std::string> default_direct_variants(const std::vector<std::string>& variants) {
  std::vector<std::string> out;
  for (const auto& v : variants)
    if (const VariantInfo* info = Registry::get().find(v); info && info->direct_path)
      out.push_back(v);
  return out;
}

std::vector<BenchCase> plan_cases(const BenchPlan& plan) {
  std::vector<std::string> variants = plan.variants;
  const std::string baseline = Registry::get().baseline();
  if (std::find(variants.begin(), variants.end(), baseline) == variants.end())
    variants.insert(variants.begin(), baseline);
  std::vector<std::string> suffixes;  // "" or "/eager", "/fused", ...
  for (const auto& a : plan.attention) suffixes.push_back("/" + a);
  if (suffixes.empty()) suffixes.push_back("");
  std::vector<BenchCase> cases;
  for (int64_t T : plan.lengths) {
    for (const auto& v : variants) {
      for (const auto& sfx : suffixes) {
        cases.push_back({v, "fast" + sfx, T});
        if (std::find(plan.direct.begin(), plan.direct.end(), v) != plan.direct.end())
          cases.push_back({v, "direct" + sfx, T});
      }
    }
  }
  return cases;
}

std::vector<CaseSummary> run_bench(
    const BenchPlan& plan,
    const std::function<void(const BenchCase&, int, int, const std::string&)>& progress) {
  const std::vector<BenchCase> cases = plan_cases(plan);
  const int repeats = std::max(1, plan.repeats);
  std::map<std::string, std::vector<RunRecord>> runs;  // key -> one record per repeat
  const int total = static_cast<int>(cases.size()) * repeats;
  int done = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    for (const auto& c : cases) {
      RunRecord rec = run_one(plan, c);
      ++done;
      if (progress) {
        const std::string line =
            rec.ok ? fmt::format("{:.1f} ms/step, peak {:.0f} MB", rec.step_ms, rec.peak_mb)
                   : "FAILED: " + rec.error;
        progress(c, done, total, line);
      }
      runs[key_of(c)].push_back(std::move(rec));
    }
  }

  std::vector<CaseSummary> out;
  const std::string baseline = Registry::get().baseline();
  for (const auto& c : cases) {
    const auto& recs = runs[key_of(c)];
    const auto& none = runs[key_of({baseline, on_same_attention("fast", c.impl), c.length})];
    CaseSummary s;
    s.key = c;
    std::vector<double> step, cpu, tok, peak, base, stepmb, cuda, rt, rp, rs, rc;
    for (size_t r = 0; r < recs.size(); ++r) {
      const RunRecord& x = recs[r];
      if (!x.ok) {
        ++s.failures;
        s.error = x.error;
        continue;
      }
      ++s.runs;
      s.child = x.child;
      step.push_back(x.step_ms);
      cpu.push_back(x.cpu_ms);
      tok.push_back(x.tokens_per_s);
      peak.push_back(x.peak_mb);
      base.push_back(x.base_mb);
      stepmb.push_back(x.peak_mb - x.base_mb);
      cuda.push_back(x.cuda_peak_mb);
      s.paired_log_ratios.insert(s.paired_log_ratios.end(), x.paired_log_ratios.begin(),
                                 x.paired_log_ratios.end());
      const RunRecord& n = none[r];  // the `none` run of the same repeat
      rt.push_back(n.ok ? x.step_ms / n.step_ms : kNaN);
      rp.push_back(n.ok ? x.peak_mb / n.peak_mb : kNaN);
      rs.push_back(n.ok ? (x.peak_mb - x.base_mb) / (n.peak_mb - n.base_mb) : kNaN);
      rc.push_back(n.ok && x.cuda_peak_mb > 0 && n.cuda_peak_mb > 0 ? x.cuda_peak_mb / n.cuda_peak_mb : kNaN);
    }
    if (s.runs > 0) {
      s.step_ms = median(step);
      s.cpu_ms = median(cpu);
      s.tokens_per_s = median(tok);
      s.peak_mb = median(peak);
      s.base_mb = median(base);
      s.step_mb = median(stepmb);
      s.cuda_peak_mb = median(cuda);
      s.time_ratio = median(rt);
      s.peak_ratio = median(rp);
      s.step_mb_ratio = median(rs);
      s.cuda_ratio = median(rc);
    }
    out.push_back(std::move(s));
  }
  return out;
}

double loglog_slope(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 2) return kNaN;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) {
    mx += std::log(x[i]);
    my += std::log(y[i]);
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) {
    const double dx = std::log(x[i]) - mx;
    sxy += dx * (std::log(y[i]) - my);
    sxx += dx * dx;
  }
  return sxx > 0 ? sxy / sxx : kNaN;
}

std::vector<GrowthFit> growth_fits(const std::vector<CaseSummary>& cases) {
  std::vector<GrowthFit> out;
  std::map<std::string, size_t> index;
  std::vector<std::vector<double>> lengths, times, mems;
  for (const auto& c : cases) {
    if (!c.ok()) continue;
    const std::string k = c.key.variant + "/" + c.key.impl;
    if (!index.count(k)) {
      index[k] = out.size();
      out.push_back({c.key.variant, c.key.impl, 0, 0, 0});
      lengths.emplace_back();
      times.emplace_back();
      mems.emplace_back();
    }
    const size_t i = index[k];
    lengths[i].push_back(static_cast<double>(c.key.length));
    times[i].push_back(c.step_ms);
    // On a GPU the host's RSS says little about the model: fit the GPU's peak instead.
    mems[i].push_back(std::max(c.gpu() ? c.cuda_peak_mb : c.step_mb, 1e-3));
  }
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].points = static_cast<int>(lengths[i].size());
    out[i].time_exponent = loglog_slope(lengths[i], times[i]);
    out[i].memory_exponent = loglog_slope(lengths[i], mems[i]);
  }
  return out;
}

}  // namespace relpos

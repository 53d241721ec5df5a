// claims.json: the claims of one experiment with every number decide() needs, so that
// results/CLAIMS.md can decide all experiments' claims again as one family.
#include <fmt/format.h>

#include <algorithm>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/claims_report.h"
#include "analysis/stats.h"
#include "core/util/errors.h"

namespace relpos::analysis {
using Json = nlohmann::json;
namespace {

// JSON has no NaN or infinity: they are written as null and read back as NaN.
Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }
double number(const Json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : kNaN;
}

template <class T>
std::string as_yaml(const T& section) {
  YAML::Emitter out;
  write_value(out, section);
  return out.c_str();
}

template <class T>
T from_yaml(const std::string& text, const std::string& path) {
  T section;
  read_value(YAML::Load(text), path, nullptr, section);
  return section;
}

Json part_json(const ComparisonResult& r) {
  return {{"spec", as_yaml(r.spec)},
          {"label", r.label},
          {"n", r.n},
          {"effect", number(r.effect)},
          {"lo", number(r.lo)},
          {"hi", number(r.hi)},
          {"sd", number(r.sd)},
          {"eval_var", number(r.eval_var)},
          {"eval_noise", r.eval_noise},
          {"t", number(r.t)},
          {"p_two", number(r.p_two)},
          {"p_adjusted", number(r.p_adjusted)},
          {"flip_p", number(r.flip_p)},
          {"cohen_dz", number(r.cohen_dz)},
          {"mde", number(r.mde)},
          {"seeds_needed", r.seeds_needed},
          {"r_plain", number(r.r_plain)},
          {"measured_gate", r.measured_gate},
          {"gate", r.gate},
          {"note", r.note},
          {"why", r.why},
          {"verdict", verdict_name(r.verdict)}};
}

ComparisonResult part_from_json(const Json& j, const std::string& where) {
  ComparisonResult r;
  r.spec = from_yaml<ComparisonConfig>(j.value("spec", std::string()), where + ".spec");
  r.label = j.value("label", "");
  r.n = j.value("n", size_t{0});
  r.effect = number(j, "effect"), r.lo = number(j, "lo"), r.hi = number(j, "hi");
  r.sd = number(j, "sd"), r.eval_var = number(j, "eval_var");
  r.eval_noise = j.value("eval_noise", false);
  r.t = number(j, "t"), r.p_two = number(j, "p_two"), r.p_adjusted = number(j, "p_adjusted");
  r.flip_p = number(j, "flip_p"), r.cohen_dz = number(j, "cohen_dz"), r.mde = number(j, "mde");
  r.seeds_needed = j.value("seeds_needed", size_t{0});
  r.r_plain = number(j, "r_plain");
  r.measured_gate = j.value("measured_gate", "");
  r.gate = j.value("gate", "");
  r.note = j.value("note", "");
  r.why = j.value("why", "");
  r.verdict = verdict_from_name(j.value("verdict", ""));
  return r;
}

}  // namespace

std::string claims_json_text(const std::string& experiment, const std::vector<ClaimResult>& claims) {
  Json j{{"format", kClaimsRecordFormat},
         {"experiment", experiment},
         {"alpha", kFamilyAlpha},
         {"claims", Json::array()}};
  for (const auto& c : claims) {
    Json parts = Json::array();
    for (const auto& p : c.parts) parts.push_back(part_json(p));
    Json prov = Json::array();
    for (const auto& p : c.provenance) prov.push_back(as_yaml(p));
    j["claims"].push_back({{"id", c.claim.id},
                           {"claim", as_yaml(c.claim)},
                           {"result", claim_summary(c)},
                           {"verdict", verdict_name(c.verdict)},
                           {"gate", c.gate},
                           {"note", c.note},
                           {"provenance", prov},
                           {"parts", parts}});
  }
  return j.dump(1) + "\n";
}

std::vector<ClaimResult> read_claims(const std::string& path) {
  std::ifstream in(path);
  const Json j = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("claims") || !j["claims"].is_array())
    throw SchemaError(fmt::format("{}: not a claims record (expected an object with a \"claims\" "
                                  "array, as `relpos report` writes)",
                                  path));
  // A record of the claims engine before the verdict rules (no claim configs to re-decide from):
  // its verdicts cannot join the family; the index lists the experiment as not re-judged.
  const bool current = j.contains("alpha") && std::all_of(j["claims"].begin(), j["claims"].end(),
                                                          [](const Json& c) {
                                                            return c.is_object() && c.contains("claim");
                                                          });
  if (!current)
    throw EarlierClaimsRecord(fmt::format(
        "{}: written by an earlier relpos (claims without their configs, before the verdict "
        "rules of docs/analysis.md, \"Claims and verdicts\")",
        path));
  std::vector<ClaimResult> out;
  try {
    for (size_t i = 0; i < j["claims"].size(); ++i) {
      const Json& c = j["claims"][i];
      const std::string where = fmt::format("{}: claims[{}]", path, i);
      ClaimResult r;
      r.experiment = j.value("experiment", "");
      r.claim = from_yaml<ClaimConfig>(c.value("claim", std::string()), where);
      r.verdict = verdict_from_name(c.value("verdict", ""));
      r.gate = c.value("gate", "");
      r.note = c.value("note", "");
      for (const auto& p : c.value("provenance", Json::array()))
        r.provenance.push_back(from_yaml<ProvenanceConfig>(p.get<std::string>(), where));
      for (const auto& p : c.value("parts", Json::array())) r.parts.push_back(part_from_json(p, where));
      out.push_back(std::move(r));
    }
  } catch (const Json::exception& e) {
    throw SchemaError(fmt::format("{}: a claim of an unexpected form ({})", path, e.what()));
  } catch (const ConfigError& e) {
    throw SchemaError(fmt::format("{}: a claim's config does not read back ({})", path, e.what()));
  } catch (const YAML::Exception& e) {
    throw SchemaError(fmt::format("{}: a claim's config does not read back ({})", path, e.what()));
  }
  return out;
}

}  // namespace relpos::analysis

// The rules of the `claims:` and `provenance:` blocks (core/config/claims_config.h): each claim
// is judgeable as written — ids unique, the comparisons complete for their test, the regime
// checks it requires declared — so that a typo fails when the config is read, not after hours
// of training.
#include <fmt/format.h>

#include <map>
#include <set>

#include "core/config/config.h"

namespace relpos {
namespace {

void check_assignments(const std::vector<std::string>& items, const std::string& path,
                       const SourceMap* src, const char* what) {
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].find('=') == std::string::npos || items[i].front() == '=')
      config_fail(src, fmt::format("{}[{}]", path, i), "not a dotted.key=value setting",
                  "'" + items[i] + "'", what);
}

void validate_comparison(const ComparisonConfig& c, const std::string& path,
                         const SourceMap* src) {
  if (c.key.empty())
    config_fail(src, path + ".key", "missing", "nothing", "the record value compared");
  if (c.test == "correlation") {
    if (c.y_key.empty())
      config_fail(src, path + ".y_key", "a correlation needs its second value", "nothing",
                  "a record value, e.g. valid_ppl");
    if (c.over.empty())
      config_fail(src, path + ".over", "a correlation is judged within groups", "nothing",
                  "the groups, e.g. [learned]");
  } else if (c.a.empty() || c.b.empty()) {
    config_fail(src, path + (c.a.empty() ? ".a" : ".b"), "missing", "nothing",
                "a group (position types, e.g. learned+tisa)");
  }
  if (c.test == "ratio" && !(c.margin > 0))
    config_fail(src, path + ".margin", "a ratio claim needs its factor", fmt::format("{}", c.margin),
                "> 0, e.g. 100 for two orders of magnitude");
  if (c.margin < 0)
    config_fail(src, path + ".margin", "out of range", fmt::format("{}", c.margin), ">= 0");
  if (c.target_effect < 0)
    config_fail(src, path + ".target_effect", "out of range", fmt::format("{}", c.target_effect),
                ">= 0 (0: none given), in the metric's unit");
  check_assignments(c.where, path + ".where", src, "e.g. train.steps=800");
}

void validate_claim(const ClaimConfig& c, const std::string& path, const SourceMap* src,
                    const std::map<std::string, std::string>& roles) {
  for (const auto& [key, value] : std::vector<std::pair<const char*, const std::string*>>{
           {"id", &c.id}, {"quote", &c.quote}, {"source", &c.source}, {"metric", &c.metric}})
    if (value->empty()) config_fail(src, path + "." + key, "missing", "nothing", "text");
  if (c.comparisons.empty())
    config_fail(src, path + ".comparisons", "a claim needs at least one comparison", "none",
                "a list of {test, a, b, key, ...}");
  if (!c.bounds.empty() && (c.bounds.size() != 2 || !(c.bounds[0] < c.bounds[1])))
    config_fail(src, path + ".bounds", "not a range", fmt::format("{} values", c.bounds.size()),
                "[floor, ceiling] with floor < ceiling");
  for (size_t i = 0; i < c.requires_ids.size(); ++i) {
    const auto it = roles.find(c.requires_ids[i]);
    if (it == roles.end() || it->second != "regime")
      config_fail(src, fmt::format("{}.requires[{}]", path, i),
                  it == roles.end() ? "no claim has this id" : "not a regime check",
                  "'" + c.requires_ids[i] + "'", "the id of a claim with role: regime");
  }
  check_assignments(c.paper_size, path + ".paper_size", src, "e.g. model.width=768");
  for (size_t i = 0; i < c.comparisons.size(); ++i)
    validate_comparison(c.comparisons[i], fmt::format("{}.comparisons[{}]", path, i), src);
}

}  // namespace

void validate_claims(const Config& c, const SourceMap* src) {
  std::map<std::string, std::string> roles;  // id -> role
  for (size_t i = 0; i < c.claims.size(); ++i) {
    const std::string& id = c.claims[i].id;
    if (!id.empty() && !roles.emplace(id, c.claims[i].role).second)
      config_fail(src, fmt::format("claims[{}].id", i), "two claims have this id", "'" + id + "'",
                  "unique ids");
  }
  for (size_t i = 0; i < c.claims.size(); ++i)
    validate_claim(c.claims[i], fmt::format("claims[{}]", i), src, roles);
  for (size_t i = 0; i < c.provenance.size(); ++i) {
    const auto& p = c.provenance[i];
    const std::string path = fmt::format("provenance[{}]", i);
    if (p.change.empty()) config_fail(src, path + ".change", "missing", "nothing", "text");
    for (size_t k = 0; k < p.claims.size(); ++k)
      if (!roles.count(p.claims[k]))
        config_fail(src, fmt::format("{}.claims[{}]", path, k), "no claim has this id",
                    "'" + p.claims[k] + "'", "the id of a claim in this config");
  }
}

}  // namespace relpos

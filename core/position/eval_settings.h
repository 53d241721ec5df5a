#pragma once
// Which `key=value` overrides are evaluation settings (eval_settings() of position_registry.h): the keys
// `relpos eval --set` takes, and the ones an experiment passes on to its length evaluation.
#include <string>

namespace relpos {

// True when the key of `set` ("key=value") is one of eval_settings() or below one (eval.stride).
bool is_eval_setting(const std::string& set);

}  // namespace relpos

// What rope and xpos share: the rules of a rotary width and base (both rotate channel pairs of
// q and k by position-dependent angles).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <string>

#include "core/config/config.h"
#include "core/position/position_registry.h"

namespace relpos {

// rotary_dim: 0 (= the head width) or an even number up to it; the head width even when 0;
// base > 1.
inline void validate_rotary(int64_t rotary_dim, double base, const Config& cfg,
                            const ParamCheck& c) {
  const int64_t d = cfg.model.head_dim();
  if (rotary_dim < 0 || rotary_dim % 2 != 0 || rotary_dim > d)
    c.fail("rotary_dim", "rotary width must be even and at most the head width",
           std::to_string(rotary_dim), fmt::format("0 (= d) or an even number <= {}", d));
  if (rotary_dim == 0 && d % 2 != 0)
    c.fail("rotary_dim", "the head width is odd, so not every channel can be paired",
           fmt::format("head width {}", d), "an even rotary_dim < head width");
  if (!(base > 1.0)) c.fail("base", "out of range", std::to_string(base), "> 1");
}

}  // namespace relpos

// kerple_log — Chi, Fan, Ramadge & Rudnicky 2022 (KERPLE), the logarithmic kernel.
// Formula: e_ij += -a_h·log(1 + b_h·|r|), r = j - i, a_h, b_h > 0 learned per head and layer.
// Hook: score term (3), via kerple.cpp (positivity, init and export there).
// Parameters per layer: 2H. Params: none.
// Encoder form: the same (the kernel is symmetric in r). Beyond the training length: the bias
// keeps decreasing as log|r|, slower than ALiBi's linear penalty.
#include "core/position/position_registry.h"

namespace relpos {
void register_kerple_kernel(Registry& r, bool power);
void register_kerple_log(Registry& r) { register_kerple_kernel(r, /*power=*/false); }
}  // namespace relpos

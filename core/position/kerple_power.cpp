// kerple_power — Chi, Fan, Ramadge & Rudnicky 2022 (KERPLE), the power kernel.
// Formula: e_ij += -a_h·|r|^{b_h}, r = j - i, a_h > 0 and 0 < b_h < 2 learned per head and layer.
// Hook: score term (3), via kerple.cpp (positivity, init and export there).
// Parameters per layer: 2H. Params: none.
// Encoder form: the same (the kernel is symmetric in r). Beyond the training length: the bias
// keeps decreasing as |r|^b (b = 1 is ALiBi's linear penalty with a learned slope).
#include "core/position/position_registry.h"

namespace relpos {
void register_kerple_kernel(Registry& r, bool power);
void register_kerple_power(Registry& r) { register_kerple_kernel(r, /*power=*/true); }
}  // namespace relpos

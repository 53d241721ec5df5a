// Moved to core/util/text_util.h (the config layer reads files with it too); this header keeps
// code written against the old path building. Include core/util/text_util.h.
#pragma once

#include "core/util/text_util.h"

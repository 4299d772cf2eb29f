// SPDX-License-Identifier: Apache-2.0
// A transfer progress bar on stderr, drawn only when stderr is a terminal.
#pragma once

#include <cstdint>

#include "gcompute/client/client.hpp"

namespace gcompute::cli {

/// A progress callback drawing a bar on stderr for transfers of at least `min_bytes` when
/// stderr is a terminal; otherwise an empty callback.
client::ProgressCallback make_progress_bar(uint64_t min_bytes = 4 * client::kMiB);

}  // namespace gcompute::cli

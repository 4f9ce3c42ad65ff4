#pragma once
/// The layer modes of `csgi serve` built from the middleware set: `--static DIR`, `--bundle DIR` and
/// `--health` and `--metrics`.
/// Rows for them are in modes.cpp; this file only builds the apps.
#include "csgi/adapters/cli/modes.hpp"

namespace csgi::cli {

/// `--static DIR`: files from DIR in front of `inner` (a 404/405 from the files falls through to it);
/// alone, DIR is served with directory listings.
App make_static_layer(const ModeArgs& args, App inner);

/// `--bundle DIR`: JavaScript module bundles of the CommonJS modules under DIR at /bundle (the loader at
/// /bundle/require.js), in front of `inner`; alone, the bundler answers every path.
App make_bundle_layer(const ModeArgs& args, App inner);

/// `--health`: /readyz (503 from the moment a graceful stop begins) and /livez answered in front of
/// `inner`; alone, every other path is 404.
App make_health_layer(const ModeArgs& args, App inner);

/// `--metrics`: request counters in the Prometheus text format at /metrics (loopback clients only), in
/// front of `inner`; alone, every other path is 404.
App make_metrics_layer(const ModeArgs& args, App inner);

}  // namespace csgi::cli

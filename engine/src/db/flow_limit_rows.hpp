#pragma once
// Internal: the limits and their deferral counts as the runner, the API and stats read them (one query,
// one reader each).
#include <libpq-fe.h>

#include <optional>
#include <vector>

#include "prescient/flow_limits.hpp"

namespace prescient::db {

std::vector<FlowLimit> read_flow_limits(PGconn* conn);
// Deferrals per limit and key value: all, by limit and key value; or the `most` deferred, most first.
std::vector<FlowFigure> read_flow_figures(PGconn* conn, std::optional<int> most = std::nullopt);

}  // namespace prescient::db

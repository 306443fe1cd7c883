#pragma once
// Internal: the limits as the runner and the API read them (one query, one reader).
#include <libpq-fe.h>

#include <vector>

#include "prescient/flow_limits.hpp"

namespace prescient::db {

std::vector<FlowLimit> read_flow_limits(PGconn* conn);

}  // namespace prescient::db

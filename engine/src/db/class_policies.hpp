#pragma once
// Internal: the policies set in the class registry (prescient.job_class, sql/0033), as the runner reads them
// once a slot. A class's row sets only what is not NULL; max_checks 0 there means "no limit".
#include <libpq-fe.h>

#include <map>
#include <string>

#include "prescient/job.hpp"

namespace prescient::db {

// The classes whose row sets any policy field, by name.
std::map<std::string, JobPolicy> read_class_policies(PGconn* conn);

}  // namespace prescient::db

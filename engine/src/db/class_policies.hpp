#pragma once
// Internal: the policies set in the class registry (prescient.job_class, read by prescient/job_classes.hpp),
// as the runner takes them once a slot. A row sets only what is not NULL; max_checks 0 there means "no limit".
#include <map>
#include <string>

#include "prescient/job.hpp"

namespace soci {
class session;
}

namespace prescient::db {

// The classes whose row sets any policy field, by name.
std::map<std::string, JobPolicy> read_class_policies(soci::session& db);

}  // namespace prescient::db

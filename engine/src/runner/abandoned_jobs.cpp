#include "runner/abandoned_jobs.hpp"

#include "prescient/slot_runner.hpp"

namespace prescient::runner {

AbandonedJobs& AbandonedJobs::process() {
  static AbandonedJobs* const tracker = new AbandonedJobs;  // leaked on purpose: see the header
  return *tracker;
}

void AbandonedJobs::add(const std::string& job) {
  const std::lock_guard lock(mutex_);
  ++running_[job];
}

void AbandonedJobs::remove(const std::string& job) {
  const std::lock_guard lock(mutex_);
  if (const auto it = running_.find(job); it != running_.end() && --it->second <= 0) running_.erase(it);
}

int AbandonedJobs::running(const std::string& job) const {
  const std::lock_guard lock(mutex_);
  const auto it = running_.find(job);
  return it == running_.end() ? 0 : it->second;
}

int AbandonedJobs::total() const {
  const std::lock_guard lock(mutex_);
  int sum = 0;
  for (const auto& [job, n] : running_) sum += n;
  return sum;
}

std::vector<std::string> AbandonedJobs::at_cap(int cap) const {
  const std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [job, n] : running_) {
    if (n >= cap) out.push_back(job);
  }
  return out;
}

}  // namespace prescient::runner

namespace prescient {

int abandoned_jobs_running() { return runner::AbandonedJobs::process().total(); }

}  // namespace prescient

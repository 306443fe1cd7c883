#pragma once
// Internal: jobs whose executor thread was abandoned (they did not return within their timeout plus the
// grace) and still run, counted by class across the process. A thread cannot be killed safely, so each
// keeps its stack, its job instance and its job session until the job returns; runners cap them per
// class (RunnerOptions::max_abandoned_per_class) and a process that exits with some still running must
// not run its static destructors under them (prescient::abandoned_jobs_running()).
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace prescient::runner {

class AbandonedJobs {
 public:
  // The process's one tracker; never destroyed, so a thread that returns late can still report it.
  static AbandonedJobs& process();

  void add(const std::string& job);     // a thread was abandoned inside a job of this class
  void remove(const std::string& job);  // that job returned at last; its thread ends
  int running(const std::string& job) const;
  int total() const;
  // The classes with at least `cap` abandoned jobs still running, sorted.
  std::vector<std::string> at_cap(int cap) const;

 private:
  AbandonedJobs() = default;
  mutable std::mutex mutex_;
  std::map<std::string, int> running_;
};

}  // namespace prescient::runner

#include "command.hpp"

namespace prescient::cli {

const std::vector<Command>& all_commands() {
  static const std::vector<Command> commands{
      migrate_command(),
      settings_command(),
      schedule_command(),
      cancel_command(),
      reschedule_command(),
      list_command(),
      show_command(),
      history_command(),
      run_slot_command(),
      sweep_command(),
      daemon_command(),
      retry_command(),
      jobs_command(),
      limits_command(),
      calendar_command(),
      cron_command(),
      events_command(),
      purge_command(),
      stats_command(),
      doctor_command(),
      web_command(),
      config_command(),
  };
  return commands;
}

}  // namespace prescient::cli

#include "web_pages.hpp"

#include <stdexcept>

namespace prescient::web {

std::span<const Page> web_pages() {
  static constexpr Page all[] = {
      {"overview", "/", "Overview", true},
      {"checks", "/checks", "Checks", true},
      {"check", R"(/checks/\d+)", "A check", false},
      {"dead-letters", "/dead-letters", "Dead letters", true},
      {"schedules", "/schedules", "Schedules", true},
      {"schedule", "/schedules/.+", "A schedule", false},
      {"limits", "/limits", "Limits", true},
      {"jobs", "/jobs", "Jobs", true},
      {"calendars", "/calendars", "Calendars", true},
      {"calendar", "/calendars/.+", "A calendar", false},
      {"health", "/health", "Health", true},
      {"events", "/events", "Events", true},
  };
  return all;
}

namespace {

void fill(std::string& document, std::string_view marker, std::string_view text) {
  const auto at = document.find(marker);
  if (at == std::string::npos) throw std::logic_error("index.html has no " + std::string(marker));
  document.replace(at, marker.size(), text);
}

}  // namespace

std::string page_document(std::string_view index_html, const Page& page, std::string_view csrf_token) {
  // Names, titles and addresses are this file's constants, held to plain characters by its test: nothing
  // here needs escaping.
  std::string navigation;
  for (const Page& linked : web_pages()) {
    if (!linked.in_navigation) continue;
    navigation += "\n    <a href=\"" + std::string(linked.address) + "\">" + std::string(linked.title) + "</a>";
  }
  std::string document(index_html);
  fill(document, "{{navigation}}", navigation + "\n  ");
  fill(document, "{{page}}", page.name);
  fill(document, "{{csrf_token}}", csrf_token);
  return document;
}

}  // namespace prescient::web

// The dashboard's pages have one home, web_pages() (engine/web/web_pages.cpp): the server answers their
// addresses and draws the navigation from it. The two other places that name the pages are compared with it
// here, and a difference names the place to change: the script's table of what draws each page
// (engine/web/assets/app.js, `pages`) and docs/web.md's table of pages.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "web/web_pages.hpp"

using prescient::web::Page;
using prescient::web::page_document;
using prescient::web::web_pages;

namespace {

using Names = std::set<std::string>;

std::string source_file(const std::string& path) {
  std::ifstream in(std::string(PRESCIENT_SOURCE_DIR) + "/" + path);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The keys of app.js's `const pages = { ... };`, one a line.
Names drawn_pages(const std::string& app_js) {
  Names out;
  const auto begin = app_js.find("\nconst pages = {\n");
  if (begin == std::string::npos) return out;
  std::istringstream lines(app_js.substr(begin + 1, app_js.find("\n};", begin) - begin));
  const std::regex key(R"(\s+'?([a-z-]+)'?:.*)");
  std::smatch match;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, match, key)) out.insert(match[1].str());
  }
  return out;
}

// The first cells of docs/web.md's table under "## Pages".
Names documented_pages(const std::string& web_md) {
  Names out;
  std::istringstream lines(web_md);
  bool in_pages = false;
  const std::regex row(R"(\| ([^|]+?) \|.*)");
  std::smatch match;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("#", 0) == 0) in_pages = line == "## Pages";
    if (in_pages && std::regex_match(line, match, row) && match[1] != "page") out.insert(match[1].str());
  }
  return out;
}

// What each place names against the list: one line per page a place lacks or has beyond it.
std::vector<std::string> disagreements(std::span<const Page> pages, const std::string& app_js,
                                       const std::string& web_md) {
  Names names, titles;
  for (const Page& page : pages) {
    names.emplace(page.name);
    titles.emplace(page.title);
  }
  const struct Place {
    std::string where, what;
    Names home, names;
  } places[] = {
      {"engine/web/assets/app.js (`pages`, what draws each page)", "name", names, drawn_pages(app_js)},
      {"docs/web.md (the table under \"## Pages\")", "title", titles, documented_pages(web_md)},
  };
  std::vector<std::string> out;
  for (const Place& place : places) {
    for (const std::string& name : place.home) {
      if (!place.names.contains(name)) out.push_back(place.where + " lacks the page " + place.what + " " + name);
    }
    for (const std::string& name : place.names) {
      if (!place.home.contains(name)) {
        out.push_back(place.where + " has the page " + place.what + " " + name +
                      ", which the list of pages (engine/web/web_pages.cpp) does not: add it there, or take it out");
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("dashboard pages: the script and the docs name the pages web_pages() lists") {
  CHECK(disagreements(web_pages(), source_file("engine/web/assets/app.js"), source_file("docs/web.md")) ==
        std::vector<std::string>{});
}

TEST_CASE("dashboard pages: a page listed in one place only is named in every other place to change") {
  const std::string app_js = source_file("engine/web/assets/app.js");
  const std::string web_md = source_file("docs/web.md");
  // In the list alone: the script and the docs each lack it.
  std::vector<Page> listed(web_pages().begin(), web_pages().end());
  listed.push_back({"queues", "/queues", "Queues", true});
  CHECK(disagreements(listed, app_js, web_md) ==
        std::vector<std::string>{"engine/web/assets/app.js (`pages`, what draws each page) lacks the page name queues",
                                 "docs/web.md (the table under \"## Pages\") lacks the page title Queues"});
  // Drawn by the script alone, or documented alone: the list is named.
  std::string drawn = app_js;
  drawn.replace(drawn.find("  overview: "), 0, "  queues: () => queues(),\n");
  CHECK(disagreements(web_pages(), drawn, web_md) ==
        std::vector<std::string>{"engine/web/assets/app.js (`pages`, what draws each page) has the page name queues, "
                                 "which the list of pages (engine/web/web_pages.cpp) does not: add it there, or take "
                                 "it out"});
  std::string documented = web_md;
  documented.replace(documented.find("| Checks |"), 0, "| Queues | `/queues` | each queue | — |\n");
  CHECK(disagreements(web_pages(), app_js, documented) ==
        std::vector<std::string>{"docs/web.md (the table under \"## Pages\") has the page title Queues, which the list "
                                 "of pages (engine/web/web_pages.cpp) does not: add it there, or take it out"});
}

TEST_CASE("dashboard pages: each page's document names it and links every page of the navigation") {
  const std::regex plain_name("[a-z-]+"), plain_title("[A-Za-z ]+"), plain_path("/[a-z-]*");
  const std::string index_html = "<meta content=\"{{csrf_token}}\"><body data-page=\"{{page}}\"><nav>{{navigation}}</nav>";
  for (const Page& page : web_pages()) {
    // What page_document writes unescaped is plain.
    CHECK(std::regex_match(std::string(page.name), plain_name));
    CHECK(std::regex_match(std::string(page.title), plain_title));
    if (page.in_navigation) CHECK(std::regex_match(std::string(page.address), plain_path));
    const std::string document = page_document(index_html, page, "t0ken");
    CHECK(document.find("<body data-page=\"" + std::string(page.name) + "\">") != std::string::npos);
    CHECK(document.find("content=\"t0ken\"") != std::string::npos);
    for (const Page& linked : web_pages()) {
      const std::string link = "<a href=\"" + std::string(linked.address) + "\">" + std::string(linked.title) + "</a>";
      CHECK((document.find(link) != std::string::npos) == linked.in_navigation);
    }
  }
  // Each address answers what it should, and only that (the server matches the whole path).
  const auto answers = [](const std::string& path) {
    std::vector<std::string> names;
    for (const Page& page : web_pages()) {
      if (std::regex_match(path, std::regex(std::string(page.address)))) names.emplace_back(page.name);
    }
    return names;
  };
  CHECK(answers("/") == std::vector<std::string>{"overview"});
  CHECK(answers("/checks/12") == std::vector<std::string>{"check"});
  CHECK(answers("/checks/x") == std::vector<std::string>{});
  CHECK(answers("/schedules/nightly%2Fa") == std::vector<std::string>{"schedule"});
  CHECK(answers("/nowhere") == std::vector<std::string>{});
}

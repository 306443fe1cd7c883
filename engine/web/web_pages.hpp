#pragma once
// The dashboard's pages: the one list of them (web_pages.cpp). The server answers each page's address with
// the one document (assets/index.html), its navigation drawn from this list and its name on <body>; the
// script draws a page by that name (assets/app.js, `pages`); docs/web.md's table of pages names each by its
// title. tests/unit/web_pages_test.cpp compares the script's and the docs' lists with this one.
#include <span>
#include <string>
#include <string_view>

namespace prescient::web {

struct Page {
  std::string_view name;     // the script's name for it, on <body data-page="...">
  std::string_view address;  // the paths it answers: a regular expression the whole path matches
  std::string_view title;    // its row in docs/web.md's table, and its link's text if in_navigation
  bool in_navigation;        // a link in the header; its address is then a plain path
};

std::span<const Page> web_pages();

// The document of `page`: index.html with the navigation, the page's name and the CSRF token filled in.
std::string page_document(std::string_view index_html, const Page& page, std::string_view csrf_token);

}  // namespace prescient::web

#pragma once
// The dashboard's files (engine/web/assets/), compiled in by cmake/EmbedAssets.cmake: the binary serves
// them with nothing to find on disk.
#include <span>
#include <string_view>

namespace prescient::web {

struct Asset {
  std::string_view path;          // "/index.html", "/app.js", ...
  std::string_view content_type;  // from the file's extension
  std::string_view text;
};

std::span<const Asset> web_assets();

}  // namespace prescient::web

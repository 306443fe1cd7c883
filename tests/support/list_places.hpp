#pragma once
// One list per concept (docs/design.md, "Rules and their homes"): each place that must name what the list's
// home names is compared with it, and each difference is one line naming the place to change.
#include <set>
#include <string>
#include <vector>

namespace prescient::testing {

struct ListPlace {
  std::string where;  // the place to change, as a reader looks for it
  std::set<std::string> names;
  bool exact = true;     // false: it may name more (a struct's other members, a comment's other words)
  bool complete = true;  // false: it may name fewer (the ones it refers to), but nothing the home lacks
};

// "WHERE lacks NAME" for each name of `home` a complete place lacks, and "WHERE has NAME, which HOME_NAME
// does not" for each name an exact place has beyond it; in the places' order.
inline std::vector<std::string> list_disagreements(const std::set<std::string>& home, const std::string& home_name,
                                                   const std::vector<ListPlace>& places) {
  std::vector<std::string> out;
  for (const ListPlace& place : places) {
    for (const std::string& name : home) {
      if (place.complete && !place.names.contains(name)) out.push_back(place.where + " lacks " + name);
    }
    if (!place.exact) continue;
    for (const std::string& name : place.names) {
      if (!home.contains(name)) out.push_back(place.where + " has " + name + ", which " + home_name + " does not");
    }
  }
  return out;
}

}  // namespace prescient::testing

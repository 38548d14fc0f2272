// Which rule answers a request descriptor (internal): envoyproxy/ratelimit's matching, level by level.
#pragma once

#include <string_view>
#include <utility>
#include <vector>

#include "config.hpp"

namespace ratewarden::server {

using Entries = std::vector<std::pair<std::string_view, std::string_view>>;  // (key, value), in request order

// The node the descriptor's entries lead to, or null. At each level, the child of the entry's key whose value is the
// entry's, else the first (in file order) whose wildcard value matches it, else the one of the key with no value.
// The descriptor matches at depth entries.size() only: a rule is never inherited from a parent, and entries past a
// leaf match nothing.
const Node* match(const Domain& domain, const Entries& entries);

// `pattern`'s '*'s each match any run of characters (none included), the rest itself.
bool wildcard_match(std::string_view pattern, std::string_view text);

}  // namespace ratewarden::server

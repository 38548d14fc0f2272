#include "matcher.hpp"

namespace ratewarden::server {
namespace {

const Node* child(const std::vector<Node>& nodes, std::string_view key, std::string_view value) {
  for (const Node& n : nodes)
    if (n.key == key && n.value && !n.wildcard && *n.value == value) return &n;
  for (const Node& n : nodes)
    if (n.key == key && n.wildcard && wildcard_match(*n.value, value)) return &n;
  for (const Node& n : nodes)
    if (n.key == key && !n.value) return &n;
  return nullptr;
}

}  // namespace

bool wildcard_match(std::string_view pattern, std::string_view text) {
  size_t star = pattern.find('*');
  if (star == std::string_view::npos) return pattern == text;
  // The part before the first '*' is a prefix, the part after the last a suffix, the ones between found in order.
  if (text.substr(0, star) != pattern.substr(0, star)) return false;
  const size_t last = pattern.rfind('*');
  const std::string_view suffix = pattern.substr(last + 1);
  if (text.size() < star + suffix.size() || text.substr(text.size() - suffix.size()) != suffix) return false;
  std::string_view middle = text.substr(star, text.size() - star - suffix.size());
  while (star < last) {
    const size_t next = pattern.find('*', star + 1);
    const std::string_view part = pattern.substr(star + 1, next - star - 1);
    const size_t at = middle.find(part);
    if (at == std::string_view::npos) return false;
    middle.remove_prefix(at + part.size());
    star = next;
  }
  return true;
}

const Node* match(const Domain& domain, const Entries& entries) {
  const std::vector<Node>* level = &domain.descriptors;
  const Node* node = nullptr;
  for (const auto& [key, value] : entries) {
    node = child(*level, key, value);
    if (node == nullptr) return nullptr;
    level = &node->children;
  }
  return node;
}

}  // namespace ratewarden::server

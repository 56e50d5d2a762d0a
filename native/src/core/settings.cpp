// The settings Java hands down; see settings.h.
#include "core/settings.h"

#include <cstdlib>
#include <map>
#include <mutex>

namespace ddp4j::settings {
namespace {
std::mutex g_mutex;
bool g_handed_down = false;
std::map<std::string, std::string>& values_by_name() {
  static std::map<std::string, std::string> values;
  return values;
}
}  // namespace

void hand_down(std::vector<std::pair<std::string, std::string>> values) {
  std::lock_guard<std::mutex> lock(g_mutex);
  values_by_name().clear();
  for (auto& [name, value] : values) values_by_name()[name] = std::move(value);
  g_handed_down = true;
}

std::optional<std::string> get(const char* name) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_handed_down) {
    auto it = values_by_name().find(name);
    return it == values_by_name().end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  const char* raw = std::getenv(name);
  if (raw == nullptr) return std::nullopt;
  const std::string v(raw);
  const size_t first = v.find_first_not_of(" \t");
  if (first == std::string::npos) return std::nullopt;  // blank reads as unset, as in Java's Setting
  return v.substr(first, v.find_last_not_of(" \t") - first + 1);
}

}  // namespace ddp4j::settings

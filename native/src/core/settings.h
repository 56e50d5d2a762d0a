// settings.h: the DDP4J_* variables the native library reads. Java's org.ddp4j.internal.Setting
// parses and validates every one of them and hands the values down once, at load, in one
// canonical form (a switch as 1 or 0, a byte count or number in decimal, a choice in lower case),
// so the two sides share one parsing policy. Without Java (the C++ tests) the environment is read.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ddp4j::settings {

/**
 * Java's values, (variable, canonical value) for each set variable; the variables not in the list
 * read as unset from now on, whatever the environment says.
 */
void hand_down(std::vector<std::pair<std::string, std::string>> values);

/**
 * The value of variable `name`: Java's canonical one once hand_down ran (nullopt when unset), else
 * the environment's (nullopt when unset or blank).
 */
std::optional<std::string> get(const char* name);

}  // namespace ddp4j::settings

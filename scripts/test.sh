#!/usr/bin/env bash
# Runs every test: JUnit 5 through Maven Surefire (Java, JNI, collectives, launcher, demos), then
# the C++ unit tests with ctest, then scripts/artifact-check.sh (mvn install, and a fresh Maven
# project on the installed artifact run with the launcher, ~2 min). Installs and builds what is
# missing first (scripts/setup.sh).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
cd "$root"
mvn -B test
(cd java/target/native-build && ctest --output-on-failure)
"$root/scripts/artifact-check.sh"

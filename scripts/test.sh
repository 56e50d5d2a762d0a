#!/usr/bin/env bash
# Runs every test: JUnit 5 through Maven Surefire (Java, JNI, collectives, launcher, demos; the
# modules ddp4j, ddp4j-spark, ddp4j-examples, ddp4j-benchmarks), then the C++ unit tests with
# ctest, then scripts/standalone-check.sh (the committed tree alone in an empty folder: nothing
# names a folder outside it, every script answers --help; under a minute), then
# scripts/artifact-check.sh (mvn install, and fresh Maven projects on the installed artifacts, run
# with the launcher, on the module path and in Spark, ~3 min). Installs and builds what is missing
# first (scripts/setup.sh).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh"
cd "$root"
mvn -B test
(cd java/target/native-build && ctest --output-on-failure)
"$root/scripts/standalone-check.sh"
"$root/scripts/artifact-check.sh"

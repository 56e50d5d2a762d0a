#!/usr/bin/env bash
# Prepares, on this (CPU, Debian) machine, what scripts/gpu-check.sh needs on a GPU machine that
# has nvcc, CMake and PyTorch but no internet, no apt, maybe no Java and no Gloo/OpenBLAS:
#   jre/          a jlink-trimmed Java runtime (only the modules the jars use; headers kept, because
#                 CMake's FindJNI needs include/jni.h to build the JNI library there)
#   jars/         ddp4j.jar, its runtime deps (lib/), the test classes and test-scope deps
#                 (test-lib/), junit-platform-console-standalone.jar, benchmarks.jar
#   sysroot/usr/  Gloo and OpenBLAS from this machine's Debian packages: headers, shared libraries
#                 and what they load (libgfortran, libquadmath, hiredis, ibverbs, libnl), Gloo's
#                 CMake package (made relocatable); sysroot/compat/ has libstdc++ for older systems
#   data/fashion-mnist/   the ConvNet demo's data set (raw IDX: xz packs it tighter than gzip)
#   jni-headers/  the JNI prototypes javac -h wrote (java/target/jni-headers): CMake needs them there
#   MANIFEST.txt  versions, sources hash, sizes
# Everything is packed into ONE archive, build/gpu-bundle/ddp4j-gpu-bundle.tar.xz (OpenBLAS alone
# is 36 MB unpacked, the JVM 24 MB: unpacked the bundle would not fit the 64 MiB the device tool
# carries; packed it does). gpu-check.sh unpacks it on the GPU machine. Run it with the device tool as
#   run(command="scripts/gpu-check.sh", carry=["build/gpu-bundle"])
# usage: scripts/gpu-bundle.sh        (runs `mvn -q -B -DskipTests package` first;
#                                      GPU_BUNDLE_SKIP_BUILD=1 uses the jars already built)
# Needs: JDK 17 (jlink, jdeps), Maven (fetches junit-platform-console-standalone once), xz,
# libgloo-dev, libopenblas-dev, dataset-fashion-mnist (scripts/setup.sh installs them).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="$root/build/gpu-bundle"             # the carry path: the archive and its manifest only
stage="$root/build/gpu-bundle-staging"   # the unpacked tree (kept for inspection; not carried)
archive="$out/ddp4j-gpu-bundle.tar.xz"
limit_bytes=$((64 * 1024 * 1024))
console_version=1.14.1   # junit-platform-console-standalone matching JUnit 5.14.1 (pom.xml)
modules="${GPU_BUNDLE_MODULES:-java.base,java.logging,java.management,jdk.unsupported}"
data_dir="${GPU_BUNDLE_DATA:-/usr/share/datasets/fashion-mnist}"

say() { echo "gpu-bundle.sh: $*"; }
die() { echo "gpu-bundle.sh: $*" >&2; exit 1; }
for tool in jlink jdeps mvn xz tar ldd; do
  command -v "$tool" >/dev/null 2>&1 || die "needs $tool (scripts/setup.sh installs the JDK and Maven; xz: apt-get install -y xz-utils)"
done

if [[ "${GPU_BUNDLE_SKIP_BUILD:-0}" != 1 ]]; then
  say "building (mvn -q -B -DskipTests package)"
  mvn -q -B -DskipTests package
fi
ddp4j_jar="$(ls java/target/ddp4j-*.jar 2>/dev/null | grep -v -e sources -e javadoc | head -1 || true)"
[[ -n "$ddp4j_jar" && -f benchmarks/target/benchmarks.jar && -d java/target/test-classes && -d java/target/lib \
   && -d java/examples/target/test-classes && -d java/spark/target/test-classes \
   && -d java/target/jni-headers ]] \
  || die "java/target/ddp4j-*.jar, the test-classes of java/, java/spark/ and java/examples/, java/target/lib, java/target/jni-headers or benchmarks/target/benchmarks.jar is missing: run mvn -q -B -DskipTests package"

rm -rf "$stage" "$out"
mkdir -p "$stage/jars/lib" "$stage/jars/test-lib" "$stage/sysroot/usr/include" "$stage/sysroot/usr/lib" \
  "$stage/sysroot/usr/share/cmake" "$stage/sysroot/compat" "$stage/data/fashion-mnist" "$out"

# ---- jars ------------------------------------------------------------------------------------
say "jars"
cp "$ddp4j_jar" "$stage/jars/ddp4j.jar"
cp java/target/lib/*.jar "$stage/jars/lib/"
cp benchmarks/target/benchmarks.jar "$stage/jars/benchmarks.jar"
cp -r java/target/test-classes "$stage/jars/test-classes"
# the tests that run the demos (the GPU ones among them) live in java/examples; all run on one class path
cp -r java/examples/target/test-classes/. java/spark/target/test-classes/. "$stage/jars/test-classes/"
cp -r java/target/jni-headers "$stage/jni-headers"
# test-scope deps (jackson for the golden files, ...) without JUnit itself: the console launcher
# below carries the same JUnit version (Jupiter API, engine, params, platform, opentest4j, apiguardian)
(cd java && mvn -q -B dependency:copy-dependencies -DincludeScope=test \
  -DexcludeGroupIds=org.junit.jupiter,org.junit.platform,org.opentest4j,org.apiguardian \
  -DoutputDirectory="$stage/jars/test-lib")
for j in "$stage"/jars/test-lib/*.jar; do  # runtime deps are in lib/ already
  [[ -f "$stage/jars/lib/$(basename "$j")" ]] && rm "$j"
done
mvn -q -B dependency:copy -Dartifact="org.junit.platform:junit-platform-console-standalone:$console_version" \
  -DoutputDirectory="$stage/jars"
mv "$stage/jars/junit-platform-console-standalone-$console_version.jar" "$stage/jars/junit-platform-console-standalone.jar"

# ---- Java runtime ------------------------------------------------------------------------------
# Module list: what jdeps reports for ddp4j, the tests, the console launcher and benchmarks.jar,
# less java.sql (only the console's CSV-source parser: @CsvSource, unused here) and java.desktop
# (only commons-math's 2-D geometry inside JMH's jar, unused); checked by running the launcher,
# the tests and the demos on this runtime (gpu-check.sh here does). GPU_BUNDLE_MODULES overrides.
cp_all="$stage/jars/ddp4j.jar:$stage/jars/lib/*:$stage/jars/test-lib/*:$stage/jars/junit-platform-console-standalone.jar"
jdeps_mods="$(jdeps --multi-release 17 --ignore-missing-deps --print-module-deps --class-path "$cp_all" \
  "$stage/jars/ddp4j.jar" "$stage/jars/test-classes" "$stage/jars/junit-platform-console-standalone.jar" \
  "$stage/jars/benchmarks.jar" 2>/dev/null | tail -1 || true)"
say "jdeps says: $jdeps_mods; bundling: $modules"
say "jlink runtime"
# --compress=0: xz packs uncompressed class files much tighter than jlink's zip does
jlink --add-modules "$modules" --strip-debug --no-man-pages --compress=0 --output "$stage/jre"
rm -rf "$stage/jre/legal"
# libjvm.so keeps a full symbol table (Debian ships the debug info apart): drop it, not .dynsym
if command -v strip >/dev/null 2>&1; then
  strip --strip-unneeded "$stage/jre/lib/server/libjvm.so"
fi
"$stage/jre/bin/java" -version 2>&1 | head -1 | sed 's/^/gpu-bundle.sh: runtime: /'

# ---- Gloo and OpenBLAS (a small sysroot) --------------------------------------------------------
say "sysroot: gloo, openblas and what they load"
gloo_cmake=/usr/share/cmake/Gloo
[[ -f "$gloo_cmake/GlooConfig.cmake" && -d /usr/include/gloo ]] || die "needs libgloo-dev (apt-get install -y libgloo-dev)"
cblas_h="$(readlink -f /usr/include/x86_64-linux-gnu/cblas.h 2>/dev/null || true)"
[[ -f "$cblas_h" ]] || cblas_h="$(dpkg -L libopenblas-pthread-dev 2>/dev/null | grep '/cblas.h$' | head -1 || true)"
[[ -f "$cblas_h" ]] || die "needs libopenblas-dev (apt-get install -y libopenblas-dev)"
cp -r /usr/include/gloo "$stage/sysroot/usr/include/"
for h in cblas.h openblas_config.h f77blas.h; do
  cp "$(dirname "$cblas_h")/$h" "$stage/sysroot/usr/include/"
done
mkdir -p "$stage/sysroot/usr/share/cmake/Gloo"
cp "$gloo_cmake"/*.cmake "$stage/sysroot/usr/share/cmake/Gloo/"
# Debian's GlooTargets-*.cmake names /usr/lib/libgloo.so.0.5.0: make it relative to the package
sed -i 's|"/usr/lib/|"${_IMPORT_PREFIX}/lib/|g' "$stage"/sysroot/usr/share/cmake/Gloo/GlooTargets-*.cmake
grep -q '"/usr/' "$stage"/sysroot/usr/share/cmake/Gloo/*.cmake && die "Gloo's CMake files still name /usr"

gloo_so="$(readlink -f /usr/lib/libgloo.so)"
blas_so="$(readlink -f /usr/lib/x86_64-linux-gnu/libopenblas.so.0)"
[[ -f "$gloo_so" && -f "$blas_so" ]] || die "libgloo.so or libopenblas.so.0 not found"
copy_lib() {  # file soname [dev-link]: the file under its real name, linked from its soname (and .so)
  local real
  real="$(basename "$(readlink -f "$1")")"
  cp -L "$1" "$stage/sysroot/usr/lib/$real"
  [[ "$real" != "$2" ]] && ln -sf "$real" "$stage/sysroot/usr/lib/$2"
  [[ -n "${3:-}" ]] && ln -sf "$2" "$stage/sysroot/usr/lib/$3"
  return 0
}
copy_lib "$gloo_so" libgloo.so.0 libgloo.so
copy_lib "$blas_so" libopenblas.so.0 libopenblas.so
bundled=(libgloo.so.0 libopenblas.so.0)
# what they load, except the C and C++ runtimes every machine has
system_libs='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+\.|libgcc_s\.)'
deps="$( (ldd "$gloo_so"; ldd "$blas_so") | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)"
while read -r name path; do
  [[ "$name" =~ $system_libs ]] && continue
  copy_lib "$path" "$name"
  bundled+=("$name")
done <<< "$deps"
# libstdc++ for a system whose own is older than the one Gloo was built with (used only then)
libstdcxx="$(ldd "$gloo_so" | awk '$1 == "libstdc++.so.6" {print $3}')"
cp -L "$libstdcxx" "$stage/sysroot/compat/libstdc++.so.6"
glibcxx_needed="$(objdump -T "$gloo_so" | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)"
glibc_needed="$(for f in "$stage"/sysroot/usr/lib/*.so.* "$stage/jre/lib/server/libjvm.so" "$stage/jre/bin/java"; do
  objdump -T "$f" 2>/dev/null | grep -o 'GLIBC_[0-9.]*'; done | sort -uV | tail -1)"
# drop the symbol tables (not .dynsym) wherever a package left them
find "$stage/sysroot" -type f -name '*.so*' -exec strip --strip-unneeded {} + 2>/dev/null || true

# ---- data ------------------------------------------------------------------------------------
say "data: Fashion-MNIST from $data_dir"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  if [[ -f "$data_dir/$f.gz" ]]; then
    gzip -dc "$data_dir/$f.gz" > "$stage/data/fashion-mnist/$f"
  elif [[ -f "$data_dir/$f" ]]; then
    cp "$data_dir/$f" "$stage/data/fashion-mnist/$f"
  else
    die "$data_dir/$f(.gz) is missing (apt-get install -y dataset-fashion-mnist)"
  fi
done

# ---- manifest, archive -------------------------------------------------------------------------
sources_hash="$("$root/scripts/gpu-check.sh" --sources-hash)"
pkg_of() {  # the Debian package that installed a file (usrmerge: /lib is /usr/lib)
  local p
  p="$( (dpkg -S "$1" || dpkg -S "/usr$1") 2>/dev/null | head -1 | cut -d: -f1 || true)"
  echo "${p:-?}"
}
pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo '?'; }
{
  echo "ddp4j GPU bundle, made by scripts/gpu-bundle.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- java benchmarks 2>/dev/null || echo ' (+ uncommitted Java changes)')"
  echo "sources_hash: $sources_hash"
  echo "java: $("$stage/jre/bin/java" -version 2>&1 | head -1); modules: $modules"
  echo "needs: glibc >= ${glibc_needed#GLIBC_}; libstdc++ with ${glibcxx_needed} (else sysroot/compat is used)"
  echo "packages: libgloo0 $(pkg_version libgloo0), libopenblas0-pthread $(pkg_version libopenblas0-pthread)"
  for b in "${bundled[@]}"; do
    f="$stage/sysroot/usr/lib/$b"
    src="$( (ldd "$gloo_so"; ldd "$blas_so"; echo "libgloo.so.0 => $gloo_so"; echo "libopenblas.so.0 => $blas_so") | awk -v n="$b" '$1 == n {print $3; exit}')"
    echo "  sysroot/usr/lib/$b$([[ -L "$f" ]] && echo " -> $(readlink "$f")") <- ${src:-?} ($(pkg_of "${src:-/nonexistent}"))"
  done
  echo "sizes (bytes, unpacked):"
  (cd "$stage" && du -sb jre jars sysroot data | sed 's/^/  /')
} > "$stage/MANIFEST.txt"

say "packing $archive (xz, 2 threads)"
tar -C "$stage" -cf - . | xz -T2 -6 -c > "$archive.part"
mv "$archive.part" "$archive"
cp "$stage/MANIFEST.txt" "$out/MANIFEST.txt"

size="$(du -sb "$out" | cut -f1)"
tree="$(git ls-files -co --exclude-standard -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)"
echo
cat "$stage/MANIFEST.txt"
echo
echo "largest files (unpacked):"
(cd "$stage" && find . -type f -printf '%s %p\n' | sort -rn | awk 'NR <= 8 {printf "  %6.1f MiB  %s\n", $1 / 1048576, $2}')
echo
unpacked="$(du -sb "$stage" | cut -f1)"
awk -v out="$out" -v s="$size" -v u="$unpacked" -v t="$tree" 'BEGIN {
  m = 1048576
  printf "bundle: %s = %.1f MiB packed (%.1f MiB unpacked); working tree %.1f MiB; together %.1f MiB of the 64 MiB the run tool carries\n", out, s / m, u / m, t / m, (s + t) / m }'
if (( size + tree > limit_bytes )); then
  die "the bundle and the working tree together exceed 64 MiB"
fi
echo "run it on the GPU machine with the device tool:"
echo "  run(command=\"scripts/gpu-check.sh\", carry=[\"build/gpu-bundle\"], timeout_s=540)"

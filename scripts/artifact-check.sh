#!/usr/bin/env bash
# Checks that a training app built on the installed Maven artifacts alone runs as docs/launching.md
# ("Launching from your own jar") says: `mvn install` of ddp4j (the library, ddp4j-spark,
# ddp4j-examples, ddp4j-benchmarks; the library jar a module without the demos or Spark), then a
# fresh project (the pom and main of scripts/artifact-check/, a DDP linear model in the default
# package) built offline with `mvn -o -q package`, then run
#   1. java -cp "target/app.jar:target/libs/*" org.ddp4j.launch.Launcher --nproc-per-node 2 TrainLinear
#   2. java -jar ddp4j-VERSION-launcher.jar --classpath target/app.jar --nproc-per-node 2 TrainLinear
#   3. two nodes on loopback: one launcher of each form, --nnodes 2, one rank each
# Every run must train the same parameters as numpy does from the same start, with no SLF4J
# warning from the launcher. The app also holds the README's program (Quadrants) and the tutorial
# of docs/getting-started.md (TrainMlp) as written, each run on 2 ranks; Quadrants also compiles as
# a module that requires org.ddp4j and runs on the module path, where org.ddp4j.internal is out of
# reach. Also checks the manifests and --version; then an app's own JMH benchmark
# (scripts/artifact-check-bench/: docs/performance.md's AllGatherListBenchmark as written, on the
# installed ddp4j-benchmarks) built offline and run on 2 ranks; and a Spark driver on ddp4j-spark
# (scripts/artifact-check-spark/) that runs TrainLinear as 2 ranks in local[2]. About 3 minutes.
#   ARTIFACT_CHECK_SKIP_INSTALL=1   use what is installed in ~/.m2 already
#   MVN_FLAGS                       extra flags for the install (e.g. -o)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
version=0.1.0-SNAPSHOT
repo="${MAVEN_REPO:-$HOME/.m2/repository}/org/ddp4j/ddp4j/$version"
fail() { echo "artifact-check: FAIL: $*" >&2; exit 1; }

if [[ "${ARTIFACT_CHECK_SKIP_INSTALL:-0}" != 1 ]]; then
  echo "artifact-check: mvn install (tests skipped)"
  # shellcheck disable=SC2086 # MVN_FLAGS is a list of words
  (cd "$root" && mvn -B -q ${MVN_FLAGS:-} -DskipTests install)
fi
bench_repo="${MAVEN_REPO:-$HOME/.m2/repository}/org/ddp4j/ddp4j-benchmarks/$version"
for f in "ddp4j-benchmarks-$version.jar" "ddp4j-benchmarks-$version-sources.jar" "ddp4j-benchmarks-$version-javadoc.jar" "ddp4j-benchmarks-$version.pom"; do
  [[ -s "$bench_repo/$f" ]] || fail "mvn install did not install $bench_repo/$f"
done
for f in "ddp4j-$version.jar" "ddp4j-$version-sources.jar" "ddp4j-$version-javadoc.jar" "ddp4j-$version-launcher.jar" "ddp4j-$version.pom"; do
  [[ -s "$repo/$f" ]] || fail "mvn install did not install $repo/$f"
done
launcher_jar="$repo/ddp4j-$version-launcher.jar"
for artifact in ddp4j-spark ddp4j-examples; do
  for f in "$artifact-$version.jar" "$artifact-$version-sources.jar" "$artifact-$version-javadoc.jar" "$artifact-$version.pom"; do
    [[ -s "$repo/../../$artifact/$version/$f" ]] || fail "mvn install did not install $artifact/$version/$f"
  done
done

manifest() { python3 -c 'import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read("META-INF/MANIFEST.MF").decode().replace("\r", ""))' "$1"; }
jar_has() { python3 -c 'import sys, zipfile; sys.exit(sys.argv[2] not in zipfile.ZipFile(sys.argv[1]).namelist())' "$1" "$2"; }
for jar in "$repo/ddp4j-$version.jar" "$repo/ddp4j-$version-sources.jar" "$repo/ddp4j-$version-javadoc.jar" "$launcher_jar"; do
  m="$(manifest "$jar")"
  grep -qx "Implementation-Version: $version" <<<"$m" || fail "$jar: no Implementation-Version: $version in its manifest"
  grep -qx "Automatic-Module-Name: org.ddp4j" <<<"$m" || fail "$jar: no Automatic-Module-Name: org.ddp4j in its manifest"
done
grep -qx "Main-Class: org.ddp4j.launch.Launcher" <<<"$(manifest "$launcher_jar")" || fail "the launcher jar has no Main-Class"
jar_has "$launcher_jar" natives/linux-x86_64/libddp4j.so || fail "the launcher jar lacks libddp4j.so"
# the library jar holds the library: a module, without the demos and without the Spark integration
jar_has "$repo/ddp4j-$version.jar" module-info.class || fail "the ddp4j jar has no module-info.class"
python3 -c 'import sys, zipfile; bad = [n for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.startswith(("org/ddp4j/examples/", "org/ddp4j/spark/"))]; sys.exit(bool(bad))' \
  "$repo/ddp4j-$version.jar" || fail "the ddp4j jar carries org.ddp4j.examples or org.ddp4j.spark classes"
bench="$root/benchmarks/target/benchmarks.jar"
if [[ -f "$bench" ]]; then
  m="$(manifest "$bench")"
  grep -qx "Automatic-Module-Name: org.ddp4j.benchmarks" <<<"$m" || fail "$bench: no Automatic-Module-Name"
  grep -qx "Implementation-Version: $version" <<<"$m" || fail "$bench: no Implementation-Version"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/ddp4j-artifact-check.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cp -r "$root/scripts/artifact-check/." "$work/"
# the tutorial of docs/getting-started.md, as written: its block from the first import to the closing fence
sed -n '/^## Tutorial: your own model/,/^## Launching from your own jar/p' "$root/docs/getting-started.md" \
  | sed -n '/^```java$/,/^```$/p' | sed '1d;$d' > "$work/src/main/java/TrainMlp.java"
grep -q "^public class TrainMlp" "$work/src/main/java/TrainMlp.java" || fail "could not find the tutorial's block in docs/getting-started.md"
# the README's front-page program, as written: the java block that holds "public class Quadrants"
python3 - "$root/README.md" > "$work/src/main/java/Quadrants.java" <<'PY' || fail "could not find the README's Quadrants block"
import re, sys
blocks = re.findall(r"^```java\n(.*?)^```$", open(sys.argv[1]).read(), re.S | re.M)
print(next(b for b in blocks if "public class Quadrants" in b), end="")
PY
cd "$work"
echo "artifact-check: building a fresh project in $work (mvn -o -q package)"
mvn -o -q -B package -DskipTests > build.log 2>&1 || { cat build.log >&2; fail "the fresh project does not build offline"; }

unset OMP_NUM_THREADS OPENBLAS_NUM_THREADS   # the workers' default threads: the launcher's line must say it
cp_form=(java -cp "target/app.jar:target/libs/*" org.ddp4j.launch.Launcher)
jar_form=(java -jar "$launcher_jar" --classpath target/app.jar)

for form in cp_form jar_form; do
  declare -n cmd="$form"
  v="$(timeout 60 "${cmd[@]}" --version 2>&1)" || fail "$form --version failed: $v"
  grep -q "ddp4j-run $version" <<<"$v" || fail "$form --version printed '$v', not ddp4j-run $version"
done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The numpy recomputation: from each run's initial parameters (rank 0's, broadcast by DDP), two
# steps per epoch on samples (0,1) then (2,3), gradients averaged over the two ranks.
check_values() {
  python3 - "$1" <<'PY'
import re, sys
import numpy as np
text = open(sys.argv[1]).read()
def params(kind):
    found = {}
    for m in re.finditer(kind + r" rank=(\d) world=(\d) weight=\[([^\]]*)\] bias=\[([^\]]*)\]", text):
        found[int(m.group(1))] = (np.array(m.group(3).split(", "), float).reshape(2, 2), np.array(m.group(4).split(", "), float))
        assert m.group(2) == "2", "world size " + m.group(2)
    assert sorted(found) == [0, 1], kind + " lines of ranks " + str(sorted(found))
    return found
init, final = params("initial"), params("final")
for kind, p in (("initial", init), ("final", final)):
    assert np.array_equal(p[0][0], p[1][0]) and np.array_equal(p[0][1], p[1][1]), kind + " parameters differ between ranks"
W, b = init[0]
X = np.array([[0.1, 0.2], [0.3, -0.1], [0.5, 0.4], [-0.2, 0.3]])
Y = np.array([[1, 0], [0, 1], [0.5, 0.5], [1, 1]])
for epoch in range(3):
    for pair in ((0, 1), (2, 3)):
        gW, gb = np.zeros((2, 2)), np.zeros(2)
        for i in pair:
            d = W @ X[i] + b - Y[i]        # MSELoss over 2 outputs: grad = 2 d / 2
            gW += np.outer(d, X[i]) / 2
            gb += d / 2
        W, b = W - 0.1 * gW, b - 0.1 * gb
fW, fb = final[0]
assert np.allclose(fW, W, atol=1e-5) and np.allclose(fb, b, atol=1e-5), f"trained {fW} {fb}, numpy {W} {b}"
assert not np.allclose(fW, init[0][0]), "training did not move the weights"
print("values match numpy:", fW.ravel(), fb)
PY
}

check_launcher_err() {  # the launcher's own stderr lines: its threads line printed, no SLF4J noise
  grep -q "^ddp4j-run: intra-op threads per worker: [0-9]* (.* CPUs / 2 workers on this node" "$1" \
    || { cat "$1" >&2; fail "$2: the launcher's line on the workers' threads is missing from stderr"; }
  if grep -q "^SLF4J" "$1"; then cat "$1" >&2; fail "$2: the launcher printed SLF4J's warnings"; fi
}

for form in cp_form jar_form; do
  declare -n cmd="$form"
  echo "artifact-check: $form, 2 ranks"
  port="$(free_port)"
  timeout 120 "${cmd[@]}" --nproc-per-node 2 --master-port "$port" TrainLinear > "$form.out" 2> "$form.err" \
    || { cat "$form.out" "$form.err" >&2; fail "$form: the launcher failed"; }
  check_values "$form.out" || { cat "$form.out" "$form.err" >&2; fail "$form: wrong values"; }
  check_launcher_err "$form.err" "$form"
done
if grep -q "SLF4J" jar_form.err; then cat jar_form.err >&2; fail "the launcher jar's workers printed SLF4J warnings"; fi

echo "artifact-check: two nodes on loopback (node 0: -cp form, node 1: launcher jar), 1 rank each"
port="$(free_port)"
timeout 120 "${cp_form[@]}" --nnodes 2 --node-rank 0 --master-port "$port" TrainLinear > node0.out 2> node0.err &
node0=$!
timeout 120 "${jar_form[@]}" --nnodes 2 --node-rank 1 --master-port "$port" TrainLinear > node1.out 2> node1.err \
  || { cat node1.out node1.err node0.err >&2; fail "node 1's launcher failed"; }
wait "$node0" || { cat node0.out node0.err >&2; fail "node 0's launcher failed"; }
cat node0.out node1.out > nodes.out
check_values nodes.out || { cat nodes.out node0.err node1.err >&2; fail "two nodes: wrong values"; }
grep -h "final" cp_form.out | sed 's/^\[rank.\]: //' | sort > a.txt
grep -h "final" nodes.out | sed 's/^\[rank.\]: //' | sort > b.txt
cmp -s a.txt b.txt || { diff a.txt b.txt >&2; fail "two nodes trained other parameters than one node of 2 ranks"; }

echo "artifact-check: the tutorial (TrainMlp), 2 ranks, 6000 images"
if [[ -d /usr/share/datasets/fashion-mnist ]]; then
  timeout 300 "${cp_form[@]}" --nproc-per-node 2 TrainMlp 6000 > tutorial.out 2> tutorial.err \
    || { cat tutorial.out tutorial.err >&2; fail "the tutorial failed"; }
  python3 - tutorial.out <<'PY' || { cat tutorial.out tutorial.err >&2; fail "the tutorial did not learn"; }
import re, sys
m = re.search(r"\[rank0\]: test accuracy ([0-9.]+) on 10000 images", open(sys.argv[1]).read())
assert m and float(m.group(1)) > 0.7, m and m.group(0)
print("tutorial:", m.group(0))
PY
else
  echo "artifact-check: skipped the tutorial run: dataset-fashion-mnist is not installed (it compiled)"
fi

echo "artifact-check: the README's program (Quadrants), 2 ranks"
timeout 120 "${cp_form[@]}" --nproc-per-node 2 --master-port "$(free_port)" Quadrants > quadrants.out 2> quadrants.err \
  || { cat quadrants.out quadrants.err >&2; fail "the README's program failed"; }
python3 - quadrants.out <<'PY' || { cat quadrants.out quadrants.err >&2; fail "the README's program did not learn"; }
import re, sys
loss = {(int(r), int(e)): float(l) for r, e, l in re.findall(r"rank (\d) epoch (\d+) loss ([0-9.]+)", open(sys.argv[1]).read())}
assert sorted({r for r, _ in loss}) == [0, 1] and len(loss) == 20, "epoch lines of " + str(sorted(loss))
# two classes: guessing costs ln 2 = 0.69; a network that learned the quadrants is far below it
assert loss[(0, 9)] < 0.3 and loss[(1, 9)] < 0.3, "the last epoch's losses: %s, %s" % (loss[(0, 9)], loss[(1, 9)])
print("Quadrants: rank 0's loss %.4f after epoch 1, %.4f after epoch 10" % (loss[(0, 0)], loss[(0, 9)]))
PY

echo "artifact-check: the README's program as a module (requires org.ddp4j) on the module path, 1 rank"
mod="$work/modular"
mkdir -p "$mod/src/com/example" "$mod/bad/com/example"
printf 'module com.example.app {\n    requires org.ddp4j;\n}\n' > "$mod/src/module-info.java"
{ printf 'package com.example;\n\n'; cat src/main/java/Quadrants.java; } > "$mod/src/com/example/Quadrants.java"
javac -d "$mod/out" --module-path target/libs "$mod/src/module-info.java" "$mod/src/com/example/Quadrants.java" \
  > "$mod/javac.log" 2>&1 || { cat "$mod/javac.log" >&2; fail "the README's program does not compile as a module"; }
RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT="$(free_port)" timeout 120 \
  java --module-path "target/libs:$mod/out" -m com.example.app/com.example.Quadrants > "$mod/run.out" 2>&1 \
  || { cat "$mod/run.out" >&2; fail "the README's program fails on the module path"; }
# the launcher on the module path refuses, naming the class-path command (its workers get its class path)
set +e
timeout 60 java --module-path "target/libs:$mod/out" --add-modules com.example.app -m org.ddp4j/org.ddp4j.launch.Launcher \
  --nproc-per-node 2 com.example.Quadrants > "$mod/launcher.out" 2>&1
code=$?
set -e
[[ $code -eq 2 ]] && grep -q "start it on the class path instead" "$mod/launcher.out" \
  || { cat "$mod/launcher.out" >&2; fail "the launcher on the module path: exit $code, not a refusal naming the class path"; }
cp "$mod/src/module-info.java" "$mod/bad/"
printf 'package com.example;\n\npublic class Peek {\n    public static void main(String[] a) {\n        System.out.println(org.ddp4j.internal.Setting.values().length);\n    }\n}\n' \
  > "$mod/bad/com/example/Peek.java"
if javac -d "$mod/bad-out" --module-path target/libs "$mod/bad/module-info.java" "$mod/bad/com/example/Peek.java" \
    > "$mod/bad.log" 2>&1; then
  fail "a module that requires org.ddp4j compiled against org.ddp4j.internal"
fi
grep -q "package org.ddp4j.internal is not visible" "$mod/bad.log" \
  || { cat "$mod/bad.log" >&2; fail "org.ddp4j.internal refused, but not as a package that is not visible"; }

echo "artifact-check: a name that is neither a class nor a command is refused, naming both"
set +e
timeout 60 "${cp_form[@]}" --master-port "$(free_port)" NoSuchMain > bad.out 2> bad.err
code=$?
set -e
[[ $code -eq 2 ]] || { cat bad.err >&2; fail "NoSuchMain: exit code $code, expected 2"; }
grep -q "'NoSuchMain' is neither a class on" bad.err || { cat bad.err >&2; fail "NoSuchMain: unclear error"; }
echo "artifact-check: an app's own JMH benchmark on ddp4j-benchmarks (docs/performance.md's recipe as written), 2 ranks"
bench_work="$work/bench"
cp -r "$root/scripts/artifact-check-bench/." "$bench_work/"
mkdir -p "$bench_work/src/main/java/com/example"
{
  printf 'package com.example;\n\nimport java.util.List;\nimport java.util.stream.IntStream;\n'
  printf 'import org.ddp4j.benchmarks.collective.CollectiveBenchmark;\nimport org.ddp4j.distributed.ProcessGroup;\n'
  printf 'import org.ddp4j.tensor.Tensor;\n\n'
  # docs/performance.md's block, from its first line to the closing fence
  sed -n '/^public class AllGatherListBenchmark extends CollectiveBenchmark/,/^```$/p' "$root/docs/performance.md" | sed '$d'
} > "$bench_work/src/main/java/com/example/AllGatherListBenchmark.java"
grep -q "awaitBlocking" "$bench_work/src/main/java/com/example/AllGatherListBenchmark.java" \
  || fail "could not find the AllGatherListBenchmark block in docs/performance.md"
(cd "$bench_work" && mvn -o -q -B package -DskipTests > build.log 2>&1) \
  || { cat "$bench_work/build.log" >&2; fail "the benchmark project does not build offline"; }
(cd "$bench_work" && timeout 180 java -cp "target/app.jar:target/libs/*" org.ddp4j.launch.Launcher --nproc-per-node 2 \
    org.ddp4j.benchmarks.collective.CollectiveBench --benchmark com.example.AllGatherListBenchmark \
    --min-bytes 1024 --max-bytes 4096 --warmup 1 --iterations 2 --forks 0 > bench.out 2> bench.err) \
  || { cat "$bench_work/bench.out" "$bench_work/bench.err" >&2; fail "the app's benchmark failed"; }
grep -q "result op=.* ranks=2 bytes=4096 " "$bench_work/bench.out" \
  || { cat "$bench_work/bench.out" "$bench_work/bench.err" >&2; fail "the app's benchmark printed no 4096 B result line"; }
echo "artifact-check: a Spark driver on ddp4j-spark (docs/launching.md's dependencies), TrainLinear as 2 ranks in local[2]"
spark_work="$work/spark"
cp -r "$root/scripts/artifact-check-spark/." "$spark_work/"
cp "$root/scripts/artifact-check/src/main/java/TrainLinear.java" "$spark_work/src/main/java/"
# not offline: Maven's nearest-wins picks other Jackson versions for this project than ddp4j's build did
(cd "$spark_work" && mvn -q -B package -DskipTests > build.log 2>&1) \
  || { cat "$spark_work/build.log" >&2; fail "the Spark app does not build"; }
(cd "$spark_work" && timeout 300 java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "target/app.jar:target/libs/*" \
    SparkTrainLinear > spark.out 2> spark.err) \
  || { cat "$spark_work/spark.out" "$spark_work/spark.err" >&2; fail "the Spark app failed"; }
check_values "$spark_work/spark.out" || { cat "$spark_work/spark.out" "$spark_work/spark.err" >&2; fail "the Spark app: wrong values"; }
echo "artifact-check: OK"

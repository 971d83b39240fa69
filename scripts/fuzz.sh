#!/bin/sh
# `make fuzz`: build the fuzz targets with clang (libFuzzer, ASan, UBSan) in
# build-fuzz and run each for SECONDS seconds, one at a time, with its
# committed corpus and dictionary. New inputs go to build-fuzz/corpus/<target>
# (the committed corpus is only read); a crash is written to
# build-fuzz/artifacts/ and makes the run fail once every target has run.
# FUZZ_EXECS=N also ends each target after N executions.
#   usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default: 60, every target)
set -e
cd "$(dirname "$0")/.."
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=$*
[ -n "$targets" ] || targets=$(cd test/fuzz/corpus && ls)
build=build-fuzz
command -v clang >/dev/null 2>&1 || { echo "fuzz: clang is missing (make deps installs it)" >&2; exit 1; }
cmake -S . -B $build -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLUAMCP_ASAN=OFF >/dev/null
cmake --build $build -j2 --target fuzz-targets >$build/fuzz-build.log 2>&1 || { cat $build/fuzz-build.log; exit 1; }
mkdir -p $build/artifacts
failed=""
for t in $targets; do
  mkdir -p $build/corpus/$t
  dict=""
  [ -f test/fuzz/$t.dict ] && dict="-dict=test/fuzz/$t.dict"
  echo "fuzz: $t for ${secs}s (log: $build/$t.log)"
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     $build/$t -max_total_time="$secs" ${FUZZ_EXECS:+-runs=$FUZZ_EXECS} -timeout=10 -print_final_stats=1 $dict \
       -artifact_prefix=$build/artifacts/$t- $build/corpus/$t test/fuzz/corpus/$t >$build/$t.log 2>&1; then
    grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units)' $build/$t.log | sed 's/^/  /'
  else
    failed="$failed $t"
    tail -40 $build/$t.log
  fi
done
if [ -n "$failed" ]; then
  echo "fuzz: findings in:$failed (reproducers in $build/artifacts/)" >&2
  exit 1
fi

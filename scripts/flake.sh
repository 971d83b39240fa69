#!/bin/sh
# `make flake`: the whole spec suite RUNS times in a row on the normal and the
# ASan build of $BUILD, the two builds side by side (the suite waits more than
# it computes: about 30% of one core). STRESS=1 keeps both cores busy with
# `stress -c 2` meanwhile. The chaos spec's ping bound is as ctest sets it
# (CMakeLists.txt: 50 ms, 200 on ASan), but 0.5 s under STRESS=1, where the
# CPUs are oversubscribed and the server waits for one; LUAMCP_CHAOS_PING
# sets it for both builds. Each failing run's TAP output is kept in
# $BUILD/flake/; the summary line counts passing runs per build.
#   usage: scripts/flake.sh BUILD RUNS
set -e
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-30}
out=$build/flake
mkdir -p $out
busted=$(command -v busted)

# One build's loop: "<name> <passed>/<runs>" on stdout at the end.
loop() {
  name=$1 bin=$2 ping=$3 passed=0 i=1
  while [ $i -le $runs ]; do
    log=$out/$name-$i.tap
    if LUAMCP_BIN=$bin LUAMCP_CHAOS_PING=$ping ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
       UBSAN_OPTIONS=print_stacktrace=1 lua5.4 $busted --output=TAP spec >$log 2>&1; then
      passed=$((passed + 1)); rm -f $log
    else
      echo "flake: $name run $i failed:" >&2
      grep '^not ok' $log | sed 's/^/  /' >&2
    fi
    i=$((i + 1))
  done
  echo "$name $passed/$runs"
}

stress_pid="" ping_normal=0.05 ping_asan=0.2
if [ "${STRESS:-0}" = 1 ]; then
  ping_normal=0.5 ping_asan=0.5
  command -v stress >/dev/null 2>&1 || { echo "flake: STRESS=1 needs stress (apt-get install stress)" >&2; exit 1; }
  stress -c 2 >/dev/null 2>&1 & stress_pid=$!
fi
trap '[ -n "$stress_pid" ] && kill $stress_pid 2>/dev/null' EXIT
started=$(date +%s)
loop normal "$PWD/$build/luamcp" ${LUAMCP_CHAOS_PING:-$ping_normal} >$out/normal.sum &
p1=$!
loop asan "$PWD/$build/luamcp-asan" ${LUAMCP_CHAOS_PING:-$ping_asan} >$out/asan.sum &
p2=$!
wait $p1 $p2 || true
echo "flake: $(cat $out/normal.sum), $(cat $out/asan.sum) passed in a row$( [ -n "$stress_pid" ] && echo ' under stress -c 2') ($(( ($(date +%s) - started) / 60 )) min)"
grep -q " $runs/$runs" $out/normal.sum && grep -q " $runs/$runs" $out/asan.sum

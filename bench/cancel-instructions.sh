#!/bin/sh
# Instructions per cancelled call, counted by callgrind: the cancel phase of
# the driver's `inflight` scenario alone (the row `cancel 10,000 in flight`).
# The server runs under callgrind; once its N sleeping calls have started,
# the driver zeroes the counts (DRIVER_CALLGRIND_ZERO) and cancels them all,
# so the total is the cancels', their handlers' "stopped" lines and the
# exit. Two runs per binary, of N1 and N2 calls:
#   per cancel = (instructions(N2) - instructions(N1)) / (N2 - N1)
# "in the loop" counts uv_run's part alone: the exit's lua_close (the garbage
# of the calls, freed at once) is outside the timed row, and moves by a
# thousand a cancel with malloc's heap layout (its malloc_consolidate).
# Usage: sh bench/cancel-instructions.sh [BIN ...]   (BENCH_N1, BENCH_N2: 2000, 6000)
set -u
N1=${BENCH_N1:-2000}
N2=${BENCH_N2:-6000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$ROOT/build/luamcp"
command -v valgrind >/dev/null || { echo "cancel-instructions.sh: valgrind is not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
${CC:-cc} -O2 -Wall -o "$TMP/driver" "$ROOT/bench/driver.c" -lm || exit 1

# instructions BIN N: callgrind's total after the zeroing
instructions() {
  tree=$(cd "$(dirname "$1")/.." && pwd)
  DRIVER_CALLGRIND_ZERO=$(($2 / 1000 + 2)) "$TMP/driver" --scenario inflight --count "$2" --timeout 120 -- \
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" "$1" --plugins "$tree/bench/plugins" \
    --log-level warning >"$TMP/out" 2>"$TMP/err"
  grep -q cancel_all_ms "$TMP/out" || { echo "cancel-instructions.sh: $1: not every call stopped" >&2; exit 1; }
  total=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$TMP/err")
  loop=$(callgrind_annotate --inclusive=yes --threshold=100 "$TMP/cg" 2>/dev/null |
         sed -n 's/^ *\([0-9,]*\) .*:uv_run .*/\1/p' | head -1 | tr -d ,)
  echo "$total ${loop:-0}"
}

printf '%-50s %14s %14s\n' binary "per cancel" "in the loop"
for bin in "$@"; do
  r1=$(instructions "$bin" "$N1")
  r2=$(instructions "$bin" "$N2")
  printf '%-50s %14d %14d\n' "$bin" $(( (${r2% *} - ${r1% *}) / (N2 - N1) )) \
    $(( (${r2#* } - ${r1#* }) / (N2 - N1) ))
done

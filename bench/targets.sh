#!/bin/sh
# Issue 31's rows, before and after, in one run: `make bench BENCH_BASE=BIN`
# (or `sh bench/targets.sh BASE [NEW]`). BASE and NEW are luamcp binaries,
# each built in its own tree (a binary serves the lua/ of the tree it was
# built in: a copy of one would serve the wrong tree's); NEW defaults to
# build/luamcp. A base: `git worktree add ../base REV`, then cmake there.
# Each round measures, for BASE then NEW, with the references beside them:
#   echo      stdio echo (100,000 calls, 64 in flight) and the raw C echo's
#             ceiling (bench/ceiling.c) in the same round
#   mount     the same echo through a mount (the binary mounting itself over
#             stdio, as a user writes it: command and prefix = ""), against
#             the echo above; the p99 of sequential calls both ways
#   cancel    10,000 sleeping calls cancelled, each handler logging "stopped"
#             as it wakes: first cancel written -> last "stopped" read
#   http      HTTP echo, 8 keep-alive connections, and bench/http-ceiling.c
# BENCH_TARGET_PIN: "1 0" (default) pinned (driver cpu 0, server cpu 1) then
# unpinned; BENCH_TARGET_ROUNDS rounds of each (default 3): figures are the
# median of the rounds. BENCH_TARGET_COUNT=1 (default) adds the instruction
# counts (callgrind) of a 2026-07-28 stateless tools/call over HTTP and a
# session's, both binaries. A report, never a test: it exits 0.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: sh bench/targets.sh BASE [NEW]" >&2; exit 2; }
BASE=$1
NEW=${2:-$ROOT/build/luamcp}
OUT=${BUILD:-$ROOT/build}/bench/targets
ROUNDS=${BENCH_TARGET_ROUNDS:-3}
PINS=${BENCH_TARGET_PIN:-1 0}
PORT=${BENCH_HTTP_PORT:-28930}
PORT=$((PORT + 500))
CC=${CC:-cc}
for b in "$BASE" "$NEW"; do [ -x "$b" ] || { echo "targets.sh: $b is not a binary" >&2; exit 2; }; done
mkdir -p "$OUT" && rm -f "$OUT"/*.txt
note() { printf 'targets: %s\n' "$*" >&2; }
$CC -O2 -Wall -o "$OUT/driver" "$ROOT/bench/driver.c" -lm || exit 1
$CC -O2 -Wall -o "$OUT/ceiling" "$ROOT/bench/ceiling.c" || exit 1
$CC -O2 -Wall -o "$OUT/http-driver" "$ROOT/bench/http-driver.c" -lm || exit 1
$CC -O2 -Wall -o "$OUT/http-ceiling" "$ROOT/bench/http-ceiling.c" || exit 1

tree() { (cd "$(dirname "$1")/.." && pwd); }
# the mount as a user writes it, one per binary: itself over stdio
mount_dir() { # which(base|new) bin -> directory
  d=$OUT/mount-$1
  mkdir -p "$d"
  cat >"$d/gateway.lua" <<EOF
-- written by bench/targets.sh
local mcp = require "mcp"
return mcp.plugin {
  name = "gateway",
  mount = { command = { "$2", "--plugins", "$(tree "$2")/bench/plugins", "--log-level", "warning" }, prefix = "" },
}
EOF
  printf '%s\n' "$d"
}
MB=$(mount_dir base "$BASE")
MN=$(mount_dir new "$NEW")

# run LABEL PIN DRIVER ARGS... -- SERVER...: the driver's output into
# $OUT/LABEL.PIN.ROUND.txt, each side on its cpu when pinned
run() {
  label=$1 pin=$2 drv=$3; shift 3
  if [ "$pin" = 1 ]; then dp="taskset -c 0"; sp="taskset -c 1"; else dp=""; sp=""; fi
  args=""; while [ "$1" != -- ]; do args="$args $1"; shift; done; shift
  # shellcheck disable=SC2086
  timeout -k 5 180 $dp "$OUT/$drv" $args -- $sp "$@" >"$OUT/$label.$pin.$r.txt" 2>"$OUT/$label.$pin.$r.err" \
    || note "$label ($pin, round $r) failed: see $OUT/$label.$pin.$r.err"
}

for pin in $PINS; do
  r=1
  while [ "$r" -le "$ROUNDS" ]; do
    note "pinned=$pin round $r"
    run ceiling "$pin" driver --scenario echo --count 100000 --window 64 -- "$OUT/ceiling"
    PORT=$((PORT + 1))
    run http-ceiling "$pin" http-driver --addr "127.0.0.1:$PORT" --scenario echo --conns 8 --depth 1 \
      --seconds 2 --warmup-seconds 2 -- "$OUT/http-ceiling" "127.0.0.1:$PORT"
    for w in base new; do
      if [ $w = base ]; then bin=$BASE; md=$MB; else bin=$NEW; md=$MN; fi
      plug=$(tree "$bin")/bench/plugins
      run "$w-echo" "$pin" driver --scenario echo --count 100000 --window 64 -- "$bin" --plugins "$plug" --log-level warning
      run "$w-mount" "$pin" driver --scenario echo --count 100000 --window 64 -- "$bin" --plugins "$md" --log-level warning
      run "$w-direct-lat" "$pin" driver --scenario latency -- "$bin" --plugins "$plug" --log-level warning
      run "$w-mount-lat" "$pin" driver --scenario latency -- "$bin" --plugins "$md" --log-level warning
      run "$w-cancel" "$pin" driver --scenario inflight -- "$bin" --plugins "$plug" --log-level warning
      PORT=$((PORT + 1))
      run "$w-http" "$pin" http-driver --addr "127.0.0.1:$PORT" --scenario echo --conns 8 --depth 1 \
        --seconds 2 --warmup-seconds 2 -- "$bin" --http "127.0.0.1:$PORT" --plugins "$plug" --log-level warning
    done
    r=$((r + 1))
  done
done

# med LABEL PIN KEY: the median over the rounds
med() {
  cat "$OUT/$1.$2".*.txt 2>/dev/null | awk -v k="$3" '$1 == k && $2 ~ /^[0-9.]+$/ { print $2 }' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
# each round's ratio a/b, then their median (a ratio is of one round's pair)
rmed() {
  i=1
  while [ "$i" -le "$ROUNDS" ]; do
    a=$(awk -v k="$3" '$1 == k { print $2 }' "$OUT/$1.$5.$i.txt" 2>/dev/null)
    b=$(awk -v k="$4" '$1 == k { print $2 }' "$OUT/$2.$5.$i.txt" 2>/dev/null)
    awk -v a="$a" -v b="$b" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.3f\n", a / b }'
    i=$((i + 1))
  done | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.2f (%s-%s)\n", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR]; else print "-" }'
}

count_rows() {
  [ "${BENCH_TARGET_COUNT:-1}" = 1 ] && command -v valgrind >/dev/null || return 0
  s26=$(BENCH_HTTP=1 sh "$ROOT/bench/instructions-2026.sh" "$BASE" "$NEW" 2>&1 | awk 'NR > 1 { print $2 }' | tr '\n' ' ')
  ses=$(sh "$ROOT/bench/instructions-http.sh" "$BASE" "$NEW" 2>&1 | awk 'NR > 1 { print $2 }' | tr '\n' ' ')
  set -- $s26 $ses
  [ $# -eq 4 ] || { echo "instruction counts: failed ($s26 / $ses)"; return 0; }
  printf '%-44s %22s %22s  %s\n' "stateless 2026-07-28 HTTP call / session call" \
    "$(awk -v a="$1" -v b="$3" 'BEGIN { printf "%.2f (%.1fk/%.1fk)", a / b, a / 1000, b / 1000 }')" \
    "$(awk -v a="$2" -v b="$4" 'BEGIN { printf "%.2f (%.1fk/%.1fk)", a / b, a / 1000, b / 1000 }')" \
    "<= 1.3 (instructions, callgrind)"
}

{
  echo
  echo "issue 31's rows  $(date -u '+%Y-%m-%d %H:%M UTC'), load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "before: $BASE"
  echo "after:  $NEW"
  echo "medians of $ROUNDS rounds, base and new alternating in each; a ratio's (min-max) over the rounds"
  for pin in $PINS; do
    echo
    [ "$pin" = 1 ] && echo "pinned: driver on cpu 0, server (and a mount's upstream) on cpu 1" || echo "not pinned"
    printf '%-44s %22s %22s  %s\n' row before after target
    printf '%-44s %22s %22s  %s\n' "stdio echo (calls/s)" "$(med base-echo "$pin" echo_calls_per_s)" \
      "$(med new-echo "$pin" echo_calls_per_s)" ""
    printf '%-44s %22s %22s  %s\n' "stdio echo / raw C echo ceiling" \
      "$(rmed base-echo ceiling echo_calls_per_s echo_calls_per_s "$pin")" \
      "$(rmed new-echo ceiling echo_calls_per_s echo_calls_per_s "$pin")" ">= 0.5 every run"
    printf '%-44s %22s %22s  %s\n' "echo through a mount / direct" \
      "$(rmed base-mount base-echo echo_calls_per_s echo_calls_per_s "$pin")" \
      "$(rmed new-mount new-echo echo_calls_per_s echo_calls_per_s "$pin")" ">= 0.45"
    printf '%-44s %22s %22s  %s\n' "p99 through a mount / direct" \
      "$(rmed base-mount-lat base-direct-lat lat_p99_us lat_p99_us "$pin")" \
      "$(rmed new-mount-lat new-direct-lat lat_p99_us lat_p99_us "$pin")" "<= 2"
    printf '%-44s %22s %22s  %s\n' "cancel 10,000 sleeping, each logs (ms)" \
      "$(med base-cancel "$pin" cancel_all_ms)" "$(med new-cancel "$pin" cancel_all_ms)" "<= 35"
    printf '%-44s %22s %22s  %s\n' "HTTP echo 8 conns / HTTP ceiling" \
      "$(rmed base-http http-ceiling http_echo_calls_per_s http_echo_calls_per_s "$pin")" \
      "$(rmed new-http http-ceiling http_echo_calls_per_s http_echo_calls_per_s "$pin")" "keep (0.85)"
  done
  echo
  count_rows
  echo "raw results: $OUT"
} | tee "$OUT/report.txt"
exit 0

#!/bin/sh
# Instructions per echo call over Streamable HTTP (one session, JSON
# answers), counted by callgrind (bench/README.md, "Streamable HTTP"): the
# server under callgrind behind `http-driver --scenario latency` (one
# keep-alive connection, sequential calls). Two runs per binary, of N1 and N2
# calls (after 10 warm-up calls each), so that startup and the handshake
# cancel out:
#   per call = (instructions(N2) - instructions(N1)) / (N2 - N1)
# Each argument is a luamcp binary (a build tree's, serving that tree's
# bench/plugins); the default is build/luamcp. BENCH_STRACE=1 also counts the
# syscalls per call (strace -c -f, the same two runs, natively).
# Usage: sh bench/instructions-http.sh [BIN ...]   (BENCH_N1, BENCH_N2: 500, 3000; BENCH_HTTP_PORT)
set -u
N1=${BENCH_N1:-500}
N2=${BENCH_N2:-3000}
PORT=${BENCH_HTTP_PORT:-29431}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$ROOT/build/luamcp"
command -v valgrind >/dev/null || { echo "instructions-http.sh: valgrind is not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cc -O2 -o "$TMP/http-driver" "$ROOT/bench/http-driver.c" -lm || exit 1

# run WRAPPER BIN N: the driver's latency scenario of N calls against BIN under WRAPPER
run() {
  wrap=$1 bin=$2 n=$3
  tree=$(cd "$(dirname "$bin")/.." && pwd)
  # shellcheck disable=SC2086  # $wrap: the wrapper's words
  "$TMP/http-driver" --addr "127.0.0.1:$PORT" --scenario latency --warmup 10 --count "$n" \
    --max-seconds 600 --timeout 60 -- $wrap "$bin" --http "127.0.0.1:$PORT" \
    --plugins "$tree/bench/plugins" --log-level warning >"$TMP/out" 2>"$TMP/err" ||
    { echo "instructions-http.sh: $bin: the driver failed" >&2; cat "$TMP/err" >&2; exit 1; }
  grep -q '^http_lat_errors 0$' "$TMP/out" ||
    { echo "instructions-http.sh: $bin: errors" >&2; cat "$TMP/out" >&2; exit 1; }
}

instructions() {
  run "valgrind --tool=callgrind --callgrind-out-file=$TMP/cg" "$1" "$2"
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$TMP/err"
}

# syscalls BIN N: strace -c's total of calls. strace detaches on SIGTERM and
# leaves its tracee running: the wrapper passes the driver's SIGTERM on.
cat >"$TMP/strace.sh" <<'END'
out=$1; shift
strace -f -c -o "$out" "$@" &
s=$!
trap 'kill -TERM $(pgrep -P $s)' TERM
wait $s
wait $s
END
syscalls() {
  run "sh $TMP/strace.sh $TMP/st" "$1" "$2"
  awk '$NF == "total" { print $4 }' "$TMP/st"
}

printf '%-50s %14s' binary "per call"
[ -z "${BENCH_STRACE:-}" ] || printf ' %14s' "syscalls/call"
printf '\n'
for bin in "$@"; do
  a=$(instructions "$bin" "$N1")
  b=$(instructions "$bin" "$N2")
  printf '%-50s %14d' "$bin" $(( (b - a) / (N2 - N1) ))
  if [ -n "${BENCH_STRACE:-}" ]; then
    a=$(syscalls "$bin" "$N1")
    b=$(syscalls "$bin" "$N2")
    printf ' %14s' "$(echo "$a $b" | awk -v d=$((N2 - N1)) '{ printf "%.2f", ($2 - $1) / d }')"
  fi
  printf '\n'
done

#!/bin/sh
# Instructions per echo call over stdio, counted by callgrind: repeatable on a
# busy machine, where the timed benchmarks are not (bench/README.md). Each
# argument is a luamcp binary (a build tree's, which serves that tree's lua/
# and bench/plugins); the default is build/luamcp. Two runs per binary, of
# N1 and N2 calls, so that startup cancels out:
#   per call = (instructions(N2) - instructions(N1)) / (N2 - N1)
# BENCH_PLUGINS: more plugin directories of the tree, served beside
# bench/plugins (BENCH_PLUGINS=bench/plugins-mw: one pass-through middleware).
# BENCH_SANDBOX=1: the plugin directories served sandboxed (--sandbox DIR).
# Usage: sh bench/instructions.sh [BIN ...]    (BENCH_N1, BENCH_N2: 2000, 20000)
set -u
N1=${BENCH_N1:-2000}
N2=${BENCH_N2:-20000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$ROOT/build/luamcp"
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# initialize, initialized, then n tools/call echo requests
calls() {
  printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  i=1
  while [ "$i" -le "$1" ]; do
    printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}\n' "$i"
    i=$((i + 1))
  done
}
calls "$N1" >"$TMP/n1"
calls "$N2" >"$TMP/n2"

# instructions BIN INPUT: callgrind's total, after checking every call was answered
instructions() {
  tree=$(cd "$(dirname "$1")/.." && pwd)
  flag=--plugins
  [ -z "${BENCH_SANDBOX:-}" ] || flag=--sandbox
  extra=
  for d in ${BENCH_PLUGINS:-}; do extra="$extra $flag $tree/$d"; done
  # shellcheck disable=SC2086  # $extra: one word per flag and directory
  valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" "$1" $flag "$tree/bench/plugins" $extra \
    --log-level warning <"$2" >"$TMP/out" 2>"$TMP/err"
  want=$(wc -l <"$2")
  got=$(grep -c '"result"' "$TMP/out")
  [ "$got" -eq $((want - 1)) ] || { echo "instructions.sh: $1 answered $got of $((want - 1))" >&2; exit 1; }
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$TMP/err"
}

printf '%-50s %14s %14s\n' binary "per call" startup
for bin in "$@"; do
  a=$(instructions "$bin" "$TMP/n1")
  b=$(instructions "$bin" "$TMP/n2")
  per=$(( (b - a) / (N2 - N1) ))
  printf '%-50s %14d %14d\n' "$bin" "$per" $((a - per * N1))
done

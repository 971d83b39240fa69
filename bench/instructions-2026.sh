#!/bin/sh
# Instructions per 2026-07-28 (stateless) tools/call echo, counted by
# callgrind (bench/README.md, "Gateway"): what a luamcp upstream spends on a
# mount's request. Each line carries the _meta a mount sends (lua/mcp/
# client.lua, meta_raw: the protocol version, the client's capabilities and
# info); no initialize. All lines are written at once. Two runs per binary, of
# N1 and N2 calls, so that startup cancels out:
#   per call = (instructions(N2) - instructions(N1)) / (N2 - N1)
# BENCH_HTTP=1: the same over HTTP instead (bench/http-driver --stateless
# --scenario latency: one keep-alive connection, one request at a time; the
# driver's _meta, the version and empty client capabilities); with
# BENCH_SESSION=1 too, a 2025-06-18 session's calls instead, for comparison.
# Each argument is a luamcp binary (a build tree's: it serves that tree's
# bench/plugins); the default is build/luamcp.
# Usage: sh bench/instructions-2026.sh [BIN ...]    (BENCH_N1, BENCH_N2: 1000, 5000)
set -u
N1=${BENCH_N1:-1000}
N2=${BENCH_N2:-5000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$ROOT/build/luamcp"
command -v valgrind >/dev/null || { echo "instructions-2026.sh: valgrind is not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

META='{"io.modelcontextprotocol/clientCapabilities":{"roots":{},"elicitation":{},"sampling":{}},"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"luamcp","version":"0.1.0"}}'

# n tools/call echo requests as a mount writes them
calls() {
  i=1
  while [ "$i" -le "$1" ]; do
    printf '{"jsonrpc":"2.0","id":%d,"params":{"arguments":{"text":"hello"},"name":"echo","_meta":%s},"method":"tools/call"}\n' "$i" "$META"
    i=$((i + 1))
  done
}

if [ -n "${BENCH_HTTP:-}" ]; then
  DRV="$TMP/http-driver"
  ${CC:-cc} -O2 -Wall -o "$DRV" "$ROOT/bench/http-driver.c" -lm || exit 1
fi

# instructions BIN N: callgrind's total, after checking every call was answered
instructions() {
  tree=$(cd "$(dirname "$1")/.." && pwd)
  if [ -n "${BENCH_HTTP:-}" ]; then
    port=$((20000 + $$ % 20000))
    stateless=--stateless
    [ -z "${BENCH_SESSION:-}" ] || stateless=
    # shellcheck disable=SC2086  # $stateless: one flag or none
    "$DRV" --addr "127.0.0.1:$port" $stateless --scenario latency --warmup 0 --count "$2" \
      --max-seconds 100000 --timeout 60 -- valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" --log-file="$TMP/err" \
      "$1" --plugins "$tree/bench/plugins" --http "127.0.0.1:$port" --log-level warning \
      >"$TMP/out" 2>/dev/null ||
      { echo "instructions-2026.sh: $1: the driver failed" >&2; exit 1; }
    got=$(sed -n 's/^http_lat_n \([0-9]*\).*/\1/p' "$TMP/out")
    errors=$(sed -n 's/^http_lat_errors \([0-9]*\).*/\1/p' "$TMP/out")
    [ "$got" = "$2" ] && [ "$errors" = 0 ] ||
      { echo "instructions-2026.sh: $1 answered ${got:-0} of $2 (${errors:-?} errors)" >&2; exit 1; }
    sleep 1                          # callgrind writes its total as the server exits
  else
    calls "$2" >"$TMP/in"
    valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" --log-file="$TMP/err" "$1" \
      --plugins "$tree/bench/plugins" --log-level warning <"$TMP/in" >"$TMP/out" 2>/dev/null
    got=$(grep -c '"text":"hello"' "$TMP/out")
    [ "$got" -eq "$2" ] || { echo "instructions-2026.sh: $1 answered $got of $2" >&2; exit 1; }
  fi
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$TMP/err"
}

printf '%-50s %14s\n' binary "per call"
for bin in "$@"; do
  a=$(instructions "$bin" "$N1")
  b=$(instructions "$bin" "$N2")
  printf '%-50s %14d\n' "$bin" $(( (b - a) / (N2 - N1) ))
done

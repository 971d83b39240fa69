# The many-instances rows of `make bench`, sourced by bench/run.sh after the
# Streamable HTTP half (it uses run.sh's variables: OUT, RES, ROOT,
# LUAMCP_BIN, LUAMCP_OK, DRV_PIN/SRV_PIN, PIN, HTTP_PORT, HTTP_CONNS,
# HTTP_SECONDS, HTTP_WARMUP and note/ratio/fmt).  Stateless 2026-07-28
# tools/call echo (http-driver --stateless) straight to one luamcp instance,
# the reference, then through HAProxy running deploy/haproxy.cfg itself with
# 1 and 2 instances behind it.  In the HAProxy rows the driver spawns haproxy,
# so "server CPU per call" there is HAProxy's own cost per request.  See
# bench/README.md, "Many instances (HAProxy)".

HAPROXY=$(command -v haproxy || { [ -x /usr/sbin/haproxy ] && echo /usr/sbin/haproxy; })
if [ "$LUAMCP_OK" != 1 ]; then
  note "no luamcp: the HAProxy rows are skipped"
  return 0
fi
if [ -z "$HAPROXY" ]; then
  note "haproxy not found: the HAProxy rows are skipped (sh scripts/deps.sh installs it)"
  return 0
fi
[ -x "$OUT/http-driver" ] || $CC -O2 -Wall -o "$OUT/http-driver" bench/http-driver.c -lm \
  || { note "cannot build the HTTP driver"; return 0; }

rm -f "$RES"/cluster-*
CL_DIR=$(mktemp -d "${TMPDIR:-/tmp}/luamcp-bench-cluster.XXXXXX") || return 0
CL_PIDS=""
CL_PORT=$((HTTP_PORT + 200))     # clear of run-http.sh's ports
CL_LOAD="--scenario echo --conns $HTTP_CONNS --depth 1 --seconds $HTTP_SECONDS --warmup-seconds $HTTP_WARMUP"

cl_next_port() { CL_PORT=$((CL_PORT + 1)); }

# Start n instances in the background (on the server's cpu, like the
# server of the other rows), each on a fresh port, and wait until each says
# it listens; LUAMCP_1.. are exported for haproxy.
cl_start() { # n
  i=1
  while [ "$i" -le "$1" ]; do
    cl_next_port
    err=$RES/cluster-$1-instance$i.err
    # shellcheck disable=SC2086
    $SRV_PIN "$LUAMCP_BIN" --http "127.0.0.1:$CL_PORT" --plugins "$ROOT/bench/plugins" \
      --log-level info 2>"$err" </dev/null &
    CL_PIDS="$CL_PIDS $!"
    export "LUAMCP_$i=127.0.0.1:$CL_PORT"
    t=0
    until grep -q "listening on" "$err" 2>/dev/null; do
      t=$((t + 1)); [ $t -gt 200 ] && { note "instance $i did not listen: see $err"; break; }
      sleep 0.05
    done
    i=$((i + 1))
  done
}

cl_stop() {
  # shellcheck disable=SC2086
  [ -n "$CL_PIDS" ] && { kill $CL_PIDS 2>/dev/null; wait $CL_PIDS 2>/dev/null; }
  CL_PIDS=""
  unset LUAMCP_1 LUAMCP_2
}

# reference: the driver straight to one instance (it spawns the instance)
note "cluster: direct, 1 instance"
cl_next_port
# shellcheck disable=SC2086
timeout -k 5 120 $DRV_PIN "$OUT/http-driver" --addr "127.0.0.1:$CL_PORT" --stateless $CL_LOAD -- \
  $SRV_PIN "$LUAMCP_BIN" --http "127.0.0.1:$CL_PORT" --plugins "$ROOT/bench/plugins" --log-level warning \
  >"$RES/cluster-direct.txt" 2>"$RES/cluster-direct.err" \
  || note "cluster direct failed (exit $?): see $RES/cluster-direct.err"

# through HAProxy: the instances first, then the driver spawns haproxy on the
# front port (env execs haproxy: the driver's child is haproxy itself)
for n in 1 2; do
  note "cluster: haproxy + $n instance(s)"
  cl_start $n
  cl_next_port
  # shellcheck disable=SC2086
  timeout -k 5 120 $DRV_PIN "$OUT/http-driver" --addr "127.0.0.1:$CL_PORT" --stateless $CL_LOAD -- \
    $SRV_PIN env LUAMCP_HAPROXY_DIR="$CL_DIR" LUAMCP_BIND="127.0.0.1:$CL_PORT" \
    "$HAPROXY" -db -f "$ROOT/deploy/haproxy.cfg" \
    >"$RES/cluster-haproxy$n.txt" 2>"$RES/cluster-haproxy$n.err" \
    || note "cluster haproxy + $n failed (exit $?): see $RES/cluster-haproxy$n.err"
  cl_stop
done
rm -rf "$CL_DIR"

cget() { # run key -> value, or empty
  awk -v k="$2" '$1 == k { v = $2 } END { if (v != "") print v }' "$RES/cluster-$1.txt" 2>/dev/null
}

{
  echo
  echo "luamcp behind HAProxy (deploy/haproxy.cfg)  $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "haproxy:      $("$HAPROXY" -v | head -1)"
  echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cpus"
  if [ "$PIN" = 1 ]; then
    echo "pinning:      driver on cpu 0; luamcp and haproxy on cpu 1 (with 2 instances, three processes share it)"
  else
    echo "pinning:      none: the driver, haproxy and the instances compete for $(nproc) cpus"
  fi
  echo "load:         stateless 2026-07-28 tools/call echo, $HTTP_CONNS keep-alive connections x 1; ${HTTP_WARMUP}s warm-up, 3 rounds of ${HTTP_SECONDS}s (median)"
  echo
  printf '%-34s %10s %10s %14s %8s\n' scenario calls/s "vs direct" "CPU/call (us)" errors
  d=$(cget direct http_echo_calls_per_s)
  crow() { # label run whose-cpu
    v=$(cget "$2" http_echo_calls_per_s)
    printf '%-34s %10s %10s %14s %8s\n' "$1" "$(fmt "$v")" "$(ratio "$v" "$d")" \
      "$(fmt "$(cget "$2" http_echo_server_cpu_us_per_call)") $3" "$(fmt "$(cget "$2" http_echo_errors)")"
  }
  crow "direct, 1 instance (reference)" direct "luamcp "
  crow "haproxy + 1 instance" haproxy1 "haproxy"
  crow "haproxy + 2 instances" haproxy2 "haproxy"
  echo
  echo "CPU/call: the spawned process's user+system time / calls answered: luamcp's own in the"
  echo "  direct row, HAProxy's own (its per-request cost) in the others. On 2 cpus the second"
  echo "  instance adds no cpu, only a process to schedule: the 2-instance row measures HAProxy's"
  echo "  round-robin and the sharing, not scaling. bench/README.md projects 16 cores and more hosts."
  echo "raw results: $RES/cluster-*"
} | tee -a "$OUT/report.txt"

#!/bin/sh
# make soak: REQUESTS (default 10,000,000) over stdio, then over Streamable
# HTTP, one in ten cancelled; RSS, fds and p99 per window.
# Figures go to $BUILD/bench/soak-*.txt; see bench/README.md.
set -e
BUILD=${BUILD:-build}
REQUESTS=${REQUESTS:-10000000}
OUT="$BUILD/bench"
LUAMCP_BIN=${LUAMCP_BIN:-$BUILD/luamcp}
mkdir -p "$OUT"
cc -O2 -Wall -o "$OUT/driver" bench/driver.c -lm
cc -O2 -Wall -o "$OUT/http-driver" bench/http-driver.c -lm
echo "soak: $REQUESTS requests over stdio (one in ten cancelled)"
"$OUT/driver" --scenario soak --count "$REQUESTS" --timeout 60 -- \
  "$LUAMCP_BIN" --plugins bench/plugins --log-level warning | tee "$OUT/soak-stdio.txt"
port=${SOAK_HTTP_PORT:-28990}
echo "soak: $REQUESTS requests over Streamable HTTP, 8 connections (one in ten cancelled)"
DRIVER_DUMP="$OUT/soak" "$OUT/http-driver" --addr "127.0.0.1:$port" --scenario soak --conns 8 --depth 1 \
  --requests "$REQUESTS" --cancel-every 10 --sample-ms 10000 --warmup-seconds 5 -- \
  "$LUAMCP_BIN" --http "127.0.0.1:$port" --plugins bench/plugins --log-level warning \
  | tee "$OUT/soak-http.txt"

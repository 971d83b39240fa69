#!/bin/sh
# Install the Debian 12 packages luamcp needs to build and test.
# Idempotent and quiet when nothing is missing.
set -e
# libssl-dev: libcrypto (crypto.c). clang, libfuzzer-14-dev: `make fuzz`.
# prometheus: spec/metrics_spec.lua scrapes /metrics with it (and promtool).
# stress: `make flake STRESS=1`. redis-server, libhiredis-dev, haproxy: many
# instances (--store, deploy/haproxy.cfg). iproute2: spec/sandbox_dns_spec.lua's
# network namespace (ip). zlib1g-dev: luamcp pack's zip (src/util/zip.c).
# chromium, fonts-dejavu-core: the console's and MCP Apps' specs drive a real
# browser (puppeteer-core from npm).
PKGS="build-essential cmake pkg-config liblua5.4-dev lua5.4 libuv1-dev libjansson-dev \
libhttp-parser-dev libcurl4-openssl-dev libsqlite3-dev ca-certificates lua-cjson lua-busted lua-luv \
libssl-dev clang libfuzzer-14-dev prometheus stress redis-server libhiredis-dev haproxy iproute2 zlib1g-dev \
chromium fonts-dejavu-core"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing:$missing" >&2
if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: apt-get is not available; install these packages by hand:$missing" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "deps: not root and no sudo; install these packages by hand:$missing" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null

#!/bin/sh
# valgrind memcheck (issue 11): every C unit test, then a subset of the specs
# with the server itself under valgrind. Slow (the server runs 20-50x slower),
# so not part of `make test`: `make memcheck`. Exit 1 on any error or
# definite leak, naming the log that has it.
set -e
BUILD=${1:-build}
SPECS=${MEMCHECK_SPECS:-"spec/tools_spec.lua spec/jsonrpc_spec.lua spec/lifecycle_spec.lua spec/stdio_spec.lua"}
VG="valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite"
ROOT=$(pwd)
LOGS="$ROOT/$BUILD/memcheck"
rm -rf "$LOGS" && mkdir -p "$LOGS"

for t in "$BUILD"/test_*; do
  [ -x "$t" ] || continue
  $VG --log-file="$LOGS/$(basename "$t").log" "$t" >/dev/null
  echo "memcheck: $(basename "$t"): clean"
done

# The server under valgrind, one log per process; specs get generous waits.
wrapper="$LOGS/luamcp"
cat >"$wrapper" <<WRAP
#!/bin/sh
exec $VG --log-file=$LOGS/luamcp.%p.log $ROOT/$BUILD/luamcp "\$@"
WRAP
chmod +x "$wrapper"
# shellcheck disable=SC2086
LUAMCP_BIN="$wrapper" LUAMCP_SPEC_WAIT=120 lua5.4 "$(command -v busted)" $SPECS || {
  echo "memcheck: specs failed under valgrind" >&2; exit 1; }
bad=$(grep -l -E 'ERROR SUMMARY: [1-9]|definitely lost: [1-9]' "$LOGS"/*.log 2>/dev/null || true)
if [ -n "$bad" ]; then
  echo "memcheck: errors in: $bad" >&2
  exit 1
fi
echo "memcheck: $(ls "$LOGS"/luamcp.*.log | wc -l) server runs under valgrind: clean"

#!/bin/sh
# The cycle check fails on a cycle: two objects that call each other (a.c,
# b.c) must fail it and be named; a third that only calls down must not.
set -eu
CC=${CC:-cc}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf 'int b(int);\nint a(int x) { return x ? b(x - 1) : 0; }\n' >"$dir/a.c"
printf 'int a(int);\nint b(int x) { return x ? a(x - 1) : 1; }\n' >"$dir/b.c"
printf 'int a(int);\nint c(void) { return a(3); }\n' >"$dir/c.c"
for f in a b c; do $CC -c -o "$dir/$f.c.o" "$dir/$f.c"; done
here=$(dirname "$0")
if out=$(sh "$here/cycles.sh" "$dir"); then
	echo "cycles.sh passed a cycle:"; echo "$out"; exit 1
fi
echo "$out" | grep -q '^FAIL cycle: {a b}$' || { echo "cycle {a b} not named:"; echo "$out"; exit 1; }
echo "$out" | grep -q '^  a -> b: b$' || { echo "edge a -> b not shown:"; echo "$out"; exit 1; }
rm "$dir/b.c.o"
sh "$here/cycles.sh" "$dir" >/dev/null || { echo "cycles.sh failed with no cycle"; exit 1; }
echo "cycles.sh: fails on a cycle and names it; passes without one"

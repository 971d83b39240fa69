#!/bin/sh
# Fails on any call cycle between the server's C files. From `nm` of the
# object files: file A calls file B when A uses a symbol B defines. Calls must
# run one way (docs/development/ARCHITECTURE.md): where a lower file reaches
# up, it calls a function pointer the higher one registered, which nm does
# not see. Prints each strongly connected component and the symbols that
# tie it. Usage: cycles.sh OBJDIR (the luamcp target's CMakeFiles/luamcp.dir).
set -eu
dir=${1:?usage: cycles.sh OBJDIR}
NM=${NM:-nm}

# Known cycles still to break, one per line, members sorted and joined by
# spaces (as this script prints them). Empty: every cycle fails the check.
ALLOW=''

objs=$(find "$dir" -name '*.c.o' | sort)
[ -n "$objs" ] || { echo "cycles.sh: no object files under $dir" >&2; exit 2; }

for o in $objs; do
	f=${o#"$dir"/}; f=${f%.c.o}; f=${f##*/}
	$NM "$o" | awk -v f="$f" '
		$1 == "U" { print "U", f, $2; next }
		NF == 3 && $2 ~ /^[A-TV-Z]$/ { print "D", f, $3 }'
done | awk -v allow="$ALLOW" '
	$1 == "D" { def[$3] = $2; next }
	{ use[++n] = $2 SUBSEP $3 }
	END {
		for (i = 1; i <= n; i++) {
			split(use[i], p, SUBSEP); a = p[1]; s = p[2]
			if (!(s in def) || def[s] == a) continue
			b = def[s]
			if (!((a, b) in edge)) { out[a] = out[a] " " b; nodes[a]; nodes[b] }
			edge[a, b] = edge[a, b] " " s
		}
		# Tarjan, iterative over an explicit stack.
		idx = 0; sp = 0; bad = 0; ncomp = 0
		for (v in nodes) if (!(v in index_)) strong(v)
		split(allow, ok, "\n")
		for (c = 1; c <= ncomp; c++) {
			allowed = 0
			for (k in ok) if (ok[k] == comp[c]) allowed = 1
			printf "%s cycle: {%s}\n", allowed ? "allowed" : "FAIL", comp[c]
			m = split(comp[c], mem, " ")
			for (x = 1; x <= m; x++) for (y = 1; y <= m; y++)
				if ((mem[x], mem[y]) in edge)
					printf "  %s -> %s:%s\n", mem[x], mem[y], edge[mem[x], mem[y]]
			if (!allowed) bad++
			else seen[comp[c]] = 1
		}
		for (k in ok) if (ok[k] != "" && !(ok[k] in seen)) {
			printf "FAIL stale allow-list entry: {%s} is no cycle now: drop it\n", ok[k]; bad++
		}
		if (bad) { printf "%d failure(s): call cycles between the server'"'"'s C files\n", bad; exit 1 }
		printf "no call cycles but the allowed (%d files)\n", length(nodes)
	}
	function strong(v,    w, list, k, m, i, j, t, names, tmp) {
		index_[v] = low[v] = ++idx; st[++sp] = v; on[v] = 1
		m = split(out[v], list, " ")
		for (k = 1; k <= m; k++) {
			w = list[k]
			if (!(w in index_)) { strong(w); if (low[w] < low[v]) low[v] = low[w] }
			else if (on[w] && index_[w] < low[v]) low[v] = index_[w]
		}
		if (low[v] != index_[v]) return
		j = 0
		do { w = st[sp--]; on[w] = 0; names[++j] = w } while (w != v)
		if (j < 2) return
		for (i = 2; i <= j; i++) {       # sort the members
			t = names[i]
			for (k = i - 1; k >= 1 && names[k] > t; k--) names[k + 1] = names[k]
			names[k + 1] = t
		}
		tmp = names[1]; for (i = 2; i <= j; i++) tmp = tmp " " names[i]
		comp[++ncomp] = tmp
	}'

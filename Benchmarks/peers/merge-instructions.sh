#!/usr/bin/env bash
# Instructions one merge of a whole encoded history takes, Quire beside Yrs
# and Loro, counted by valgrind's callgrind: unlike times, the counts do not
# depend on what else the machine runs. (They are not times either: code
# that misses the cache more runs fewer instructions per second.)
#
# Usage: Benchmarks/peers/merge-instructions.sh [--cache] TRACE...   (from the
#        repository root, after `swift build -c release --product quire-bench`;
#        needs valgrind)
#
# --cache: callgrind also simulates the caches and the table shows, beside
# the instructions, the misses of the level-1 instruction and data caches
# (thousands): why equal counts can take unequal times.
#
# Quire: callgrind counts TraceReplay.merge (a fresh replica applying the
# whole encoded history) during `quire-bench trace --runs 1`, which merges
# twice (warm-up and timed run): half is one merge. (Not
# Document.applyEncodedRun: a concurrent trace's replay calls it too, as
# its replicas exchange changes.)
# Peers: each writes its encoded history once (`peers.py encode`), then a
# process applies it to fresh docs once and another three times
# (`peers.py merge-file`); half the difference is one merge, without
# Python's start-up and imports. Their docs take random client ids (Yrs) or
# peer ids (Loro), whose varints differ in size: a peer's count moves by a few
# percent from one encoding to the next.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
command -v valgrind > /dev/null || { echo "merge-instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
[ -x .build/release/quire-bench ] || { echo "merge-instructions.sh: build first: swift build -c release --product quire-bench" >&2; exit 1; }
cache=""
if [ "${1:-}" = "--cache" ]; then cache="--cache-sim=yes"; shift; fi
[ $# -gt 0 ] || { echo "usage: Benchmarks/peers/merge-instructions.sh [--cache] TRACE..." >&2; exit 64; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Prints instructions, level-1 instruction misses and level-1 data misses
# (reads and writes); without --cache, the misses are 0.
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null $cache "$@" 2>&1 \
        | awk '/Collected/ { print $4, $7 + 0, $8 + $9 }'
}
# Half of `new` minus `old`, field by field: one merge of two (Quire) or of
# the difference between three and one (the peers).
half() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); print (y[1] - x[1]) / 2, (y[2] - x[2]) / 2, (y[3] - x[3]) / 2 }'; }

if [ -n "$cache" ]; then
    echo "one merge: millions of instructions, thousands of L1 instruction and data cache misses"
    printf '%-20s %9s %9s %9s  %9s %9s %9s  %9s %9s %9s\n' trace quire I1 D1 yrs I1 D1 loro I1 D1
else
    echo "millions of instructions for one merge"
    printf '%-20s %9s %9s %9s %7s %7s\n' trace quire yrs loro ÷yrs ÷loro
fi
for trace in "$@"; do
    name="$(basename "$trace")"; name="${name%%.json*}"
    quire=$(half "0 0 0" "$(count --toggle-collect='$s13QuireBenchKit11TraceReplayO5mergey*' \
        .build/release/quire-bench trace "$trace" --runs 1)")
    row=("$quire")
    for peer in yrs loro; do
        "$here/run.sh" encode "$trace" --peer "$peer" --out "$work/$name.$peer"
        once=$(count "$here/.venv/bin/python" "$here/peers.py" merge-file "$work/$name.$peer" --peer "$peer" --count 1)
        thrice=$(count "$here/.venv/bin/python" "$here/peers.py" merge-file "$work/$name.$peer" --peer "$peer" --count 3)
        row+=("$(half "$once" "$thrice")")
    done
    awk -v n="$name" -v q="${row[0]}" -v y="${row[1]}" -v l="${row[2]}" -v cache="$cache" 'BEGIN {
        split(q, Q, " "); split(y, Y, " "); split(l, L, " ")
        if (cache != "")
            printf "%-20s %9.1f %9.1f %9.1f  %9.1f %9.1f %9.1f  %9.1f %9.1f %9.1f\n", n,
                Q[1] / 1e6, Q[2] / 1e3, Q[3] / 1e3, Y[1] / 1e6, Y[2] / 1e3, Y[3] / 1e3, L[1] / 1e6, L[2] / 1e3, L[3] / 1e3
        else
            printf "%-20s %9.1f %9.1f %9.1f %7.2f %7.2f\n", n, Q[1] / 1e6, Y[1] / 1e6, L[1] / 1e6, Q[1] / Y[1], Q[1] / L[1]
    }'
done

#!/usr/bin/env bash
# Instructions one merge of a whole encoded history takes, Quire beside Yrs
# and Loro, counted by valgrind's callgrind: unlike times, the counts do not
# depend on what else the machine runs. (They are not times either: code
# that misses the cache more runs fewer instructions per second.)
#
# Usage: Benchmarks/peers/merge-instructions.sh TRACE...   (from the repository root,
#        after `swift build -c release --product quire-bench`; needs valgrind)
#
# Quire: callgrind counts Document.applyEncodedRun during `quire-bench trace
# --runs 1`, which merges twice (warm-up and timed run): half is one merge.
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
[ $# -gt 0 ] || { echo "usage: Benchmarks/peers/merge-instructions.sh TRACE..." >&2; exit 64; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | awk '/Collected/ { print $4 }'; }

echo "millions of instructions for one merge"
printf '%-20s %9s %9s %9s %7s %7s\n' trace quire yrs loro ÷yrs ÷loro
for trace in "$@"; do
    name="$(basename "$trace")"; name="${name%%.json*}"
    quire=$(( $(count --toggle-collect='$s9QuireCore8DocumentV15applyEncodedRun*' \
        .build/release/quire-bench trace "$trace" --runs 1) / 2 ))
    row=("$quire")
    for peer in yrs loro; do
        "$here/run.sh" encode "$trace" --peer "$peer" --out "$work/$name.$peer"
        once=$(count "$here/.venv/bin/python" "$here/peers.py" merge-file "$work/$name.$peer" --peer "$peer" --count 1)
        thrice=$(count "$here/.venv/bin/python" "$here/peers.py" merge-file "$work/$name.$peer" --peer "$peer" --count 3)
        row+=($(( (thrice - once) / 2 )))
    done
    awk -v n="$name" -v q="${row[0]}" -v y="${row[1]}" -v l="${row[2]}" \
        'BEGIN { printf "%-20s %9.1f %9.1f %9.1f %7.2f %7.2f\n", n, q / 1e6, y / 1e6, l / 1e6, q / y, q / l }'
done

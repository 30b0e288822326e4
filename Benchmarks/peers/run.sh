#!/usr/bin/env bash
# Run peers.py (Yrs via pycrdt, Loro via loro) in a private virtualenv.
# Creates Benchmarks/peers/.venv on first use and (re)installs the pinned
# requirements only when requirements.txt changes; silent otherwise.
# Usage: Benchmarks/peers/run.sh trace FILE... [--runs N] [--json]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
req="$here/requirements.txt"
stamp="$venv/.requirements.installed"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
    echo "peers: creating virtualenv in $venv" >&2
    "$python" -m venv "$venv"
fi
if [ ! -f "$stamp" ] || ! cmp -s "$req" "$stamp"; then
    echo "peers: installing $(grep -v '^#' "$req" | tr '\n' ' ')" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
    cp "$req" "$stamp"
fi
exec "$venv/bin/python" "$here/peers.py" "$@"

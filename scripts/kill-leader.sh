#!/usr/bin/env bash
# scripts/kill-leader.sh TOPIC PARTITION — SIGKILL whichever node of the local
# cluster (scripts/cluster.sh) leads that partition right now.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/kill-leader.sh TOPIC PARTITION" >&2; exit 2; }
HERE="$(cd "$(dirname "$0")" && pwd)"
leader="$("$HERE/cluster.sh" leader "$1" "$2")"
echo "kill-leader.sh: $1/$2 is led by node $leader"
exec "$HERE/cluster.sh" kill "$leader"

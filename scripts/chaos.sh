#!/usr/bin/env bash
# Chaos run: a local 3-node cluster of freshly built paymentlog processes under
# load (idempotent acks=all producers, continuous consumers) while a nemesis
# SIGKILLs random nodes, partition leaders and the active controller, pauses
# nodes past the session timeout, tears the tails of killed nodes' segments
# and (as root, with iproute2) cuts nodes off the network in their own
# namespaces. After healing, a checker reads every partition back through the
# cluster and from every replica's files and reports lost writes,
# inconsistent offsets, duplicates, consumer skips/regressions, replica
# divergence below the HW, and the producers' unavailability windows.
#
#   scripts/chaos.sh --duration 10m [--seed N]     faults for 10 minutes
#   scripts/chaos.sh [--per-kind 20] [--seed N]    one deck: N faults of every kind
#   scripts/chaos.sh --help                        every flag (kinds, session timeout, load)
#
# The seed is printed first; the same seed replays the same schedule of faults.
# Exit status 0 only when the checker found no anomaly; on failure the cluster
# directory (data, node logs) is kept and named in the report.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PAYMENTLOG_BIN:-}"
if [[ -z "$BIN" ]]; then
	BIN="$(mktemp -d)/paymentlog"
	trap 'rm -rf "$(dirname "$BIN")"' EXIT
	(cd "$ROOT" && go build -o "$BIN" .)
fi
if [[ "${1:-}" == "--help" || "${1:-}" == "-h" ]]; then
	exec "$BIN" chaos --help
fi
"$BIN" chaos "$@"

#!/usr/bin/env bash
# Local 3-node paymentlog cluster: UDP ports 7101-7103 on 127.0.0.1 (or
# $PAYMENTLOG_CLUSTER_PORT and the next two: set it for every command, before
# the first up, since the metadata log records the addresses; `clean` to
# change them), data under
# ./data/nodeN, logs, audit trails and pid files beside it (./data/nodeN.log,
# ./data/nodeN.audit.log: who changed what, one JSON line each; ./data/nodeN.pid),
# mutual-TLS certificates in ./data/certs.
#
#   scripts/cluster.sh up              build ./paymentlog, create certificates (once; node
#                                      certificates without a node role, from older builds,
#                                      are re-issued), start
#                                      the nodes, wait until all 3 are alive, create topic
#                                      "payments" (3 partitions, RF 3, min ISR 2) if absent
#   scripts/cluster.sh down            stop every node (SIGTERM: controlled shutdown; SIGKILL
#                                      after PAYMENTLOG_STOP_TIMEOUT seconds, default 20)
#   scripts/cluster.sh clean           down, then delete ./data
#   scripts/cluster.sh status          processes, then (when one runs) `paymentlog cluster
#                                      status` and the payments topic
#   scripts/cluster.sh kill N          SIGKILL node N
#   scripts/cluster.sh pause N         SIGSTOP node N      resume N   SIGCONT node N
#   scripts/cluster.sh restart N       stop node N if running, start it, wait until alive
#   scripts/cluster.sh roll            rolling restart of every node, the active controller
#                                      last: wait until the node is safe to stop (its
#                                      /safe-to-stop: no partition would fall below min ISR,
#                                      the metadata quorum keeps a majority), restart it, wait
#                                      until it is ready (/readyz: back in every ISR)
#   scripts/cluster.sh logs N [-f]     the last lines of node N's log (follow with -f)
#   scripts/cluster.sh leader TOPIC P  print the id of partition P's current leader
#   scripts/cluster.sh reload N        SIGHUP node N: it reloads its certificate and ca.crt
#   scripts/cluster.sh rotate-certs    rotate the CA and every certificate of the running
#                                      nodes without a restart: cert rotate-ca, reload all,
#                                      reissue every certificate, reload all, cert retire-ca,
#                                      reload all (clients reload within a minute, or at
#                                      once when a node refuses their old certificate)
#   scripts/cluster.sh revoke-cert NAME  revoke the certificate data/certs/NAME.crt (cert revoke:
#                                      data/certs/revoked.txt) and reload every running node,
#                                      which then refuses it and closes its connections
#   scripts/cluster.sh env             print exports that point client commands at the cluster:
#                                      eval "$(scripts/cluster.sh env)"
#
# Environment: PAYMENTLOG_BIN (binary; default ./paymentlog, rebuilt by up and
# restart unless PAYMENTLOG_NO_BUILD=1), PAYMENTLOG_CLUSTER_DIR (default ./data),
# PAYMENTLOG_READY_TIMEOUT (seconds, default 60), PAYMENTLOG_NODE_ARGS (extra
# `node start` flags, e.g. "--fsync never"), PAYMENTLOG_RACKS (each node's
# `--rack`, in node order: "az1,az2,az1" puts nodes 1 and 3 in az1; an empty
# entry starts that node without one; applies to up and restart). Each node
# runs with GOMAXPROCS at its share of the machine (the CPUs / 3, at least 1),
# as `paymentlog bench` runs its own local nodes; set GOMAXPROCS to override.
#
# Usage errors (a node other than 1, 2 or 3, an unknown command) exit with
# status 2 and one line on stderr; a failure (e.g. kill of a node that is not
# running) with status 1.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${PAYMENTLOG_BIN:-$ROOT/paymentlog}"
DIR="${PAYMENTLOG_CLUSTER_DIR:-$ROOT/data}"
CERTS="$DIR/certs"
NODES="1 2 3"
HOST=127.0.0.1
PORT="${PAYMENTLOG_CLUSTER_PORT:-7101}"
case "$PORT" in '' | *[!0-9]*) echo "cluster.sh: PAYMENTLOG_CLUSTER_PORT must be a port number (got '$PORT')" >&2; exit 1 ;; esac
CONTROLLERS="1@$HOST:$PORT,2@$HOST:$((PORT + 1)),3@$HOST:$((PORT + 2))"
BOOTSTRAP="$HOST:$PORT,$HOST:$((PORT + 1)),$HOST:$((PORT + 2))"
READY_TIMEOUT="${PAYMENTLOG_READY_TIMEOUT:-60}"
STOP_TIMEOUT="${PAYMENTLOG_STOP_TIMEOUT:-20}"

die() { echo "cluster.sh: $*" >&2; exit 1; }
# usage_die: a usage error, one line on stderr and exit status 2 (as paymentlog's own).
usage_die() { echo "cluster.sh: $*" >&2; exit 2; }
say() { echo "cluster.sh: $*"; }

client_args() { echo --bootstrap "$BOOTSTRAP" --tls-dir "$CERTS" --cert-name client; }

# RACKS: PAYMENTLOG_RACKS split at commas, one entry per node (at most 3).
RACKS=()
if [ -n "${PAYMENTLOG_RACKS:-}" ]; then
	IFS=, read -r -a RACKS <<<"$PAYMENTLOG_RACKS"
	[ "${#RACKS[@]}" -le 3 ] || usage_die "PAYMENTLOG_RACKS names ${#RACKS[@]} racks for 3 nodes (got '$PAYMENTLOG_RACKS')"
fi

# NODE_PROCS: each node's GOMAXPROCS, its share of the machine's CPUs (three
# nodes share them), unless GOMAXPROCS is set.
NODE_PROCS="${GOMAXPROCS:-$(($(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) / 3))}"
[ "$NODE_PROCS" -ge 1 ] 2>/dev/null || NODE_PROCS=1

# rack_args N: node N's --rack flag from PAYMENTLOG_RACKS, or nothing.
rack_args() {
	local r="${RACKS[$(($1 - 1))]:-}"
	if [ -n "$r" ]; then echo --rack "$r"; fi
}

check_node() {
	case "${1:-}" in
	1 | 2 | 3) ;;
	*) usage_die "node must be 1, 2 or 3 (got '${1:-}')" ;;
	esac
}

pidfile() { echo "$DIR/node$1.pid"; }
logfile() { echo "$DIR/node$1.log"; }
auditfile() { echo "$DIR/node$1.audit.log"; }

# Each start appends this line to the node's log, so that a failed start
# shows its own lines, not the end of an earlier run.
START_MARK="=== cluster.sh: starting node"

# port_hint N: a suggestion when node N could not bind its port.
port_hint() {
	if run_log "$1" | grep -q "address already in use"; then
		printf '\n%s' "cluster.sh: another process holds $(addr "$1"); stop it, or move the cluster: scripts/cluster.sh clean, then export PAYMENTLOG_CLUSTER_PORT=8101 for this and every later cluster.sh command"
	fi
}

# run_log N: the last 20 lines of node N's log since its latest start.
run_log() {
	local f from
	f="$(logfile "$1")"
	from="$(grep -n "^$START_MARK" "$f" 2>/dev/null | tail -n 1 | cut -d: -f1)"
	tail -n +"${from:-1}" "$f" 2>/dev/null | tail -n 20
}
addr() { echo "$HOST:$((PORT + $1 - 1))"; }
# metrics_addr N: node N's /metrics and health checks: TCP, on the port
# number its QUIC listener has on UDP.
metrics_addr() { addr "$1"; }

# health N PATH: ask node N's health check PATH (/readyz, /safe-to-stop);
# prints the answer's body (one reason per line when it is not 200) and
# returns 0 on 200. Plain bash (/dev/tcp): no curl needed.
health() {
	local n="$1" path="$2" resp code
	resp="$(
		exec 2>/dev/null
		exec 3<>"/dev/tcp/$HOST/$((PORT + n - 1))" || exit 1
		printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$path" "$(metrics_addr "$n")" >&3
		timeout 5 cat <&3
	)" || { echo "no answer on $(metrics_addr "$n")"; return 1; }
	code="$(printf '%s\n' "$resp" | head -n 1 | cut -d ' ' -f 2)"
	printf '%s\n' "$resp" | tr -d '\r' | sed '1,/^$/d'
	[ "$code" = 200 ]
}

# wait_health N PATH WHAT: until node N's PATH answers 200, or die after
# READY_TIMEOUT seconds with its last reasons.
wait_health() {
	local n="$1" path="$2" what="$3" deadline out
	deadline=$(($(date +%s) + READY_TIMEOUT))
	until out="$(health "$n" "$path")"; do
		if [ "$(date +%s)" -ge "$deadline" ]; then
			die "node $n not $what after ${READY_TIMEOUT}s ($path): $(printf '%s' "$out" | tr '\n' ';')"
		fi
		[ -n "$(pid "$n")" ] || die "node $n exited; its last log lines since this start:
$(run_log "$n")"
		sleep 0.2
	done
}

# pid N: the node's pid if its process is alive (and is a paymentlog node), else empty.
pid() {
	local f p
	f="$(pidfile "$1")"
	[ -f "$f" ] || return 0
	p="$(cat "$f" 2>/dev/null || true)"
	[ -n "$p" ] || return 0
	if kill -0 "$p" 2>/dev/null && ps -p "$p" -o args= 2>/dev/null | grep -q -- "node start --id $1 "; then
		echo "$p"
	fi
}

# pstate N: running | paused | stopped
pstate() {
	local p s
	p="$(pid "$1")"
	[ -n "$p" ] || { echo stopped; return; }
	s="$(ps -p "$p" -o stat= 2>/dev/null || true)"
	case "$s" in
	T*) echo paused ;;
	*) echo running ;;
	esac
}

# reload N: SIGHUP node N and wait for its log to say how the reload went.
reload() {
	local p f before line
	p="$(pid "$1")"
	[ -n "$p" ] || die "node $1 is not running"
	f="$(logfile "$1")"
	before="$(grep -c "SIGHUP: TLS files" "$f" 2>/dev/null || true)"
	kill -HUP "$p"
	for _ in $(seq 1 100); do
		if [ "$(grep -c "SIGHUP: TLS files" "$f" 2>/dev/null || true)" -gt "${before:-0}" ]; then
			line="$(grep "SIGHUP: TLS files" "$f" | tail -n 1)"
			case "$line" in
			*"not reloaded"*) die "node $1 refused the new TLS files: $line" ;;
			*) say "node $1: $(echo "$line" | sed 's/.*msg="\([^"]*\)".*/\1/')" ;;
			esac
			return 0
		fi
		sleep 0.1
	done
	die "node $1 did not report its reload within 10 s (see $(logfile "$1"))"
}

# reload_running: reload every running node.
reload_running() {
	local n
	for n in $NODES; do
		if [ -n "$(pid "$n")" ]; then reload "$n"; fi
	done
}

build() {
	[ "${PAYMENTLOG_NO_BUILD:-0}" = 1 ] && [ -x "$BIN" ] && return 0
	say "building $BIN"
	(cd "$ROOT" && go build -o "$BIN" .) || die "go build failed"
}

certs() {
	mkdir -p "$CERTS"
	if [ ! -f "$CERTS/ca.crt" ]; then
		say "creating certificates in $CERTS"
		"$BIN" cert init --dir "$CERTS" >/dev/null || die "cert init failed"
	fi
	local n
	for n in $NODES; do
		if [ ! -f "$CERTS/node$n.crt" ]; then
			"$BIN" cert issue --dir "$CERTS" --name "node$n" --node-id "$n" --host "$HOST" >/dev/null ||
				die "cert issue node$n failed"
		elif ! "$BIN" cert check --dir "$CERTS" --name "node$n" --node-id "$n" >/dev/null 2>&1; then
			# Issued by a build older than certificate roles (or by hand):
			# nodes refuse to start without a node certificate for their id.
			say "re-issuing $CERTS/node$n.crt as a node certificate for node $n (it was not one)"
			"$BIN" cert issue --dir "$CERTS" --name "node$n" --node-id "$n" --host "$HOST" --force >/dev/null ||
				die "cert issue node$n failed"
		fi
	done
	if [ ! -f "$CERTS/client.crt" ]; then
		"$BIN" cert issue --dir "$CERTS" --name client --host "$HOST" >/dev/null || die "cert issue client failed"
	fi
}

start() {
	local n="$1" p
	p="$(pid "$n")"
	if [ -n "$p" ]; then
		say "node $n already running (pid $p)"
		return 0
	fi
	mkdir -p "$DIR/node$n"
	echo "$START_MARK $n $(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$(logfile "$n")"
	# shellcheck disable=SC2086,SC2046 # PAYMENTLOG_NODE_ARGS and rack_args are lists of flags
	GOMAXPROCS="$NODE_PROCS" nohup "$BIN" node start --id "$n" --addr "$(addr "$n")" --data-dir "$DIR/node$n" \
		--controllers "$CONTROLLERS" --tls-dir "$CERTS" --cert-name "node$n" --audit-log "$(auditfile "$n")" \
		--metrics-addr "$(metrics_addr "$n")" \
		$(rack_args "$n") ${PAYMENTLOG_NODE_ARGS:-} >>"$(logfile "$n")" 2>&1 </dev/null &
	echo $! >"$(pidfile "$n")"
	say "started node $n (pid $!, log $(logfile "$n"))"
}

# stop N: SIGTERM (controlled shutdown), SIGKILL after STOP_TIMEOUT seconds.
stop() {
	local n="$1" p i
	p="$(pid "$n")"
	[ -n "$p" ] || { rm -f "$(pidfile "$n")"; return 0; }
	kill -CONT "$p" 2>/dev/null || true
	kill -TERM "$p" 2>/dev/null || true
	for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$p" 2>/dev/null; then
		say "node $n did not stop within ${STOP_TIMEOUT}s; killing it"
		kill -KILL "$p" 2>/dev/null || true
	fi
	wait_gone "$p"
	rm -f "$(pidfile "$n")"
	say "stopped node $n"
}

wait_gone() {
	local i
	for ((i = 0; i < 100; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
}

status_json() {
	# shellcheck disable=SC2046
	"$BIN" cluster status --json $(client_args) --timeout 2s 2>/dev/null
}

# wait_alive IDS...: until cluster status shows every listed node alive and a controller.
wait_alive() {
	local deadline out n ok
	deadline=$(($(date +%s) + READY_TIMEOUT))
	while :; do
		out="$(status_json || true)"
		ok=1
		case "$out" in *'"controller_id":-1'* | '') ok=0 ;; esac
		for n in "$@"; do
			printf '%s' "$out" | grep -q "\"id\":$n,\"addr\":\"[^\"]*\",\"state\":\"alive\"" || ok=0
		done
		[ "$ok" = 1 ] && return 0
		if [ "$(date +%s)" -ge "$deadline" ]; then
			say "last cluster status: ${out:-<no answer>}"
			case "$out" in *'"controller_id":-1'*)
				say "no active controller: it needs 2 of the 3 nodes running; the nodes started stay up (scripts/cluster.sh up starts the others, down stops them)" ;;
			esac
			die "nodes $* not alive after ${READY_TIMEOUT}s (see $DIR/node*.log)"
		fi
		for n in "$@"; do
			[ -n "$(pid "$n")" ] || die "node $n exited; its last log lines since this start:
$(run_log "$n")$(port_hint "$n")"
		done
		sleep 0.2
	done
}

# wait_topic_ready TOPIC RF: until every partition has a leader and RF in-sync replicas.
wait_topic_ready() {
	local topic="$1" rf="$2" deadline out isr
	isr='"isr":\[[0-9][0-9]*'
	for ((i = 1; i < rf; i++)); do isr="$isr,[0-9][0-9]*"; done
	isr="$isr\]"
	deadline=$(($(date +%s) + READY_TIMEOUT))
	while :; do
		# shellcheck disable=SC2046
		out="$("$BIN" topic describe "$topic" --json $(client_args) --timeout 2s 2>/dev/null || true)"
		case "$out" in
		'' | *'"leader":-1'*) ;;
		*)
			[ "$(printf '%s' "$out" | grep -o '"isr":\[[^]]*\]' | grep -c "^$isr$")" = \
				"$(printf '%s' "$out" | grep -o '"partition":' | wc -l | tr -d ' ')" ] && return 0
			;;
		esac
		if [ "$(date +%s)" -ge "$deadline" ]; then
			say "topic $topic is not fully in sync after ${READY_TIMEOUT}s: ${out:-<no answer>}"
			return 1
		fi
		sleep 0.2
	done
}

leader() {
	local topic="$1" part="$2" out l
	# shellcheck disable=SC2046
	out="$("$BIN" topic describe "$topic" --json $(client_args) --timeout 5s)" || die "cannot describe topic $topic"
	l="$(printf '%s' "$out" | sed -n "s/.*\"partition\":$part,\"leader\":\(-\{0,1\}[0-9][0-9]*\).*/\1/p")"
	[ -n "$l" ] || die "topic $topic has no partition $part"
	[ "$l" -ge 0 ] || die "partition $topic/$part is offline (no leader)"
	echo "$l"
}

cmd="${1:-}"
shift || true
case "$cmd" in
up)
	build
	mkdir -p "$DIR"
	certs
	for n in $NODES; do start "$n"; done
	say "waiting for nodes 1 2 3 to be alive"
	wait_alive 1 2 3
	# shellcheck disable=SC2046
	"$BIN" topic create payments --partitions 3 --replication-factor 3 --min-insync-replicas 2 \
		--if-not-exists $(client_args) || die "cannot create topic payments"
	wait_topic_ready payments 3 || die "topic payments has no leader or an incomplete ISR"
	say "cluster is up; point client commands at it with:  eval \"\$(scripts/cluster.sh env)\""
	;;
down)
	for n in $NODES; do
		p="$(pid "$n")"
		if [ -n "$p" ]; then kill -CONT "$p" 2>/dev/null || true; fi
	done
	for n in $NODES; do stop "$n" & done
	wait
	;;
clean)
	"$0" down
	rm -rf "$DIR"
	say "removed $DIR"
	;;
status)
	for n in $NODES; do
		p="$(pid "$n")"
		echo "node $n: $(pstate "$n")${p:+ $p}"
	done
	if [ -z "$(pid 1)$(pid 2)$(pid 3)" ]; then
		say "no node of the cluster in $DIR is running (scripts/cluster.sh up starts it)"
		exit 0
	fi
	# shellcheck disable=SC2046
	"$BIN" cluster status $(client_args) --timeout 3s || true
	# shellcheck disable=SC2046
	"$BIN" topic describe payments $(client_args) --timeout 3s 2>/dev/null || true
	;;
kill)
	check_node "${1:-}"
	p="$(pid "$1")"
	[ -n "$p" ] || die "node $1 is not running"
	kill -KILL "$p"
	wait_gone "$p"
	rm -f "$(pidfile "$1")"
	say "killed node $1 (pid $p)"
	;;
pause)
	check_node "${1:-}"
	p="$(pid "$1")"
	[ -n "$p" ] || die "node $1 is not running"
	kill -STOP "$p"
	say "paused node $1 (pid $p)"
	;;
resume)
	check_node "${1:-}"
	p="$(pid "$1")"
	[ -n "$p" ] || die "node $1 is not running"
	kill -CONT "$p"
	say "resumed node $1 (pid $p)"
	;;
restart)
	check_node "${1:-}"
	build
	certs
	stop "$1"
	start "$1"
	wait_alive "$1"
	say "node $1 is alive"
	;;
roll)
	build
	certs
	for n in $NODES; do
		[ -n "$(pid "$n")" ] || die "node $n is not running (roll restarts a running cluster: up starts it, restart N starts one)"
	done
	# The active controller last: its restart costs an election, once.
	ctrl="$(status_json | sed -n 's/.*"controller_id":\([0-9][0-9]*\).*/\1/p')"
	order=""
	for n in $NODES; do [ "$n" = "$ctrl" ] || order="$order $n"; done
	order="$order ${ctrl:-}"
	[ -z "$ctrl" ] || say "node $ctrl is the active controller: it goes last"
	for n in $order; do
		say "node $n: waiting until it is safe to stop"
		wait_health "$n" /safe-to-stop "safe to stop"
		stop "$n"
		start "$n"
		say "node $n: waiting until it is ready (registered, back in every ISR)"
		wait_health "$n" /readyz ready
	done
	say "rolled nodes$order"
	;;
logs)
	check_node "${1:-}"
	if [ "${2:-}" = "-f" ]; then
		exec tail -n 100 -f "$(logfile "$1")"
	fi
	tail -n "${PAYMENTLOG_LOG_LINES:-100}" "$(logfile "$1")"
	;;
reload)
	check_node "${1:-}"
	reload "$1"
	;;
rotate-certs)
	[ -n "$(pid 1)$(pid 2)$(pid 3)" ] || die "no node of the cluster in $DIR is running (scripts/cluster.sh up starts it)"
	[ -f "$CERTS/ca.key" ] || die "no CA in $CERTS (scripts/cluster.sh up creates it)"
	say "1/3: a new CA, trusted beside the old one"
	"$BIN" cert rotate-ca --dir "$CERTS" >/dev/null || die "cert rotate-ca failed"
	reload_running
	say "2/3: every certificate reissued by the new CA"
	for n in $NODES; do
		"$BIN" cert issue --dir "$CERTS" --name "node$n" --node-id "$n" --host "$HOST" --force >/dev/null ||
			die "cert issue node$n failed"
	done
	"$BIN" cert issue --dir "$CERTS" --name client --host "$HOST" --force >/dev/null || die "cert issue client failed"
	reload_running
	say "3/3: the old CA retired"
	"$BIN" cert retire-ca --dir "$CERTS" >/dev/null || die "cert retire-ca failed"
	reload_running
	"$BIN" cert list --dir "$CERTS"
	;;
revoke-cert)
	[ $# -eq 1 ] || usage_die "usage: cluster.sh revoke-cert NAME (a certificate in $CERTS)"
	[ -n "$(pid 1)$(pid 2)$(pid 3)" ] || die "no node of the cluster in $DIR is running (scripts/cluster.sh up starts it)"
	"$BIN" cert revoke --dir "$CERTS" --name "$1" || die "cert revoke $1 failed"
	reload_running
	;;
leader)
	[ $# -eq 2 ] || usage_die "usage: cluster.sh leader TOPIC PARTITION"
	leader "$1" "$2"
	;;
env)
	echo "export PAYMENTLOG_BOOTSTRAP=$BOOTSTRAP PAYMENTLOG_TLS_DIR=$CERTS PAYMENTLOG_CLIENT_CERT_NAME=client"
	;;
"")
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
*)
	usage_die "unknown command '$cmd' (want up, down, clean, status, kill N, pause N, resume N, restart N, roll, logs N, leader TOPIC P, reload N, rotate-certs, revoke-cert NAME or env; no command prints the usage)"
	;;
esac

#!/usr/bin/env bash
# fuzz.sh: run every fuzz target of the module (or of the packages named) in
# turn, each for the same budget, and say which failed.
#
#   scripts/fuzz.sh [--time 30s|100000x] [PACKAGE_DIR ...]
#
#   scripts/fuzz.sh --time 1m segment quic    # every target of two packages
#   scripts/fuzz.sh                           # every target, 30 s each
#
# A failing input is written by go test under the package's
# testdata/fuzz/<Target>/; commit it with the fix (it then runs in every
# `go test`). With a duration budget, Go 1.26's fuzzing coordinator sometimes
# fails a target at the deadline with "context deadline exceeded" and writes
# no input (golang/go#75804, fixed in Go 1.27): such a run is made again once,
# and counted as passed if the second one passes. A count budget (100000x)
# never meets that race.
set -euo pipefail

fuzztime=30s
while [ $# -gt 0 ]; do
	case "$1" in
	--time) fuzztime=${2:?--time needs a value}; shift 2 ;;
	--time=*) fuzztime=${1#--time=}; shift ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "fuzz.sh: unknown flag $1" >&2; exit 2 ;;
	*) break ;;
	esac
done

cd "$(dirname "$0")/.."
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(.)

# targets prints "dir name" for every fuzz target under the given dirs.
targets() {
	grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' "${dirs[@]}" |
		sed -E 's#^(.*)/[^/]*_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' | sort -u
}

# inputs counts the failing inputs written for a target so far.
inputs() { { find "$1/testdata/fuzz/$2" -type f 2>/dev/null || true; } | wc -l; }

run() {
	go test "./$1" -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" -parallel 2 2>&1
}

failed=()
count=0
while read -r dir name; do
	[ -n "$name" ] || continue
	count=$((count + 1))
	before=$(inputs "$dir" "$name")
	if out=$(run "$dir" "$name"); then
		echo "ok    $dir $name"
		continue
	fi
	if [ "$(inputs "$dir" "$name")" = "$before" ] && grep -q 'context deadline exceeded' <<<"$out"; then
		echo "again $dir $name (the coordinator's deadline race, no input written)"
		if out=$(run "$dir" "$name"); then
			echo "ok    $dir $name"
			continue
		fi
	fi
	echo "FAIL  $dir $name"
	tail -n 20 <<<"$out" | sed 's/^/      /'
	failed+=("$dir $name")
done < <(targets)

if [ "$count" -eq 0 ]; then
	echo "fuzz.sh: no fuzz targets under ${dirs[*]}" >&2
	exit 2
fi
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz.sh: ${#failed[@]} of $count targets failed: ${failed[*]}" >&2
	exit 1
fi
echo "fuzz.sh: all $count passed ($fuzztime each)"

#!/usr/bin/env bash
# scale.sh [N [WRITERS [MAXTIME [OUT]]]]: the scale measurement of fakegcs
# -data. It starts fakegcs -data on a fresh directory, writes N (10
# million) 1 KiB objects with gcsload (WRITERS concurrent writers, 32;
# stopped after MAXTIME, 45m), sampling the RSS and the cost of a create, a
# get and a listing page at each milestone; then starts a second fakegcs
# -data that holds 1,000 objects and probes the two servers turn by turn,
# five times each, under the same load of the machine. Everything runs
# niced. The JSON lines go to OUT (scale.jsonl), the server's RSS every
# 30 s to OUT.rss; the directories are removed at the end.
set -euo pipefail
n=${1:-10000000} writers=${2:-32} maxtime=${3:-45m} out=${4:-scale.jsonl}
out=$(realpath "$out")
work=$(mktemp -d /tmp/gcsload.XXXXXX)
cd "$(dirname "$0")/../.."
go build -o "$work/fakegcs" ./cmd/fakegcs
go build -o "$work/gcsload" ./cmd/gcsload
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
# start NAME: starts fakegcs -data $work/NAME; sets pid and http.
start() {
	nice -n 10 "$work/fakegcs" -data "$work/$1" -bucket load >"$work/$1.addr" 2>"$work/$1.err" &
	pid=$!
	pids+=($pid)
	for _ in $(seq 100); do grep -q '^http' "$work/$1.addr" && break; sleep 0.1; done
	http=$(awk '/^http /{print $2}' "$work/$1.addr")
}
start big
big_pid=$pid big_http=$http
(while kill -0 $big_pid 2>/dev/null; do
	echo "{\"t\":$(date +%s),\"rss_kib\":$(awk '/VmRSS/{print $2}' /proc/$big_pid/status)}" >>"$out.rss"
	sleep 30
done) &
pids+=($!)
: >"$out"
nice -n 10 "$work/gcsload" -http "$big_http" -bucket load -pid $big_pid -n "$n" -writers "$writers" \
	-max-time "$maxtime" -data "$work/big" -out "$out" -label write
written=$(tail -1 "$out" | sed -n 's/.*"objects_written":\([0-9]*\).*/\1/p')
start small
small_pid=$pid small_http=$http
nice -n 10 "$work/gcsload" -http "$small_http" -bucket load -pid $small_pid -n 1000 -probes 10 >/dev/null
for _ in 1 2 3 4 5; do
	nice -n 10 "$work/gcsload" -probe-only -http "$big_http" -pid $big_pid -n "$written" -probes 300 -out "$out" -label big
	nice -n 10 "$work/gcsload" -probe-only -http "$small_http" -pid $small_pid -n 1000 -probes 300 -out "$out" -label small
done
du -sm "$work/big" | awk '{print "{\"data_dir_mib\":" $1 "}"}' | tee -a "$out"

#!/usr/bin/env bash
# scale.sh N WRITERS MAXTIME OUT: starts fakegcs -data on a fresh directory,
# writes N 1 KiB objects with gcsload (niced, bounded by MAXTIME), samples
# the server's RSS every 30 s, and writes the JSON lines to OUT.
set -euo pipefail
n=${1:-10000000} writers=${2:-32} maxtime=${3:-45m} out=${4:-scale.jsonl}
work=$(mktemp -d /tmp/gcsload.XXXXXX)
cd "$(dirname "$0")/../.."
go build -o "$work/fakegcs" ./cmd/fakegcs
go build -o "$work/gcsload" ./cmd/gcsload
nice -n 10 "$work/fakegcs" -data "$work/data" -bucket load >"$work/addr" 2>"$work/fakegcs.err" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do grep -q '^http' "$work/addr" && break; sleep 0.1; done
http=$(awk '/^http /{print $2}' "$work/addr")
(while kill -0 $pid 2>/dev/null; do
	echo "{\"t\":$(date +%s),\"rss_kib\":$(awk '/VmRSS/{print $2}' /proc/$pid/status)}" >>"$out.rss"
	sleep 30
done) &
sampler=$!
: >"$out"
nice -n 10 "$work/gcsload" -http "$http" -bucket load -pid $pid -n "$n" -writers "$writers" \
	-max-time "$maxtime" -data "$work/data" -out "$out"
kill $sampler 2>/dev/null || true
du -sm "$work/data" | awk '{print "{\"data_dir_mib\":" $1 "}"}' | tee -a "$out"

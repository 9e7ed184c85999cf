#!/usr/bin/env bash
# Runs the official Go storage client's retry conformance suite
# (TestRetryConformance in cloud.google.com/go/storage, the version the
# integration module requires) against fakegcs on loopback, over HTTP and over gRPC,
# and prints pass, fail and skip per transport with the methods behind the
# skips and the failures.
#
# Usage: conformance/run.sh [-uploads] [-transport http|grpc] [-data] [-keep]
#
#   -uploads    run only the upload methods (storage.objects.insert,
#               storage.resumable.upload and storage.appendable.upload),
#               as CI does
#   -transport  run only one transport (default: both)
#   -data       run fakegcs with its store on disk (-data, in the work
#               directory) instead of in memory
#   -keep       keep the work directory (the suite's copy, fakegcs's log
#               and the test output) and print its path
#
# The suite runs unchanged from a copy of the module's source in a
# temporary directory; its dependencies come from the Go module proxy. It
# exits with status 1 if a subtest failed or the suite did not run.
set -euo pipefail

uploads=false transport="" keep=false data=false
while [ $# -gt 0 ]; do
  case "$1" in
    -uploads) uploads=true ;;
    -transport) shift; transport="${1:-}" ;;
    -keep) keep=true ;;
    -data) data=true ;;
    *) echo "usage: $0 [-uploads] [-transport http|grpc] [-data] [-keep]" >&2; exit 2 ;;
  esac
  shift
done
case "$transport" in
  "") prefix="(http|grpc)" ;;
  http|grpc) prefix="$transport" ;;
  *) echo "$0: -transport must be http or grpc" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/objup-conformance.XXXXXX")
fake_pid=""
cleanup() {
  if [ -n "$fake_pid" ]; then
    kill "$fake_pid" 2>/dev/null || true
    wait "$fake_pid" 2>/dev/null || true
  fi
  if $keep; then
    echo "work directory: $work" >&2
  else
    chmod -R u+w "$work" 2>/dev/null || true
    rm -rf "$work"
  fi
}
trap cleanup EXIT

cd "$root"
version=$(cd integration && GOWORK=off go list -m -f '{{.Version}}' cloud.google.com/go/storage)
src=$(go mod download -json "cloud.google.com/go/storage@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ ! -f "$src/retry_conformance_test.go" ]; then
  echo "$0: no retry_conformance_test.go in cloud.google.com/go/storage@$version ($src)" >&2
  exit 1
fi
cp -R "$src" "$work/storage"
chmod -R u+w "$work/storage"
go build -o "$work/fakegcs" ./fakes/cmd/fakegcs

# fakegcs prints "grpc ADDR" and "http URL" once both servers listen.
store=()
$data && store=(-data "$work/data")
"$work/fakegcs" -call-log 0 "${store[@]}" >"$work/addrs" 2>"$work/fakegcs.log" &
fake_pid=$!
for _ in $(seq 1 100); do
  [ "$(wc -l <"$work/addrs")" -ge 2 ] && break
  kill -0 "$fake_pid" 2>/dev/null || { cat "$work/fakegcs.log" >&2; exit 1; }
  sleep 0.1
done
grpc_addr=$(sed -n 's/^grpc //p' "$work/addrs")
http_url=$(sed -n 's/^http //p' "$work/addrs")
if [ -z "$grpc_addr" ] || [ -z "$http_url" ]; then
  echo "$0: fakegcs did not start" >&2; cat "$work/fakegcs.log" >&2; exit 1
fi

methods='.*'
$uploads && methods='storage\.(objects\.insert|resumable\.upload|appendable\.upload)-[0-9]+'
run="^TestRetryConformance\$/^${prefix}-[0-9]+-.*-${methods}\$"
echo "cloud.google.com/go/storage@$version TestRetryConformance against fakegcs (gRPC $grpc_addr, HTTP $http_url$($data && echo ", store on disk"))"
start=$(date +%s)
status=0
# -short skips the module's integration tests, which need credentials.
(cd "$work/storage" &&
  STORAGE_EMULATOR_HOST="$http_url" STORAGE_EMULATOR_HOST_GRPC="$grpc_addr" \
    go test -short -count=1 -timeout 30m -v -run "$run" . >"$work/test.out" 2>&1) || status=$?
echo "ran in $(( $(date +%s) - start ))s (go test exit status $status)"

awk -f "$root/conformance/summary.awk" "$work/test.out"

if grep -q '^--- FAIL\|^FAIL\|^panic:' "$work/test.out" || [ "$status" -ne 0 ]; then
  echo "FAIL: see the failures above, or the whole output with -keep" >&2
  grep '^panic:\|^FAIL\|^ok' "$work/test.out" >&2 || true
  exit 1
fi
if ! grep -q '^    --- PASS' "$work/test.out"; then
  echo "FAIL: no subtest passed" >&2
  tail -20 "$work/test.out" >&2
  exit 1
fi

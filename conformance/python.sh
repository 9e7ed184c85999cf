#!/usr/bin/env bash
# Runs the Python client's retry conformance suite,
# tests/conformance/test_conformance.py of the google-cloud-storage source
# distribution on PyPI at the version pinned below, against fakegcs on
# loopback, and prints pass, fail, skip and error counts, with the reason
# of every skip and the failures. With -bidi it runs the same
# distribution's tests/conformance/test_bidi_writes.py instead: the
# client's appendable writer (BidiWriteObject over gRPC) under six retry
# test instructions, each scenario checked by the object read back. With
# -mpu it runs, instead, the same client's XML API multipart upload:
# transfer_manager.upload_chunks_concurrently sends a file of 40 MiB and
# 17 bytes in parts of 8 MiB with checksum="crc32c", then the object is
# read back and compared byte for byte and by CRC32C, and no upload may be
# left in progress.
#
# Usage: conformance/python.sh [-k EXPR] [-n WORKERS] [-data] [-keep]
#        conformance/python.sh -bidi [-data] [-keep]
#        conformance/python.sh -mpu [-data] [-keep]
#
#   -k     run only the tests pytest's -k expression selects
#   -n     run the tests in this many pytest-xdist workers (default 4: the
#          suite mostly waits out its client's retry back-off)
#   -bidi  run test_bidi_writes.py, on the fixed ports it expects (HTTP
#          9002, gRPC 8888), and count its scenarios
#   -mpu   run the multipart upload (transfer_manager) and check it
#   -data  run fakegcs with its store on disk (-data, in the work
#          directory) instead of in memory
#   -keep  keep the work directory (fakegcs's log and the test output) and
#          print its path
#
# The suites run unchanged: their modules start Google's storage testbench
# with docker, which a stand-in docker command on PATH (one that does
# nothing) disables; STORAGE_EMULATOR_HOST points test_conformance.py's
# client at fakegcs, and test_bidi_writes.py finds fakegcs on its ports.
# test_bidi_writes.py catches every exception of its scenarios and prints
# the traceback, so pytest passes whatever happens: -bidi reads the output
# instead, and wants a "Success: NAME" line for each of the scenarios, no
# traceback and no failed clean-up.
#
# Python packages come from PyPI into a virtualenv, kept with the
# source distribution in $OBJUP_CACHE (default ~/.cache/objup) for the next
# run. It needs python3 with its venv module; as root, it installs Debian's
# python3-venv if that is missing. It exits with status 1 if a test failed
# or errored, or none passed (with -bidi: if a scenario did not succeed).
set -euo pipefail

version=3.10.1        # google-cloud-storage
pytest_version=9.2.0  # pytest
xdist_version=3.8.0   # pytest-xdist
asyncio_version=1.5.0 # pytest-asyncio, for test_bidi_writes.py
bidi_scenarios=6      # the scenarios of test_bidi_writes.py
bidi_http=9002 bidi_grpc=8888 # the ports test_bidi_writes.py expects

filter="" workers=4 keep=false bidi=false data=false mpu=false
while [ $# -gt 0 ]; do
  case "$1" in
    -k) shift; filter="${1:-}" ;;
    -n) shift; workers="${1:-}" ;;
    -bidi) bidi=true ;;
    -mpu) mpu=true ;;
    -keep) keep=true ;;
    -data) data=true ;;
    *) echo "usage: $0 [-k EXPR] [-n WORKERS] [-data] [-keep] | -bidi [-data] [-keep] | -mpu [-data] [-keep]" >&2; exit 2 ;;
  esac
  shift
done
if { $bidi || $mpu; } && [ -n "$filter" ]; then
  echo "$0: -bidi and -mpu run one test: no -k" >&2; exit 2
fi
if $bidi && $mpu; then
  echo "$0: -bidi or -mpu, not both" >&2; exit 2
fi
case "$workers" in
  ''|*[!0-9]*) echo "$0: -n takes a number of workers" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
cache=${OBJUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/objup}/python-conformance-$version
work=$(mktemp -d "${TMPDIR:-/tmp}/objup-pyconformance.XXXXXX")
fake_pid=""
cleanup() {
  if [ -n "$fake_pid" ]; then
    kill "$fake_pid" 2>/dev/null || true
    wait "$fake_pid" 2>/dev/null || true
  fi
  if $keep; then
    echo "work directory: $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

# The virtualenv, the suites' dependencies and the source distribution,
# once per set of versions: the ready marker holds what was installed.
# The client's grpc extra brings grpcio, for test_bidi_writes.py.
packages=("google-cloud-storage[grpc]==$version" "pytest==$pytest_version" "pytest-xdist==$xdist_version"
  "pytest-asyncio==$asyncio_version")
if [ "$(cat "$cache/ready" 2>/dev/null)" != "${packages[*]}" ]; then
  if ! "$python" -c 'import venv, ensurepip' 2>/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      echo "installing python3-venv"
      apt-get install -y -qq python3-venv >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null; }
    else
      echo "$0: $python has no venv module: install python3-venv" >&2; exit 1
    fi
  fi
  rm -rf "$cache"
  mkdir -p "$cache"
  echo "installing ${packages[*]} into $cache/venv"
  "$python" -m venv "$cache/venv"
  "$cache/venv/bin/python" -m pip install -q --disable-pip-version-check "${packages[@]}"
  "$cache/venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
    -d "$cache/dist" "google-cloud-storage==$version"
  tar -xzf "$cache"/dist/google_cloud_storage-"$version".tar.gz -C "$cache"
  echo "${packages[*]}" >"$cache/ready"
fi
src="$cache/google_cloud_storage-$version"
suite=tests/conformance/test_conformance.py
$bidi && suite=tests/conformance/test_bidi_writes.py
if [ ! -f "$src/$suite" ]; then
  echo "$0: no $suite in $src" >&2; exit 1
fi

# The stand-in docker: the suite's "docker pull" and "docker run" of the
# testbench do nothing.
mkdir -p "$work/bin"
printf '#!/bin/sh\nexit 0\n' >"$work/bin/docker"
chmod +x "$work/bin/docker"

cd "$root"
go build -o "$work/fakegcs" ./fakes/cmd/fakegcs
# fakegcs prints "grpc ADDR" and "http URL" once both servers listen.
: >"$work/addrs"
addrs=()
$bidi && addrs=(-http "127.0.0.1:$bidi_http" -grpc "127.0.0.1:$bidi_grpc")
$data && addrs+=(-data "$work/data")
"$work/fakegcs" -call-log 0 "${addrs[@]}" >"$work/addrs" 2>"$work/fakegcs.log" &
fake_pid=$!
for _ in $(seq 1 100); do
  [ "$(wc -l <"$work/addrs")" -ge 2 ] && break
  if ! kill -0 "$fake_pid" 2>/dev/null; then
    $bidi && echo "$0: fakegcs did not start on ports $bidi_http and $bidi_grpc, which test_bidi_writes.py expects (taken?)" >&2
    cat "$work/fakegcs.log" >&2; exit 1
  fi
  sleep 0.1
done
http_url=$(sed -n 's/^http //p' "$work/addrs")
if [ -z "$http_url" ]; then
  echo "$0: fakegcs did not start" >&2; cat "$work/fakegcs.log" >&2; exit 1
fi

if $mpu; then
  # The client's XML API multipart upload of a file, then the object read
  # back, compared with the file, and the bucket's uploads in progress.
  cat >"$work/mpu.py" <<'PY'
import base64, os, sys, urllib.request
import google_crc32c
from google.cloud import storage
from google.cloud.storage import transfer_manager

host = os.environ["STORAGE_EMULATOR_HOST"]
path, size, chunk = sys.argv[1], 40 * 1024 * 1024 + 17, 8 * 1024 * 1024
with open(path, "wb") as f:
    f.write(os.urandom(size))
with open(path, "rb") as f:
    data = f.read()
want = base64.b64encode(google_crc32c.Checksum(data).digest()).decode()
bucket = storage.Client(project="p").create_bucket("mpu-judge")
blob = bucket.blob("dir/object.bin")
blob.content_type = "application/x-objup"
blob.metadata = {"judge": "python"}
transfer_manager.upload_chunks_concurrently(path, blob, chunk_size=chunk, max_workers=4, checksum="crc32c")
blob = bucket.get_blob("dir/object.bin")
back = blob.download_as_bytes(checksum="crc32c")
left = urllib.request.urlopen(host + "/mpu-judge?uploads").read().decode().count("<Upload>")
print("uploaded %d bytes in %d parts; object: size %d, crc32c %s (the file's %s), md5Hash %s, contentType %s, metadata %s" % (
    size, -(-size // chunk), blob.size, blob.crc32c, want, blob.md5_hash, blob.content_type, blob.metadata))
print("read back: %s; uploads left in progress: %d" % ("equal" if back == data else "DIFFERENT", left))
ok = back == data and blob.size == size and blob.crc32c == want and blob.md5_hash is None and left == 0
sys.exit(0 if ok else 1)
PY
  echo "google-cloud-storage $version transfer_manager.upload_chunks_concurrently against fakegcs ($http_url)"
  status=0
  STORAGE_EMULATOR_HOST="$http_url" timeout 600 "$cache/venv/bin/python" "$work/mpu.py" "$work/file.bin" \
    >"$work/test.out" 2>&1 || status=$?
  sed 's/^/  /' "$work/test.out"
  if [ "$status" -ne 0 ]; then
    echo "FAIL: the multipart upload did not read back exact (exit status $status)" >&2
    exit 1
  fi
  echo "Python multipart upload: ok"
  exit 0
fi

if $bidi; then
  # One test, its scenarios in turn; -s shows what they print.
  echo "google-cloud-storage $version $suite against fakegcs ($http_url, gRPC 127.0.0.1:$bidi_grpc)"
  start=$(date +%s)
  status=0
  (cd "$src" && PATH="$work/bin:$PATH" timeout 600 "$cache/venv/bin/python" -m pytest -p no:cacheprovider -q -s \
    -o asyncio_default_fixture_loop_scope=function "$suite" >"$work/test.out" 2>&1) || status=$?
  echo "ran in $(( $(date +%s) - start ))s (pytest exit status $status)"
  ran=$(grep -c -- '^--- RUNNING SCENARIO: ' "$work/test.out" || true)
  pass=$(grep -c '^Success: ' "$work/test.out" || true)
  tracebacks=$(grep -c '^Traceback ' "$work/test.out" || true)
  cleanup=$(grep -c '^Warning: Cleanup failed' "$work/test.out" || true)
  echo "Python bidi writes: $pass pass, $(( bidi_scenarios - pass )) fail of $bidi_scenarios scenarios ($ran run), $tracebacks traceback"
  sed -n 's/^Success: /  pass: /p' "$work/test.out"
  if [ "$pass" -ne "$bidi_scenarios" ] || [ "$ran" -ne "$bidi_scenarios" ] || [ "$tracebacks" -ne 0 ] ||
    [ "$cleanup" -ne 0 ] || [ "$status" -ne 0 ]; then
    # The scenario that failed, its traceback and what followed.
    awk '/^--- RUNNING SCENARIO: / { last = NR } { line[NR] = $0 } END { for (i = (last ? last : 1); i <= NR; i++) print line[i] }' \
      "$work/test.out" | head -80 >&2
    echo "FAIL: not every scenario succeeded; the whole output with -keep" >&2
    exit 1
  fi
  exit 0
fi

args=(-p no:cacheprovider -q -rfEs -n "$workers" tests/conformance/test_conformance.py)
[ -n "$filter" ] && args+=(-k "$filter")
echo "google-cloud-storage $version tests/conformance/test_conformance.py against fakegcs ($http_url), $workers workers"
start=$(date +%s)
status=0
(cd "$src" && PATH="$work/bin:$PATH" STORAGE_EMULATOR_HOST="$http_url" \
  timeout 1800 "$cache/venv/bin/python" -m pytest "${args[@]}" >"$work/test.out" 2>&1) || status=$?
echo "ran in $(( $(date +%s) - start ))s (pytest exit status $status)"

# pytest's last line: "565 passed, 5 skipped in 137.20s (0:02:17)".
summary=$(grep -E '([0-9]+ (passed|failed|skipped|errors?)|no tests ran).* in [0-9.]+s' "$work/test.out" | tail -1 || true)
count() { echo "$summary" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
pass=$(count passed) fail=$(count failed) skip=$(count skipped) errors=$(count 'errors?')
echo "Python: $pass pass, $fail fail, $skip skip, $errors error"
# The reasons of the skips, and the failures, as pytest's -r report gives them.
grep -E '^SKIPPED ' "$work/test.out" | sed -E 's/^SKIPPED \[([0-9]+)\] [^:]*:[0-9]+: /  \1 skipped by the suite: /' || true
grep -E '^(FAILED|ERROR) ' "$work/test.out" | sed 's/^/  /' | head -50 || true

if [ "$fail" -ne 0 ] || [ "$errors" -ne 0 ] || [ "$pass" -eq 0 ] || [ "$status" -ne 0 ]; then
  echo "FAIL: see the failures above, or the whole output with -keep" >&2
  [ -z "$summary" ] && tail -20 "$work/test.out" >&2
  exit 1
fi

#!/usr/bin/env bash
# Runs sessions of Google's own command-line tools against fakegcs on
# loopback and checks every answer: `gcloud storage` over plain HTTP (the
# fake's -http port), and gsutil over HTTPS (its JSON mode speaks only
# HTTPS: the fake's -https port, with the certificate fakegcs makes).
# Each session copies a file, a directory with -r, a 3 MB file through a
# resumable upload and again through a parallel composite upload (the
# components uploaded, composed and deleted; the tools' thresholds are
# lowered so that 3 MB takes both paths), a stream from standard input
# (gcloud), lists, cats, downloads and compares, removes, and (gcloud)
# creates and removes a bucket. gsutil then copies files again in its XML
# mode (-o GSUtil:prefer_api=xml: boto's path-style PUT, after a GET of
# the bucket's list) and reads them back with cat, byte for byte.
#
# Usage: conformance/gcloud.sh [-keep] [-pypi] [-capture DIR]
#
#   -keep     keep the work directory (fakegcs's log, each command's
#             output) and print its path
#   -pypi     also run the gsutil session with gsutil from PyPI (the
#             version pinned below), installed into a virtualenv kept in
#             $OBJUP_CACHE (default ~/.cache/objup); as root it installs
#             Debian's python3-venv if that is missing
#   -capture  record every exchange of the sessions through
#             fakes/internal/toolcapture into DIR/gcloud.jsonl.gz and
#             DIR/gsutil.jsonl.gz, the files the fakes package's
#             TestToolSessions replays (fakes/testdata/tools)
#
# gcloud is the Cloud SDK's (Debian package google-cloud-cli; gsutil is the
# one bundled with it, or $GSUTIL). Where gcloud is not on PATH the script
# says it skipped and exits 0, so CI runs it everywhere; GSUTIL=none skips
# the gsutil session alone. Nothing reaches Google: the SDK's
# configuration is a throwaway directory, credentials are off
# (CLOUDSDK_AUTH_DISABLE_CREDENTIALS), and the storage endpoints point at
# the fake. It exits with status 1 if a command failed or an answer was
# wrong. Every command runs in its own process group, killed after
# $OBJUP_TOOL_TIMEOUT seconds (default 120).
set -euo pipefail

keep=false capture="" pypi=false
pypi_version=5.38 # gsutil on PyPI, for -pypi
while [ $# -gt 0 ]; do
  case "$1" in
    -keep) keep=true ;;
    -pypi) pypi=true ;;
    -capture) shift; capture="${1:-}"; [ -n "$capture" ] || { echo "$0: -capture takes a directory" >&2; exit 2; } ;;
    *) echo "usage: $0 [-keep] [-pypi] [-capture DIR]" >&2; exit 2 ;;
  esac
  shift
done
if $pypi && [ -n "$capture" ]; then
  echo "$0: -capture records the bundled gsutil: no -pypi" >&2; exit 2
fi

if ! command -v gcloud >/dev/null; then
  echo "$0: skipped: gcloud (the Cloud SDK) is not on PATH"
  exit 0
fi
gsutil_bin=${GSUTIL:-gsutil}
tool_timeout=${OBJUP_TOOL_TIMEOUT:-120}

root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/objup-gcloud.XXXXXX")
fake_pid="" capture_pids=()
cleanup() {
  for pid in "${capture_pids[@]}" $fake_pid; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if $keep; then
    echo "work directory: $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

cd "$root"
go build -o "$work/fakegcs" ./fakes/cmd/fakegcs
# fakegcs prints "grpc ADDR", "http URL" and "https URL" once it listens,
# having written its certificate.
: >"$work/addrs"
"$work/fakegcs" -bucket gcloud-bucket -bucket gsutil-bucket -bucket gsutil-pypi-bucket -https 127.0.0.1:0 -cert "$work/cert.pem" \
  >"$work/addrs" 2>"$work/fakegcs.log" &
fake_pid=$!
for _ in $(seq 1 100); do
  [ "$(wc -l <"$work/addrs")" -ge 3 ] && break
  kill -0 "$fake_pid" 2>/dev/null || { cat "$work/fakegcs.log" >&2; exit 1; }
  sleep 0.1
done
http_url=$(sed -n 's/^http //p' "$work/addrs")
https_url=$(sed -n 's/^https //p' "$work/addrs")
if [ -z "$http_url" ] || [ -z "$https_url" ]; then
  echo "$0: fakegcs did not start" >&2; cat "$work/fakegcs.log" >&2; exit 1
fi
ca=$work/cert.pem

# startcapture NAME ARGS...: puts a recording proxy in front of the fake
# and sets capture_url to its URL. (Not in a command substitution: the
# proxy's pid must reach capture_pids, for the clean-up.)
startcapture() {
  local name=$1; shift
  : >"$work/$name.addr"
  "$work/toolcapture" -out "$work/$name.jsonl" "$@" >"$work/$name.addr" 2>"$work/$name.log" &
  capture_pids+=($!)
  for _ in $(seq 1 100); do
    [ -s "$work/$name.addr" ] && break
    sleep 0.1
  done
  capture_url=$(sed -n 's/^listen //p' "$work/$name.addr")
}
if [ -n "$capture" ]; then
  mkdir -p "$capture"
  go build -o "$work/toolcapture" ./fakes/internal/toolcapture
  startcapture gcloud -target "$http_url"
  http_url=$capture_url
  startcapture gsutil -target "$https_url" -tls -cert "$work/capture.pem" -target-ca "$ca"
  https_url=$capture_url
  ca=$work/capture.pem
  [ -n "$http_url" ] && [ -n "$https_url" ] || { echo "$0: toolcapture did not start" >&2; exit 1; }
fi

# The data: a small file, a tree, and a file large enough for resumable
# and parallel composite uploads (a random 4 KiB block repeated, so that
# a capture compresses).
data=$work/data
mkdir -p "$data/tree/sub" "$work/out"
echo "hello from objup" >"$data/small.txt"
for i in 1 2 3; do echo "file $i" >"$data/tree/f$i.txt"; done
echo "nested" >"$data/tree/sub/n.txt"
head -c 4096 /dev/urandom >"$work/block"
for _ in $(seq 1 733); do cat "$work/block"; done | head -c 3000000 >"$data/big.bin"

failures=0 n=0
# tool NAME CMD...: runs CMD in its own process group with the output in
# $work/out/NAME, killing the group after $tool_timeout seconds; on failure
# it prints the output and counts a failure.
tool() {
  local name=$1; shift
  n=$((n + 1))
  local out=$work/out/$(printf '%02d' "$n")-$name
  setsid "$@" 0<&0 >"$out" 2>"$out.err" &
  local pid=$!
  (sleep "$tool_timeout"; kill -KILL -- "-$pid" 2>/dev/null) &
  local watch=$!
  local rc=0
  wait "$pid" || rc=$?
  kill "$watch" 2>/dev/null || true
  wait "$watch" 2>/dev/null || true
  if [ "$rc" != 0 ]; then
    echo "FAIL $name: exit status $rc: $*"
    sed 's/^/    /' "$out.err" | tail -20
    failures=$((failures + 1))
    return 1
  fi
  echo "ok   $name"
}
# expect NAME WANT: the output of the last command (NAME) is WANT.
expect() {
  local got
  got=$(cat "$work/out/$(printf '%02d' "$n")-$1")
  if [ "$got" != "$2" ]; then
    echo "FAIL $1: got:"; echo "$got" | sed 's/^/    /'
    echo "  want:"; echo "$2" | sed 's/^/    /'
    failures=$((failures + 1))
  fi
}
# same NAME A B: files A and B hold the same bytes.
same() {
  if ! cmp -s "$2" "$3"; then
    echo "FAIL $1: $2 and $3 differ"; failures=$((failures + 1))
  fi
}

echo "== gcloud storage over HTTP ($http_url)"
export CLOUDSDK_CONFIG=$work/gcloud-config
export CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE=$http_url/
export CLOUDSDK_AUTH_DISABLE_CREDENTIALS=True
export CLOUDSDK_CORE_PROJECT=p
export CLOUDSDK_CORE_DISABLE_PROMPTS=1
export CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=true
export CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=true
export CLOUDSDK_STORAGE_MAX_RETRIES=2 CLOUDSDK_STORAGE_MAX_RETRY_DELAY=1
gc="gcloud storage"
tool gc-cp-file $gc cp "$data/small.txt" gs://gcloud-bucket/small.txt || true
tool gc-cat $gc cat gs://gcloud-bucket/small.txt && expect gc-cat "hello from objup"
tool gc-cp-r $gc cp -r "$data/tree" gs://gcloud-bucket/ || true
tool gc-ls-r $gc ls -r gs://gcloud-bucket/tree && expect gc-ls-r "gs://gcloud-bucket/tree/:
gs://gcloud-bucket/tree/f1.txt
gs://gcloud-bucket/tree/f2.txt
gs://gcloud-bucket/tree/f3.txt

gs://gcloud-bucket/tree/sub/:
gs://gcloud-bucket/tree/sub/n.txt"
tool gc-cat-nested $gc cat gs://gcloud-bucket/tree/sub/n.txt && expect gc-cat-nested "nested"
# Above its resumable threshold, without a composite upload.
CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_ENABLED=False CLOUDSDK_STORAGE_RESUMABLE_THRESHOLD=1M \
  tool gc-cp-resumable $gc cp "$data/big.bin" gs://gcloud-bucket/resumable.bin || true
# A parallel composite upload: three components of at most 1 MiB, each
# above the resumable threshold so that gcloud tracks and deletes them
# after the compose.
CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_ENABLED=True \
  CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_THRESHOLD=2M \
  CLOUDSDK_STORAGE_PARALLEL_COMPOSITE_UPLOAD_COMPONENT_SIZE=1M \
  CLOUDSDK_STORAGE_RESUMABLE_THRESHOLD=256K \
  tool gc-cp-composite $gc cp "$data/big.bin" gs://gcloud-bucket/composite.bin || true
tool gc-cp-stdin $gc cp - gs://gcloud-bucket/stdin.bin <"$data/big.bin" || true
for o in resumable composite stdin; do
  tool "gc-download-$o" $gc cp "gs://gcloud-bucket/$o.bin" "$work/gc-$o.bin" && same "gc-download-$o" "$data/big.bin" "$work/gc-$o.bin"
done
tool gc-describe $gc objects describe gs://gcloud-bucket/composite.bin --format='value(component_count,size)' &&
  expect gc-describe "3	3000000"
tool gc-ls $gc ls gs://gcloud-bucket && expect gc-ls "gs://gcloud-bucket/composite.bin
gs://gcloud-bucket/resumable.bin
gs://gcloud-bucket/small.txt
gs://gcloud-bucket/stdin.bin
gs://gcloud-bucket/tree/"
tool gc-rm $gc rm gs://gcloud-bucket/small.txt || true
tool gc-rm-r $gc rm -r gs://gcloud-bucket/tree || true
tool gc-ls-after $gc ls gs://gcloud-bucket && expect gc-ls-after "gs://gcloud-bucket/composite.bin
gs://gcloud-bucket/resumable.bin
gs://gcloud-bucket/stdin.bin"
tool gc-bucket-create $gc buckets create gs://gcloud-new || true
tool gc-cp-new $gc cp "$data/small.txt" gs://gcloud-new/x || true
tool gc-bucket-rm $gc rm -r gs://gcloud-new || true
tool gc-buckets-list $gc buckets list --format='value(name)' && expect gc-buckets-list "gcloud-bucket
gsutil-bucket
gsutil-pypi-bucket"

# gsutil_xml_session LABEL BIN BUCKET: gsutil BIN's XML mode in BUCKET, on
# names under xml/: a small file and the 3 MB one (below gsutil's
# resumable threshold, no composite: one PUT each), read back with cat
# (the XML file download of gsutil 5.34 and 5.38 sets the connection's
# port from the boto config as a string and fails with a TypeError
# before any request, so the files are not downloaded with cp), listed,
# then removed in the JSON mode (the fake serves no XML delete).
gsutil_xml_session() {
  local l=$1 gs="$2 -q" b=gs://$3
  local xml="-o GSUtil:prefer_api=xml -o GSUtil:parallel_composite_upload_threshold=0"
  tool $l-xml-cp-file $gs $xml cp "$data/small.txt" $b/xml/small.txt || true
  tool $l-xml-cp-big $gs $xml cp "$data/big.bin" $b/xml/big.bin || true
  tool $l-xml-cat-small $gs $xml cat $b/xml/small.txt && expect $l-xml-cat-small "hello from objup"
  tool $l-xml-cat-big $gs $xml cat $b/xml/big.bin &&
    same $l-xml-cat-big "$data/big.bin" "$work/out/$(printf '%02d' "$n")-$l-xml-cat-big"
  tool $l-xml-ls $gs $xml ls $b/xml/ && expect $l-xml-ls "$b/xml/big.bin
$b/xml/small.txt"
  tool $l-xml-rm $gs rm -r $b/xml || true
}

# gsutil_session LABEL BIN BUCKET: the gsutil session, with gsutil BIN,
# in BUCKET; its commands are named LABEL-....
gsutil_session() {
  local l=$1 gs="$2 -q" b=gs://$3
  tool $l-cp-file $gs cp "$data/small.txt" $b/small.txt || true
  tool $l-cat $gs cat $b/small.txt && expect $l-cat "hello from objup"
  tool $l-cp-r $gs cp -r "$data/tree" $b/ || true
  tool $l-ls-r $gs ls -r $b/tree && expect $l-ls-r "$b/tree/:
$b/tree/f1.txt
$b/tree/f2.txt
$b/tree/f3.txt

$b/tree/sub/:
$b/tree/sub/n.txt"
  # Above its resumable threshold, without a composite upload; then
  # three components of at most 1 MiB, composed and deleted.
  tool $l-cp-resumable $gs -o GSUtil:resumable_threshold=1048576 -o GSUtil:parallel_composite_upload_threshold=0 \
    cp "$data/big.bin" $b/resumable.bin || true
  tool $l-cp-composite $gs -o GSUtil:resumable_threshold=262144 -o GSUtil:parallel_composite_upload_threshold=2M \
    -o GSUtil:parallel_composite_upload_component_size=1M cp "$data/big.bin" $b/composite.bin || true
  for o in resumable composite; do
    tool "$l-download-$o" $gs cp "$b/$o.bin" "$work/$l-$o.bin" && same "$l-download-$o" "$data/big.bin" "$work/$l-$o.bin"
  done
  tool $l-ls $gs ls $b && expect $l-ls "$b/composite.bin
$b/resumable.bin
$b/small.txt
$b/tree/"
  tool $l-rm $gs rm $b/small.txt || true
  tool $l-rm-r $gs rm -r $b/tree || true
  tool $l-ls-after $gs ls $b && expect $l-ls-after "$b/composite.bin
$b/resumable.bin"
}

# The boto config that points gsutil at the fake: its JSON API host and
# port, the XML API's (localhost: boto checks the certificate's host
# name, not its IP addresses), and the fake's certificate as the CA file. The Cloud SDK's wrapper
# passes its own CA file and credentials to gsutil unless told otherwise,
# hence the two CLOUDSDK_ variables; gsutil from PyPI reads the boto config
# alone.
cat >"$work/boto" <<EOF
[Credentials]
gs_json_host = 127.0.0.1
gs_json_port = ${https_url##*:}
gs_host = localhost
gs_port = ${https_url##*:}
[Boto]
ca_certificates_file = $ca
num_retries = 2
max_retry_delay = 1
[GSUtil]
default_project_id = p
sliced_object_download_threshold = 0
EOF
export BOTO_CONFIG=$work/boto BOTO_PATH=$work/boto
export CLOUDSDK_CORE_CUSTOM_CA_CERTS_FILE=$ca
export CLOUDSDK_CORE_PASS_CREDENTIALS_TO_GSUTIL=false
if [ "$gsutil_bin" = none ]; then
  echo "== gsutil: skipped (GSUTIL=none)"
elif ! command -v "$gsutil_bin" >/dev/null; then
  echo "== gsutil: skipped: $gsutil_bin is not on PATH"
else
  echo "== gsutil ($gsutil_bin) over HTTPS ($https_url)"
  gsutil_session gs "$gsutil_bin" gsutil-bucket
  echo "== gsutil ($gsutil_bin) in its XML mode over HTTPS"
  gsutil_xml_session gs "$gsutil_bin" gsutil-bucket
fi
if $pypi; then
  # gsutil from PyPI, in a virtualenv kept in $OBJUP_CACHE for the next run.
  venv=${OBJUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/objup}/gsutil-$pypi_version
  if [ "$(cat "$venv/ready" 2>/dev/null)" != "gsutil==$pypi_version" ]; then
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "installing python3-venv"
        apt-get install -y -qq python3-venv >/dev/null 2>&1 ||
          { apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null; }
      else
        echo "$0: python3 has no venv module: install python3-venv" >&2; exit 1
      fi
    fi
    rm -rf "$venv"
    echo "installing gsutil==$pypi_version into $venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "gsutil==$pypi_version"
    echo "gsutil==$pypi_version" >"$venv/ready"
  fi
  echo "== gsutil $pypi_version from PyPI over HTTPS ($https_url)"
  gsutil_session pypi "$venv/bin/gsutil" gsutil-pypi-bucket
  echo "== gsutil $pypi_version from PyPI in its XML mode over HTTPS"
  gsutil_xml_session pypi "$venv/bin/gsutil" gsutil-pypi-bucket
fi

echo "$n commands, $failures failed"
if [ -n "$capture" ]; then
  for pid in "${capture_pids[@]}"; do kill "$pid"; wait "$pid" || true; done
  capture_pids=()
  for name in gcloud gsutil; do
    [ -s "$work/$name.jsonl" ] && gzip -9 -c "$work/$name.jsonl" >"$capture/$name.jsonl.gz"
  done
  echo "captured: $(ls "$capture")"
fi
[ "$failures" = 0 ]

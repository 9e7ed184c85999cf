#!/usr/bin/env bash
# Compares `objup cp -r` with other tools that upload a directory tree to
# GCS, all pointed at fakegcs on loopback: `gcloud storage cp -r`,
# `rclone copy`, and google-cloud-storage's transfer_manager
# (upload_many_from_filenames, threads and processes), at concurrency 64,
# plus objup's SDK alone to price the command's journal and manifest:
# "many" (UploadMany, no journal) and "each" (Client.Upload of each file
# as the command sends it, under DoesNotExist, no journal or manifest),
# over gRPC and (-http) the JSON API.
#
# Peers: objup (journal in the default place: os.UserCacheDir()/objup/
# journal, with XDG_CACHE_HOME in the work directory), objup-tmpfs
# (--journal under /dev/shm), objup-http (--http), many, many-http, each,
# each-http, rclone, gcloud, py-thread, py-process.
#
# Without -kill (the default): a seeded tree of -files files (default
# 10,000) of 1-8 KiB; -rounds rounds (default 3), each on a fresh fakegcs
# in memory with one bucket per peer, the peers' order rotated from round
# to round (interleaved). Each run is measured with /usr/bin/time -v (wall,
# user+sys CPU, peak RSS of the largest process) and checked: every file
# stored once with its size and CRC32C (peertool verify, through the JSON
# API's list). Objects/s is files / wall time of the whole process.
#
# With -kill: a tree of 2,000 files of 1-8 KiB and three of 64 MiB, on
# fakegcs -data with versioned buckets (so a file written twice shows as a
# second generation) and a simulated link (-bandwidth, per connection).
# Each peer first uploads the tree once without kills (its clean bytes),
# then again to another bucket, killed with SIGKILL (the whole process
# group but /usr/bin/time) at each moment of a seeded list, the same for
# every peer: by default once the run has sent a fraction (0.1-0.5) of the
# tree's bytes through the proxy (-kill-at bytes); -kill-at frac: at a
# fraction (0.2-0.8) of the peer's own clean run's wall time; -kill-at
# secs: 1.5-4.5 s after the start. A run that ends before its moment is not
# killed. Then the peer runs until it exits 0 (at most -final rounds). A
# fault proxy without faults (peertool proxy) in front of the fake counts
# the bytes each sends; bytes sent again = killed total - clean run.
# Each peer uses what it offers to resume: objup its journal, gcloud its
# tracker files and --manifest-path, rclone its size and mtime check,
# Python skip_if_exists=True.
#
# Usage: integration/peers/run.sh [-kill] [-rounds N] [-files N] [-seed N]
#          [-peers "LIST"] [-kills N] [-kill-at bytes|frac|secs] [-final N]
#          [-bandwidth RATE] [-nokeep]
# Output: a directory (printed) with each run's time -v output and logs, and
# results.tsv, one line per run. Needs go, python3 with venv (the Python
# client is installed from PyPI into a virtualenv in $OBJUP_CACHE, default
# ~/.cache/objup), gcloud (Debian google-cloud-cli) and rclone (Debian);
# a peer whose tool is missing is skipped. Runs under nice -n 5.
set -euo pipefail

kill_mode=false kill_at=bytes rounds=3 files=10000 seed=1 peers="" kills=3 bandwidth=16MB/s keep=true final=4
py_version=3.10.1 # google-cloud-storage
while [ $# -gt 0 ]; do
  case "$1" in
    -kill) kill_mode=true ;;
    -rounds) shift; rounds=$1 ;;
    -files) shift; files=$1 ;;
    -seed) shift; seed=$1 ;;
    -peers) shift; peers=$1 ;;
    -kills) shift; kills=$1 ;;
    -kill-at) shift; kill_at=$1 ;;
    -final) shift; final=$1 ;;
    -bandwidth) shift; bandwidth=$1 ;;
    -nokeep) keep=false ;;
    *) echo "usage: $0 [-kill] [-rounds N] [-files N] [-seed N] [-peers LIST] [-kills N] [-kill-at bytes|frac|secs] [-final N] [-bandwidth RATE] [-nokeep]" >&2; exit 2 ;;
  esac
  shift
done
if [ -z "$peers" ]; then
  if $kill_mode; then
    peers="objup objup-http rclone gcloud py-thread"
  else
    peers="objup objup-tmpfs objup-http many many-http rclone gcloud py-thread py-process"
  fi
fi

root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/objup-peers.XXXXXX")
shm=$(mktemp -d /dev/shm/objup-peers.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$shm"
  rm -rf "$work/tree" "$work/fakedata"
  $keep || rm -rf "$work"
  echo "work directory: $work" >&2
}
trap cleanup EXIT

cd "$root"
go build -o "$work/objup" ./cmd/objup
go build -o "$work/fakegcs" ./fakes/cmd/fakegcs
(cd integration && go build -o "$work/peertool" ./peers/peertool)
pt=$work/peertool

venv=${OBJUP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/objup}/peers-venv
if [ "$(cat "$venv/ready" 2>/dev/null)" != "google-cloud-storage==$py_version" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "google-cloud-storage==$py_version"
  echo "google-cloud-storage==$py_version" >"$venv/ready"
fi
py=$venv/bin/python

# The versions, for the record.
{
  echo "objup $(git -C "$root" rev-parse --short HEAD) ($(go version | cut -d' ' -f3))"
  if command -v rclone >/dev/null; then rclone version 2>&1 | sed -n 1p || true; fi
  if command -v gcloud >/dev/null; then gcloud version 2>/dev/null | sed -n 1p || true; fi
  echo "google-cloud-storage $("$py" -c 'import google.cloud.storage as s; print(s.__version__)') (Python $("$py" -c 'import platform; print(platform.python_version())'))"
  echo "nproc $(nproc); $(uname -sr)"
} >"$work/versions.txt"
cat "$work/versions.txt"

tree=$work/tree
if $kill_mode; then
  "$pt" mktree -dir "$tree" -n 2000 -min 1024 -max 8192 -large 3 -large-size $((64 << 20)) -seed "$seed" | tee "$work/tree.txt"
else
  "$pt" mktree -dir "$tree" -n "$files" -min 1024 -max 8192 -seed "$seed" | tee "$work/tree.txt"
fi
nfiles=$(awk '{print $2}' "$work/tree.txt")
treebytes=$(awk '{print $4}' "$work/tree.txt")

# startfake ARGS...: starts fakegcs, sets fake_pid, http (HOST:PORT) and grpc.
startfake() {
  : >"$work/addrs"
  "$work/fakegcs" "$@" >"$work/addrs" 2>>"$work/fakegcs.log" &
  fake_pid=$!
  pids+=("$fake_pid")
  for _ in $(seq 1 100); do
    [ "$(wc -l <"$work/addrs")" -ge 2 ] && break
    kill -0 "$fake_pid" 2>/dev/null || { cat "$work/fakegcs.log" >&2; exit 1; }
    sleep 0.1
  done
  http=$(sed -n 's|^http http://||p' "$work/addrs")
  grpc=$(sed -n 's|^grpc ||p' "$work/addrs")
  [ -n "$http" ] && [ -n "$grpc" ] || { echo "$0: fakegcs did not start" >&2; exit 1; }
}
stopfake() {
  kill "$fake_pid" 2>/dev/null || true
  wait "$fake_pid" 2>/dev/null || true
}

# startproxy TARGET: a counting proxy in front of TARGET; sets proxy_pid
# and proxy (HOST:PORT). stopproxy NAME writes its counts to $work/NAME.bytes.
startproxy() {
  : >"$work/proxy.out"
  rm -f "$work/proxy.count"
  "$pt" proxy -target "$1" -count "$work/proxy.count" >"$work/proxy.out" 2>>"$work/proxy.log" &
  proxy_pid=$!
  pids+=("$proxy_pid")
  for _ in $(seq 1 100); do
    [ -s "$work/proxy.out" ] && break
    sleep 0.05
  done
  proxy=$(sed -n 's/^listen //p' "$work/proxy.out")
  [ -n "$proxy" ] || { echo "$0: proxy did not start" >&2; exit 1; }
}
stopproxy() {
  kill -TERM "$proxy_pid"
  wait "$proxy_pid" || true
  tail -1 "$work/proxy.out" >"$work/$1.bytes"
}

# mkbucket NAME: a bucket with versioning, through the JSON API.
mkbucket() {
  curl -sf -o /dev/null -X POST -H 'content-type: application/json' \
    -d "{\"name\":\"$1\",\"versioning\":{\"enabled\":true}}" "http://$http/storage/v1/b?project=p"
}

# gcloud's configuration: a throwaway directory per sequence of runs
# (tracker files live in it), credentials off, the storage endpoint the
# fake (or the proxy), 2 processes x 32 threads = 64 workers.
gcloudconfig() {
  local dir=$1
  mkdir -p "$dir"
  CLOUDSDK_CONFIG=$dir gcloud config set storage/process_count 2 >/dev/null 2>&1
  CLOUDSDK_CONFIG=$dir gcloud config set storage/thread_count 32 >/dev/null 2>&1
}

# peercmd PEER BUCKET EP_HTTP EP_GRPC STATE: sets cmd (an array) and
# cmdenv (env assignments) for PEER uploading $tree as tree/... into
# BUCKET, through the JSON endpoint EP_HTTP (HOST:PORT) or gRPC EP_GRPC.
# STATE is a directory the peer may keep between runs (journal, config).
peercmd() {
  local peer=$1 bucket=$2 eph=$3 epg=$4 state=$5
  cmdenv=()
  case "$peer" in
    objup)
      # The journal where the command keeps it by default,
      # os.UserCacheDir()/objup/journal, with the cache directory moved
      # into the work directory (same disk) so as to leave nothing behind.
      cmdenv=("STORAGE_EMULATOR_HOST_GRPC=$epg" "XDG_CACHE_HOME=$state/cache")
      cmd=("$work/objup" cp -r "$tree" "gs://$bucket/tree" --concurrency 64 --progress-every 0) ;;
    objup-tmpfs)
      cmdenv=("STORAGE_EMULATOR_HOST_GRPC=$epg")
      cmd=("$work/objup" cp -r "$tree" "gs://$bucket/tree" --concurrency 64 --journal "$shm/$(basename "$state")/journal" --progress-every 0) ;;
    objup-http)
      cmdenv=("STORAGE_EMULATOR_HOST=http://$eph")
      cmd=("$work/objup" cp -r "$tree" "gs://$bucket/tree" --http --concurrency 64 --journal "$state/journal" --progress-every 0) ;;
    many)
      cmdenv=("STORAGE_EMULATOR_HOST_GRPC=$epg")
      cmd=("$pt" many -dir "$tree" -bucket "$bucket" -prefix tree/ -concurrency 64) ;;
    many-http)
      cmdenv=("STORAGE_EMULATOR_HOST=http://$eph")
      cmd=("$pt" many -dir "$tree" -bucket "$bucket" -prefix tree/ -concurrency 64 -http) ;;
    each)
      cmdenv=("STORAGE_EMULATOR_HOST_GRPC=$epg")
      cmd=("$pt" many -each -dir "$tree" -bucket "$bucket" -prefix tree/ -concurrency 64) ;;
    each-http)
      cmdenv=("STORAGE_EMULATOR_HOST=http://$eph")
      cmd=("$pt" many -each -dir "$tree" -bucket "$bucket" -prefix tree/ -concurrency 64 -http) ;;
    rclone)
      mkdir -p "$state"
      printf '[fake]\ntype = google cloud storage\nanonymous = true\nendpoint = http://%s/storage/v1/\nbucket_policy_only = true\n' "$eph" >"$state/rclone.conf"
      cmd=(rclone --config "$state/rclone.conf" copy "$tree" "fake:$bucket/tree" --transfers 64 --checkers 64) ;;
    gcloud)
      [ -d "$state/gcloud" ] || gcloudconfig "$state/gcloud"
      cmdenv=("CLOUDSDK_CONFIG=$state/gcloud" "CLOUDSDK_API_ENDPOINT_OVERRIDES_STORAGE=http://$eph/"
        CLOUDSDK_AUTH_DISABLE_CREDENTIALS=True CLOUDSDK_CORE_PROJECT=p CLOUDSDK_CORE_DISABLE_PROMPTS=1
        CLOUDSDK_CORE_DISABLE_USAGE_REPORTING=true CLOUDSDK_COMPONENT_MANAGER_DISABLE_UPDATE_CHECK=true)
      cmd=(gcloud storage cp -r "$tree" "gs://$bucket/")
      if $kill_mode; then cmd+=(--manifest-path "$state/manifest.csv"); fi ;;
    py-thread|py-process)
      cmdenv=("STORAGE_EMULATOR_HOST=http://$eph")
      cmd=("$py" "$root/integration/peers/upload.py" "$tree" "$bucket" tree/ 64 "${peer#py-}")
      if $kill_mode; then cmd+=(skip); fi ;;
    *) echo "$0: unknown peer $peer" >&2; exit 2 ;;
  esac
}

available() {
  case "$1" in
    rclone) command -v rclone >/dev/null ;;
    gcloud) command -v gcloud >/dev/null ;;
    *) true ;;
  esac
}

# timev FILE: wall seconds, CPU seconds (user+sys), peak RSS KiB, exit
# status from a /usr/bin/time -v output.
timev() {
  awk -F': ' '
    /User time/ {u=$2} /System time/ {s=$2} /Maximum resident/ {m=$2} /Exit status/ {x=$2}
    /Elapsed \(wall clock\)/ {n=split($2,a,":"); w=0; for(i=1;i<=n;i++) w=w*60+a[i]}
    END {printf "%.2f %.2f %d %s\n", w, u+s, m, x}' "$1"
}

# launch NAME: starts cmd under nice and /usr/bin/time -v in a process
# group of its own; sets run_pid (the time process, the group's leader).
launch() {
  local name=$1
  env "${cmdenv[@]}" setsid nice -n 5 /usr/bin/time -v -o "$work/$name.time" "${cmd[@]}" \
    >"$work/$name.out" 2>"$work/$name.err" </dev/null &
  run_pid=$!
}

# killgroup: SIGKILL to every process of run_pid's group but time itself,
# which then reports what it measured; a few passes, for children forked
# meanwhile.
killgroup() {
  local pass p
  for pass in 1 2 3 4 5; do
    local any=false
    for p in $(pgrep -g "$run_pid" 2>/dev/null || true); do
      [ "$p" = "$run_pid" ] && continue
      kill -KILL "$p" 2>/dev/null && any=true
    done
    $any || break
    sleep 0.2
  done
}

# upcount: the bytes the current proxy has forwarded up.
upcount() {
  local c
  c=$(cat "$work/proxy.count" 2>/dev/null || true)
  echo "${c:-0}"
}

# waitbytes N: waits (up to 30 min) until the proxy has forwarded N bytes
# up or run_pid ended; returns 0 if it ended (status in run_rc), 1 if the
# bytes went out first.
waitbytes() {
  local i
  for ((i = 0; i < 36000; i++)); do
    if ! kill -0 "$run_pid" 2>/dev/null; then
      run_rc=0; wait "$run_pid" || run_rc=$?
      return 0
    fi
    [ "$(upcount)" -ge "$1" ] && return 1
    sleep 0.05
  done
  return 1
}

# waitrun LIMIT: waits up to LIMIT deciseconds for run_pid; returns 0 if
# it ended (status in run_rc), 1 if it still runs.
waitrun() {
  local i
  for ((i = 0; i < $1; i++)); do
    if ! kill -0 "$run_pid" 2>/dev/null; then
      run_rc=0; wait "$run_pid" || run_rc=$?
      return 0
    fi
    sleep 0.1
  done
  return 1
}

results=$work/results.tsv
if ! $kill_mode; then
  echo -e "round\tpeer\tfiles\twall_s\tcpu_s\tpeak_rss_kib\tobjects_per_s\texit\tverify" >"$results"
  read -r -a plist <<<"$peers"
  for ((r = 1; r <= rounds; r++)); do
    args=()
    for p in "${plist[@]}"; do args+=(-bucket "pr-$p"); done
    startfake "${args[@]}"
    # Rotate the order each round.
    n=${#plist[@]}
    for ((k = 0; k < n; k++)); do
      p=${plist[$(((k + r - 1) % n))]}
      available "$p" || { echo "round $r: $p: skipped (not installed)"; continue; }
      name=r$r-$p
      peercmd "$p" "pr-$p" "$http" "$grpc" "$work/state-$name"
      mkdir -p "$work/state-$name" "$shm/state-$name"
      launch "$name"
      if ! waitrun 18000; then killgroup; waitrun 100 || true; echo "round $r: $p: timed out" >&2; fi
      read -r wall cpu rss rc < <(timev "$work/$name.time")
      v=$("$pt" verify -host "$http" -bucket "pr-$p" -prefix tree/ -dir "$tree" 2>&1 | tail -1 || true)
      ops=$(awk -v n="$nfiles" -v w="$wall" 'BEGIN {printf "%.0f", (w > 0 ? n / w : 0)}')
      echo -e "$r\t$p\t$nfiles\t$wall\t$cpu\t$rss\t$ops\t$rc\t$v" | tee -a "$results"
      rm -rf "$shm/state-$name"
    done
    stopfake
  done
  exit 0
fi

# The kill variant.
# The kills' moments: seconds after each start (-kill-at secs: 1.5-4.5 s),
# or fractions of the peer's own clean run's wall time (-kill-at frac, the
# default: 0.2-0.8), drawn from the seed: the same for every peer.
if [ "$kill_at" = bytes ]; then
  fracs=$(awk -v s="$seed" -v k="$kills" 'BEGIN {srand(s); for (i = 0; i < k; i++) printf "%.2f ", 0.1 + 0.4 * rand()}')
  delays=$fracs
  echo "kill moments (fractions of the tree's bytes sent in the run): $fracs" | tee "$work/delays.txt"
elif [ "$kill_at" = secs ]; then
  delays=$(awk -v s="$seed" -v k="$kills" 'BEGIN {srand(s); for (i = 0; i < k; i++) printf "%.1f ", 1.5 + 3 * rand()}')
  echo "kill delays (s): $delays" | tee "$work/delays.txt"
else
  fracs=$(awk -v s="$seed" -v k="$kills" 'BEGIN {srand(s); for (i = 0; i < k; i++) printf "%.2f ", 0.2 + 0.6 * rand()}')
  echo "kill moments (fractions of each peer's clean run): $fracs" | tee "$work/delays.txt"
fi
startfake -data "$work/fakedata" -bandwidth "$bandwidth"
echo -e "peer\tclean_bytes_up\tclean_wall_s\tkilled_bytes_up\tsent_again\tsent_again_pct_of_tree\truns\tkills_landed\twall_s\tcpu_s\tpeak_rss_kib\tfinal_exit\tverify" >"$results"
for p in $peers; do
  available "$p" || { echo "$p: skipped (not installed)"; continue; }
  target=$http
  case "$p" in objup|many) target=$grpc ;; esac
  # The clean run.
  mkbucket "pk-$p-clean"
  startproxy "$target"
  peercmd "$p" "pk-$p-clean" "$proxy" "$proxy" "$work/state-$p-clean"
  mkdir -p "$work/state-$p-clean"
  launch "k-$p-clean"
  if ! waitrun 18000; then killgroup; waitrun 100 || true; fi
  stopproxy "k-$p-clean"
  read -r cwall _ _ _ < <(timev "$work/k-$p-clean.time")
  clean=$(sed 's/.*"bytesUp":\([0-9]*\).*/\1/' "$work/k-$p-clean.bytes")
  if [ "$kill_at" = frac ]; then
    delays=$(for f in $fracs; do awk -v f="$f" -v w="$cwall" 'BEGIN {printf "%.1f ", f * w}'; done)
    echo "$p: kill delays (s): $delays" | tee -a "$work/delays.txt"
  fi
  # The killed runs, then runs until one exits 0.
  mkbucket "pk-$p"
  startproxy "$target"
  mkdir -p "$work/state-$p"
  runs=0 landed=0 twall=0 tcpu=0 peak=0 rc=x
  for d in $delays; do
    runs=$((runs + 1))
    peercmd "$p" "pk-$p" "$proxy" "$proxy" "$work/state-$p"
    if [ "$kill_at" = bytes ]; then
      sleep 0.1 # the proxy's count catches up with the last run's bytes
      at=$(awk -v f="$d" -v t="$treebytes" -v b="$(upcount)" 'BEGIN {printf "%d", b + f * t}')
      launch "k-$p-$runs"
      waitbytes "$at" && ended=true || ended=false
    else
      launch "k-$p-$runs"
      ds=$(awk -v d="$d" 'BEGIN {printf "%d", d * 10}')
      waitrun "$ds" && ended=true || ended=false
    fi
    if $ended; then
      rc=$run_rc
    else
      killgroup; landed=$((landed + 1)); waitrun 100 || true; rc=killed
    fi
    read -r w c m _ < <(timev "$work/k-$p-$runs.time")
    twall=$(awk -v a="$twall" -v b="$w" 'BEGIN {print a + b}'); tcpu=$(awk -v a="$tcpu" -v b="$c" 'BEGIN {print a + b}')
    [ "$m" -gt "$peak" ] && peak=$m
    sleep 0.1
    echo "$p: run $runs: $rc after ${w}s, $(upcount) bytes up so far"
    [ "$rc" = 0 ] && break
  done
  f=0
  while [ "$rc" != 0 ] && [ "$f" -lt "$final" ]; do
    f=$((f + 1)) runs=$((runs + 1))
    peercmd "$p" "pk-$p" "$proxy" "$proxy" "$work/state-$p"
    launch "k-$p-$runs"
    if waitrun 18000; then rc=$run_rc; else killgroup; waitrun 100 || true; rc=timeout; fi
    read -r w c m _ < <(timev "$work/k-$p-$runs.time")
    twall=$(awk -v a="$twall" -v b="$w" 'BEGIN {print a + b}'); tcpu=$(awk -v a="$tcpu" -v b="$c" 'BEGIN {print a + b}')
    [ "$m" -gt "$peak" ] && peak=$m
    sleep 0.1
    echo "$p: run $runs: exit $rc after ${w}s, $(upcount) bytes up so far"
  done
  stopproxy "k-$p"
  total=$(sed 's/.*"bytesUp":\([0-9]*\).*/\1/' "$work/k-$p.bytes")
  again=$((total - clean))
  pct=$(awk -v a="$again" -v t="$treebytes" 'BEGIN {printf "%.1f", 100 * a / t}')
  v=$("$pt" verify -host "$http" -bucket "pk-$p" -prefix tree/ -dir "$tree" 2>&1 | tail -1 || true)
  echo -e "$p\t$clean\t$cwall\t$total\t$again\t$pct\t$runs\t$landed\t$twall\t$tcpu\t$peak\t$rc\t$v" | tee -a "$results"
done
stopfake
echo "tree: $nfiles files, $treebytes bytes" | tee -a "$work/tree.txt"

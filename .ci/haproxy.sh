#!/usr/bin/env bash
# Installs HAProxy (Debian's package, 2.6 on bookworm) for the tests that put
# a real L7 front end in the path (package fakes/frontend), if it is
# missing. It needs root and apt-get; where either is missing it says so
# and exits 0, and those tests skip with a clear message.
set -euo pipefail
if command -v haproxy >/dev/null 2>&1; then
  haproxy -v | head -n 1
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "haproxy.sh: haproxy is not installed and this is not root: cannot install it; the front-end tests will skip" >&2
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "haproxy.sh: haproxy is not installed and there is no apt-get: cannot install it; the front-end tests will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -q || ! apt-get install -y -q --no-install-recommends haproxy; then
  echo "haproxy.sh: apt-get could not install haproxy; the front-end tests will skip" >&2
  exit 0
fi
haproxy -v | head -n 1

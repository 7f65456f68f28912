#!/bin/sh
# SPDX-License-Identifier: MIT
# Install what building, testing and benchmarking ito needs on Debian/Ubuntu.
# Usage: scripts/deps.sh build|test|run
# As root it installs missing packages with apt-get; otherwise it prints the
# one command to run and fails.
set -eu
what=${1:-build}

pkgs="cmake ninja-build gcc make pkg-config liburing-dev libhwloc-dev libunwind-dev systemtap-sdt-dev"
case "$what" in
  # g++: tests/posix/cxx_unwind.cpp. Unmodified programs that libito-pthread
  # runs (tests/posix/programs.sh,
  # bench/experiments/programs.py).
  test) pkgs="$pkgs g++ valgrind gdb python3 binutils pigz xz-utils zstd redis-server redis-tools" ;;
  run)  pkgs="$pkgs python3 python3-matplotlib pigz xz-utils zstd redis-server redis-tools" ;;
esac

missing=""
for p in $pkgs; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ito: missing packages:$missing (and no apt-get here); install them by hand." >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "ito: missing packages:$missing" >&2
  echo "ito: run:  sudo apt-get install -y$missing" >&2
  exit 1
fi
echo "ito: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 || {
  apt-get update >/dev/null && apt-get install -y --no-install-recommends $missing; }

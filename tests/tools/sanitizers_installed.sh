#!/bin/sh
# SPDX-License-Identifier: MIT
# The sanitizer variants of the installed library: a program built with
# -fsanitize=thread against libito-tsan (pkg-config ito-tsan) runs threads
# that spawn, join and reuse each other's stacks without a report from
# ThreadSanitizer; one built with -fsanitize=address against libito-asan
# runs clean under AddressSanitizer. (Built against the plain libito, the
# first program gets reports about stacks that ito reuses: the reason for
# the variants; counted here, not required.)
# Usage: sanitizers_installed.sh <build-dir> <source-dir>
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in lib/libito-tsan.so lib/libito-asan.so lib/pkgconfig/ito-tsan.pc lib/pkgconfig/ito-asan.pc; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
export ITO_ALLOC_DOMAIN=test-sanitizers-installed

cc -O1 -g -o "$tmp/fib_tsan" "$src/examples/fib.c" $(pkg-config --cflags --libs ito-tsan) -Wl,-rpath,"$prefix/lib"
cc -O1 -g -o "$tmp/prodcons_tsan" "$src/examples/prodcons.c" $(pkg-config --cflags --libs ito-tsan) -Wl,-rpath,"$prefix/lib"
for p in fib_tsan prodcons_tsan; do
  if ! TSAN_OPTIONS="halt_on_error=1 exitcode=66" timeout 300 "$tmp/$p" > "$tmp/$p.out" 2> "$tmp/$p.err"; then
    echo "$p failed:"; cat "$tmp/$p.err"; exit 1
  fi
  if grep -q "WARNING: ThreadSanitizer" "$tmp/$p.err"; then
    echo "$p: ThreadSanitizer reported:"; cat "$tmp/$p.err"; exit 1
  fi
done

cc -O1 -g -o "$tmp/fib_asan" "$src/examples/fib.c" $(pkg-config --cflags --libs ito-asan) -Wl,-rpath,"$prefix/lib"
if ! timeout 300 "$tmp/fib_asan" > "$tmp/fib_asan.out" 2> "$tmp/fib_asan.err"; then
  echo "fib_asan failed:"; cat "$tmp/fib_asan.err"; exit 1
fi

# The plain library under a TSan program, for the record.
cc -O1 -g -fsanitize=thread -o "$tmp/prodcons_plain" "$src/examples/prodcons.c" $(pkg-config --cflags --libs ito) -Wl,-rpath,"$prefix/lib"
TSAN_OPTIONS="exitcode=0" timeout 300 "$tmp/prodcons_plain" > /dev/null 2> "$tmp/prodcons_plain.err" || true
echo "sanitizers: libito-tsan and libito-asan run clean; prodcons on the plain libito got $(grep -c 'WARNING: ThreadSanitizer' "$tmp/prodcons_plain.err" || true) ThreadSanitizer reports"

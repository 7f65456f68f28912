#!/bin/sh
# SPDX-License-Identifier: MIT
# The debugger support as `make install` ships it: configure and build the
# Release configuration (as the Makefile's install does) in a temporary
# folder, install it into a temporary prefix, build gdb_target.c against the
# installed library twice — shared (libito.so) and static (libito.a) — and
# run gdb_tools.sh's checks on each, live and on a core file, with gdb given
# nothing but the auto-load settings that docs/diagnostics.md tells users to
# add: the script must come from the installed files alone.
# Usage: gdb_installed.sh <source-dir> <cmake> [<generator>]
# Exit status 77: skipped (no gdb with Python, no pkg-config, or attaching
# is not allowed).
set -eu
src=$(cd "$1" && pwd)
cmake=$2
gen=${3:-}
command -v gdb >/dev/null 2>&1 || { echo "SKIP: no gdb"; exit 77; }
command -v pkg-config >/dev/null 2>&1 || { echo "SKIP: no pkg-config"; exit 77; }
# A real path: gdb finds a library's script by the library's real path.
tmp=$(cd "$(mktemp -d)" && pwd -P)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

"$cmake" -S "$src" -B "$tmp/build" ${gen:+-G "$gen"} -DCMAKE_BUILD_TYPE=Release \
  -DITO_BUILD_TESTS=OFF -DITO_BUILD_BENCH=OFF -DITO_BUILD_EXAMPLES=OFF -DITO_BUILD_SANITIZER_LIBS=OFF > "$tmp/log" 2>&1 &&
"$cmake" --build "$tmp/build" -j 2 >> "$tmp/log" 2>&1 &&
"$cmake" --install "$tmp/build" --prefix "$prefix" >> "$tmp/log" 2>&1 ||
  { cat "$tmp/log"; echo "FAIL: the Release build or its install"; exit 1; }

lib=$(cd "$prefix/lib" && ls libito.so.*.*.*)
auto=$prefix/share/gdb/auto-load
[ -f "$auto$prefix/lib/$lib-gdb.py" ] ||
  { find "$prefix" -name '*gdb*'; echo "FAIL: no $auto$prefix/lib/$lib-gdb.py"; exit 1; }
[ -f "$prefix/share/ito/ito-gdb.py" ] || { echo "FAIL: no share/ito/ito-gdb.py"; exit 1; }
if readelf -SW "$prefix/lib/$lib" | grep -q debug_gdb_scripts; then
  echo "FAIL: $lib carries the script section (it has its auto-load file)"; exit 1
fi
readelf -SW "$prefix/lib/$lib" | grep -q "\.debug_info" ||
  { echo "FAIL: the installed $lib has no debug information"; exit 1; }

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
mkdir "$tmp/bin"
cc -g -O1 -o "$tmp/bin/target_shared" "$src/tests/tools/gdb_target.c" \
  $(pkg-config --cflags --libs ito) -Wl,-rpath,"$prefix/lib"
cc -g -O1 -o "$tmp/bin/target_static" "$src/tests/tools/gdb_target.c" $(pkg-config --cflags ito) \
  "$prefix/lib/libito.a" $(pkg-config --static --libs-only-l --libs-only-other ito | sed 's/-lito//')
readelf -SW "$tmp/bin/target_static" | grep -q debug_gdb_scripts ||
  { echo "FAIL: a program linked with libito.a does not carry the script"; exit 1; }

# Shared: the two lines for a prefix other than /usr (docs/diagnostics.md).
echo "=== shared (libito.so), auto-loaded from $auto"
sh "$src/tests/tools/gdb_tools.sh" "$tmp/bin/target_shared" "$src" \
  -iex "add-auto-load-scripts-directory $auto" -iex "add-auto-load-safe-path $auto" ||
  exit $?
# Static: the program's own section; the safe path names the program.
echo "=== static (libito.a), auto-loaded from the program"
sh "$src/tests/tools/gdb_tools.sh" "$tmp/bin/target_static" "$src" \
  -iex "add-auto-load-safe-path $tmp/bin/target_static" ||
  exit $?
echo "gdb with the installed files: ok"

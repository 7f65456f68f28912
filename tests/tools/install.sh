#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the build into a temporary prefix and build a program against it
# three ways: pkg-config with the shared library, pkg-config --static, and
# CMake's find_package(ito).
# Usage: install.sh <build-dir> <source-dir>
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/ito.h include/ito/cont.h include/ito/policy.h lib/pkgconfig/ito.pc \
         lib/cmake/ito/itoConfig.cmake lib/libito.a; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
ls "$prefix"/lib/libito.so* >/dev/null

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
cc -o "$tmp/hello" "$src/examples/hello.c" $(pkg-config --cflags --libs ito) -Wl,-rpath,"$prefix/lib"
"$tmp/hello" >/dev/null
cc -o "$tmp/hello_static" "$src/examples/hello.c" $(pkg-config --cflags ito) "$prefix/lib/libito.a" \
   $(pkg-config --static --libs-only-l --libs-only-other ito | sed 's/-lito//')
"$tmp/hello_static" >/dev/null

mkdir -p "$tmp/proj"
cat > "$tmp/proj/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(uses_ito C)
find_package(ito REQUIRED)
add_executable(hello_shared $src/examples/hello.c)
target_link_libraries(hello_shared PRIVATE ito::ito)
add_executable(hello_static $src/examples/hello.c)
target_link_libraries(hello_static PRIVATE ito::ito_static)
CMAKE
cmake -S "$tmp/proj" -B "$tmp/proj/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/proj/build" >/dev/null
"$tmp/proj/build/hello_shared" >/dev/null
"$tmp/proj/build/hello_static" >/dev/null
echo "install: headers, libraries, ito.pc and the CMake package work"

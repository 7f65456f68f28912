#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the build into a temporary prefix and build a program against it
# three ways: pkg-config with the shared library, pkg-config --static, and
# CMake's find_package(ito). Then build every example (examples/*.c) against
# the prefix as a user's project would — with pkg-config, and with a CMake
# project that finds ito (as examples/README.md shows) — run each pkg-config
# build once, and run the echo pair of the CMake build (examples/echo_test.sh).
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

# Every example, with pkg-config. Each one that runs on its own runs once
# (echo_server and echo_client need each other: below).
mkdir -p "$tmp/pc"
for f in "$src"/examples/*.c; do
  ex=$(basename "$f" .c)
  cc -o "$tmp/pc/$ex" "$f" $(pkg-config --cflags --libs ito) -Wl,-rpath,"$prefix/lib" ||
    { echo "install: examples/$ex.c does not build with pkg-config"; exit 1; }
  case $ex in
    echo_server|echo_client) ;;
    *) "$tmp/pc/$ex" >/dev/null || { echo "install: $ex (pkg-config build) failed"; exit 1; } ;;
  esac
done

# Every example, with a CMake project of their own, as in examples/README.md.
mkdir -p "$tmp/exproj"
{
  echo 'cmake_minimum_required(VERSION 3.20)'
  echo 'project(ito_examples C)'
  echo 'find_package(ito 0.1 REQUIRED)'
  for f in "$src"/examples/*.c; do
    ex=$(basename "$f" .c)
    echo "add_executable($ex $f)"
    echo "target_link_libraries($ex PRIVATE ito::ito)"
  done
} > "$tmp/exproj/CMakeLists.txt"
cmake -S "$tmp/exproj" -B "$tmp/exproj/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$tmp/exproj/build" >/dev/null ||
  { echo "install: the examples do not build with find_package(ito)"; exit 1; }
sh "$src/examples/echo_test.sh" "$tmp/exproj/build/echo_server" "$tmp/exproj/build/echo_client" >"$tmp/echo.log" ||
  { cat "$tmp/echo.log"; echo "install: the echo pair (CMake build) failed"; exit 1; }
echo "install: headers, libraries, ito.pc and the CMake package work; every example builds against them"

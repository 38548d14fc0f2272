#!/usr/bin/env bash
# Installs to a temporary prefix, then builds programs outside the project the ways users do: a C program with
# pkg-config, a CMake project with find_package(ratewarden), and the Go example through cgo + pkg-config.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libratewarden.so' | head -1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig"
export LD_LIBRARY_PATH="$libdir"

echo "== C with pkg-config: $(pkg-config --cflags --libs ratewarden)"
cc -std=c11 -Wall -Wextra -Werror "$src/examples/c/login.c" $(pkg-config --cflags --libs ratewarden) -o "$tmp/login"
"$tmp/login" | tee "$tmp/c.out"
grep -q '^6 .*429 .*60 s$' "$tmp/c.out"

echo "== CMake find_package(ratewarden)"
mkdir -p "$tmp/cmake"
cat > "$tmp/cmake/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.18)
project(outside C)
find_package(ratewarden 0.1 REQUIRED)
add_executable(login "$src/examples/c/login.c")
target_link_libraries(login PRIVATE ratewarden::ratewarden)
CMAKE
cmake -S "$tmp/cmake" -B "$tmp/cmake/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake/build" >/dev/null
"$tmp/cmake/build/login" | grep -q '429'

echo "== Go through cgo"
go=$(command -v go || echo /usr/local/go/bin/go)
cd "$src/examples/go"
GOFLAGS=-mod=mod GOCACHE="$tmp/gocache" "$go" run . | tee "$tmp/go.out"
grep -q '^6 .*429 .*60 s$' "$tmp/go.out"
grep -q '^7 .*bob .*200' "$tmp/go.out"
echo "install test: 3 outside builds passed"

#!/usr/bin/env bash
# Installs to a temporary prefix, then builds programs outside the project the ways users do: a C program with
# pkg-config (once with an rpath, run without LD_LIBRARY_PATH, as docs/c.md shows for a non-system prefix), a CMake
# project with find_package(ratewarden), the Go example through cgo + pkg-config, and the C++ API from outside the
# tree: examples/cpp/login_demo.cpp with pkg-config ratewarden-cpp and with find_package(ratewarden COMPONENTS cpp).
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libratewarden.so' | head -1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig"

echo "== C with pkg-config and an rpath (no LD_LIBRARY_PATH)"
cc -std=c11 -Wall -Wextra -Werror "$src/examples/c/login.c" $(pkg-config --cflags --libs ratewarden) \
  -Wl,-rpath,"$(pkg-config --variable=libdir ratewarden)" -o "$tmp/login-rpath"
env -u LD_LIBRARY_PATH "$tmp/login-rpath" | grep -q '^6 .*429 .*60 s$'

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

echo "== C++ with pkg-config ratewarden-cpp: $(pkg-config --libs ratewarden-cpp)"
c++ -std=c++17 -Wall -Wextra -Werror "$src/examples/cpp/login_demo.cpp" $(pkg-config --cflags --libs ratewarden-cpp) \
  -o "$tmp/login_demo"
"$tmp/login_demo" | grep -q '^6 .*429 .*60 s$'

echo "== C++ with CMake find_package(ratewarden COMPONENTS cpp)"
mkdir -p "$tmp/cpp"
cat > "$tmp/cpp/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.18)
project(outside_cpp CXX)
find_package(ratewarden 0.1 REQUIRED COMPONENTS cpp)
add_executable(login_demo "$src/examples/cpp/login_demo.cpp")
target_link_libraries(login_demo PRIVATE ratewarden::core)
CMAKE
cmake -S "$tmp/cpp" -B "$tmp/cpp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cpp/build" >/dev/null
"$tmp/cpp/build/login_demo" | grep -q '^6 .*429 .*60 s$'

echo "== Go through cgo"
go=$(command -v go || echo /usr/local/go/bin/go)
cd "$src/examples/go"
GOFLAGS=-mod=mod GOCACHE="$tmp/gocache" "$go" run . | tee "$tmp/go.out"
grep -q '^6 .*429 .*60 s$' "$tmp/go.out"
grep -q '^7 .*bob .*200' "$tmp/go.out"
echo "install test: 6 outside builds passed"

#!/usr/bin/env bash
# Installs the system packages the build and the tests need (Debian 12). Safe to run again: it only calls apt when
# something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  libhiredis-dev libssl-dev openssl redis-server redis-tools
  libpq-dev postgresql
  binutils python3 python3-pytest
  python3-venv python3-dev wrk
  prometheus  # its promtool checks the metrics' exposition in the tests
  valgrind  # bench/hit_instructions.sh counts a hit's instructions with callgrind (CI holds them under a ceiling)
  ccache  # scripts/test.sh: the core compiled once for the wheels, the prebuilt addon and the source tarball
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libyaml-cpp-dev  # ratewarden-server
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 \
  "${missing[@]}" >/dev/null

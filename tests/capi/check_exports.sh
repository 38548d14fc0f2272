#!/usr/bin/env bash
# The shared library's dynamic symbol table holds only rw_* names (plus the linker's own markers).
set -euo pipefail
lib=$1
symbols=$(nm -D --defined-only "$lib" | awk '{print $3}')
extra=$(echo "$symbols" | grep -v '^rw_' | grep -v -E '^(_init|_fini|RW_[0-9.]+)?$' || true)
count=$(echo "$symbols" | grep -c '^rw_')
if [ -n "$extra" ]; then
  echo "exported beyond the C ABI:"; echo "$extra"; exit 1
fi
soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
echo "$count rw_* symbols exported, nothing else; SONAME $soname"
[ -n "$soname" ]

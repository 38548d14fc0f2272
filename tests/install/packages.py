#!/usr/bin/env python3
"""What scripts/build_packages.sh left in a dist folder: each package with its size and tags. As a script, prints
the table (packages.py DIST)."""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import List, NamedTuple


class Package(NamedTuple):
    path: Path
    kind: str  # wheel, sdist, npm
    tags: str  # a wheel's python-abi-platform tags, as auditwheel named them

    @property
    def size_mb(self) -> float:
        return self.path.stat().st_size / 1e6


def packages(dist: Path) -> List[Package]:
    found = []
    def order(path: Path) -> tuple:  # cp39 before cp310
        return tuple(int(n) if n.isdigit() else n for n in re.split(r"(\d+)", path.name))

    for path in sorted(dist.glob("ratewarden-*"), key=order):
        if path.name.endswith(".whl"):
            found.append(Package(path, "wheel", "-".join(path.stem.split("-")[2:])))
        elif path.name.endswith(".tar.gz"):
            found.append(Package(path, "sdist", "source (needs a compiler, CMake, hiredis, OpenSSL)"))
        elif path.name.endswith(".tgz"):
            found.append(Package(path, "npm", "prebuilds/linux-x64 (N-API) + sources"))
    return found


def table(dist: Path) -> str:
    rows = [(p.path.name, f"{p.size_mb:.1f} MB", p.tags) for p in packages(dist)]
    widths = [max(len(r[i]) for r in rows + [("file", "size", "tags")]) for i in range(3)]
    return "\n".join(f"  {a:<{widths[0]}}  {b:>{widths[1]}}  {c}" for a, b, c in [("file", "size", "tags")] + rows)


if __name__ == "__main__":
    print(f"packages in {sys.argv[1]}:\n{table(Path(sys.argv[1]))}")

"""What ships: the typing marker, the stubs (checked against the module), the public names, the version."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
from pathlib import Path

import ratewarden
from ratewarden import _native

PACKAGE = Path(ratewarden.__file__).parent
ROOT = Path(__file__).resolve().parents[2]


def test_typing_files_ship() -> None:
    assert (PACKAGE / "py.typed").is_file()
    assert (PACKAGE / "_native.pyi").is_file()


def test_stub_names_match_the_module() -> None:
    tree = ast.parse((PACKAGE / "_native.pyi").read_text())
    stub = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
    stub |= {t.id for n in tree.body if isinstance(n, ast.AnnAssign) for t in [n.target] if isinstance(t, ast.Name)}
    public = {name for name in dir(_native) if not name.startswith("__")}
    assert stub == public
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef):
            members = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
            missing = {m for m in members if not hasattr(getattr(_native, cls.name), m)}
            assert not missing, f"{cls.name}: {missing}"


def test_public_api() -> None:
    assert set(ratewarden.__all__) == {
        "Decision", "Error", "InvalidArgumentError", "KeyList", "Limiter", "Paced", "Policy", "RateLimitTimeout",
        "Store", "StoreError", "StoreStats", "TestClock", "__version__", "open_store",
        # Figures and events (test_metrics.py)
        "Event", "LimiterStats", "MetricFamily", "limiter_stats", "metric_families", "off_event", "on_event",
        "prometheus_text", "store_stats",
    }
    assert issubclass(ratewarden.RateLimitTimeout, ratewarden.Error)
    assert issubclass(ratewarden.RateLimitTimeout, TimeoutError)
    assert issubclass(ratewarden.InvalidArgumentError, ValueError)
    assert issubclass(ratewarden.StoreError, ratewarden.Error)


def header_version() -> str:
    header = (ROOT / "capi" / "include" / "ratewarden.h").read_text()
    parts: list[str] = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        match = re.search(rf"^#define RW_VERSION_{part} (\d+)$", header, re.MULTILINE)
        assert match, f"RW_VERSION_{part} not found in the C header"
        parts.append(match.group(1))
    return ".".join(parts)


def test_version_is_the_c_headers() -> None:
    """The RW_VERSION_* lines of the C header are the one version: the native core reports it, scikit-build-core's
    regex provider puts it in the metadata, and package.json (which cannot read it) repeats it, as its lock file does.
    tests/node/version.test.js checks the Node addon's."""
    expected = header_version()
    assert ratewarden.__version__ == expected
    assert importlib.metadata.version("ratewarden") == expected
    package = json.loads((ROOT / "package.json").read_text())
    lock = json.loads((ROOT / "package-lock.json").read_text())
    for where, version in [("package.json", package["version"]), ("package-lock.json", lock["version"]),
                           ("package-lock.json packages['']", lock["packages"][""]["version"])]:
        assert version == expected, f"{where} says {version}, the C header {expected}"

"""What ships: the typing marker, the stubs (checked against the module), the public names."""

from __future__ import annotations

import ast
from pathlib import Path

import ratewarden
from ratewarden import _native

PACKAGE = Path(ratewarden.__file__).parent


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
        "Decision", "Error", "InvalidArgumentError", "Limiter", "Policy", "Store", "StoreError", "__version__",
        "open_store",
    }
    assert issubclass(ratewarden.InvalidArgumentError, ValueError)
    assert issubclass(ratewarden.StoreError, ratewarden.Error)

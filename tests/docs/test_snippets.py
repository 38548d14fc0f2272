"""Every fenced code block of README.md and docs/*.md runs, or says where it is shown in full.

The info string (the text after the opening fence) decides what happens to a block:

- `python`, `js`, `c`, `cpp`, `sh`: a complete program, run here and required to exit 0 within 120 s.
  `python` runs with this interpreter (the venv where scripts/test_python.sh installed ratewarden and Flask);
  `js` with `node`, as CommonJS, `require('ratewarden')` resolving to this tree (its addon built by `npm ci`) and
  other packages to its node_modules; `c` is compiled with `cc -std=c11 -Wall -Wextra -Werror` and
  `pkg-config --cflags --libs ratewarden`, `cpp` with `c++ -std=c++17 -Wall -Wextra -Werror` and
  `pkg-config --cflags --libs ratewarden-cpp`, both against `cmake --install` of the build in $RATEWARDEN_BUILD_DIR
  (default build-test, which scripts/test.sh builds first) into a temporary prefix, linked with an rpath to it (the
  way docs/c.md tells for a prefix outside the linker's path); `sh` runs with
  `bash -euo pipefail` from the repository's root. Each runs in a fresh temporary directory (`sh` excepted).
  The address `127.0.0.1:6379` (Redis' default) in a block is replaced by a real redis-server's, started for this
  test by tests/servers/launch.py.
- `<lang> fragment <path>`: a piece of a program, not run; <path>, relative to the repository's root, must be an
  existing file (a test, an example or a script) that shows the code in full.
- `text`: not code (program output, a grammar, a layout, URL forms); nothing is checked. It is the only exempt
  info string: a block with none, or with another language that is not marked as a fragment, fails.

A failure names the file, the line of the opening fence and the info string (the test id is `README.md:42 js`),
with the reason and the block's output.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator, List, NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from redis_server import RedisServer  # noqa: E402

RUNNABLE = {"python", "js", "c", "cpp", "sh"}
EXEMPT = "text"
TIMEOUT_S = 120
DEFAULT_REDIS = "127.0.0.1:6379"


class Block(NamedTuple):
    file: str  # relative to ROOT
    line: int  # of the opening fence, from 1
    info: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line} {self.info or '(no info string)'}"


def doc_files() -> List[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks_of(path: Path) -> Iterator[Block]:
    """Fenced blocks (``` or ~~~, indented by up to 3 spaces) with the line of their opening fence."""
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^ {0,3}(`{3,}|~{3,})(.*)$", lines[i])
        if not opening:
            i += 1
            continue
        fence, info = opening.group(1), opening.group(2).strip()
        body, j = [], i + 1
        while j < len(lines) and not re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[j]):
            body.append(lines[j])
            j += 1
        yield Block(str(path.relative_to(ROOT)), i + 1, info, "\n".join(body) + "\n")
        i = j + 1


BLOCKS = [block for path in doc_files() for block in blocks_of(path)]


def classify(block: Block) -> str:
    """'exempt', 'fragment' (checked here) or 'run'; raises AssertionError with the reason for a bad info string."""
    words = block.info.split()
    if block.info == EXEMPT:
        return "exempt"
    if not words:
        raise AssertionError("a block without an info string: name its language (and run it, or mark it "
                             "`<lang> fragment <path>`), or mark it `text` if it is not code")
    if len(words) >= 2 and words[1] == "fragment":
        if len(words) != 3:
            raise AssertionError(f"bad fragment info string {block.info!r}: expected `<lang> fragment <path>`")
        target = ROOT / words[2]
        if not target.is_file():
            raise AssertionError(f"fragment of {words[2]!r}, which is not a file of the repository")
        return "fragment"
    if len(words) == 1 and words[0] in RUNNABLE:
        return "run"
    raise AssertionError(f"info string {block.info!r}: runnable blocks are {sorted(RUNNABLE)}; anything else must "
                         "be `<lang> fragment <path>` or `text`")


@pytest.fixture(scope="session")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def capi_prefix() -> Iterator[Path]:
    """The C library, C++ headers and pkg-config files installed from the suite's build into a temporary prefix."""
    build = Path(os.environ.get("RATEWARDEN_BUILD_DIR", ROOT / "build-test"))
    if not (build / "cmake_install.cmake").is_file():
        pytest.fail(f"no CMake build in {build}: build one first (scripts/test.sh does) or set RATEWARDEN_BUILD_DIR")
    prefix = Path(tempfile.mkdtemp(prefix="rw-docs-prefix-"))
    try:
        subprocess.run(["cmake", "--install", str(build), "--prefix", str(prefix)], check=True,
                       stdout=subprocess.DEVNULL)
        yield prefix
    finally:
        shutil.rmtree(prefix, ignore_errors=True)


def run(args: List[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(args, -9, (e.stdout or "") + f"\n(killed after {TIMEOUT_S} s)")


def execute(block: Block, code: str, request: pytest.FixtureRequest) -> subprocess.CompletedProcess:
    lang = block.info
    work = Path(tempfile.mkdtemp(prefix="rw-docs-"))
    env = dict(os.environ)
    try:
        if lang == "python":
            (work / "snippet.py").write_text(code)
            return run([sys.executable, "snippet.py"], work, env)
        if lang == "js":
            (work / "snippet.js").write_text(code)
            (work / "node_modules").mkdir()
            (work / "node_modules" / "ratewarden").symlink_to(ROOT)
            env["NODE_PATH"] = str(ROOT / "node_modules")
            return run(["node", "snippet.js"], work, env)
        if lang in ("c", "cpp"):
            prefix = request.getfixturevalue("capi_prefix")
            pc_dirs = [str(p.parent) for p in prefix.rglob("ratewarden.pc")]
            env["PKG_CONFIG_PATH"] = ":".join(pc_dirs + [env.get("PKG_CONFIG_PATH", "")])
            source, compiler, std, package = (("snippet.c", "cc", "-std=c11", "ratewarden") if lang == "c" else
                                              ("snippet.cpp", "c++", "-std=c++17", "ratewarden-cpp"))
            (work / source).write_text(code)
            flags = subprocess.run(["pkg-config", "--cflags", "--libs", package], env=env, check=True,
                                   stdout=subprocess.PIPE, text=True).stdout.split()
            libdir = subprocess.run(["pkg-config", "--variable=libdir", package], env=env, check=True,
                                    stdout=subprocess.PIPE, text=True).stdout.strip()
            flags.append(f"-Wl,-rpath,{libdir}")  # a prefix outside the linker's path, as docs/c.md says
            built = run([compiler, std, "-Wall", "-Wextra", "-Werror", source, *flags, "-o", "snippet"], work, env)
            if built.returncode != 0:
                return built
            return run(["./snippet"], work, env)
        if lang == "sh":
            (work / "snippet.sh").write_text(code)
            return run(["bash", "-euo", "pipefail", str(work / "snippet.sh")], ROOT, env)
        raise AssertionError(f"no runner for {lang}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block(block: Block, request: pytest.FixtureRequest) -> None:
    kind = classify(block)
    if kind != "run":
        return
    code = block.code
    if DEFAULT_REDIS in code:
        code = code.replace(DEFAULT_REDIS, f"127.0.0.1:{request.getfixturevalue('redis').port}")
    result = execute(block, code, request)
    assert result.returncode == 0, (
        f"{block.id} exited with {result.returncode}. Fix the block, or mark it `{block.info} fragment <path>` "
        f"if a file shows it in full. Its output:\n{result.stdout}")


def test_blocks_found() -> None:
    """The parser sees the blocks: README.md alone has more than ten."""
    assert sum(b.file == "README.md" for b in BLOCKS) > 10

#!/usr/bin/env python3
"""The binary packages, built the way a release builds them and installed the way a user does, on "a machine without
a compiler": every install below runs with a PATH that holds the everyday tools (sh, node, npm, tar...) and, in
place of every compiler and build tool (cc, c++, gcc, g++, clang, ld, cmake, ninja, make, pkg-config), a stand-in
that records its call and fails; pkg-config's search path and the Node headers (npm_config_nodedir) point nowhere.
"Nothing was compiled" is checked three ways: no stand-in was called, no build directory appeared, and the install
said it used the shipped binary.

    [1/5] the packages          `auditwheel show` gives the wheel a manylinux tag; ldd of the wheel's extension and
                                of the tarball's prebuilt addon shows no libhiredis, libssl, libcrypto or libpq
                                (loaded at run time by the PostgreSQL store), and nm
                                shows neither exports their symbols; both ship the LICENSE
    [2/5] wheel, no compiler    a fresh venv: pip install 'ratewarden-*.whl[flask]', then tests/install/smoke.py
                                on memory, a real redis-server, one over TLS and a real PostgreSQL
    [3/5] sdist, no build deps  without a compiler, and without hiredis: pip says in one line what to install
    [4/5] tarball, no compiler  a fresh folder: npm install of the tarball and express, the prebuilt addon loaded,
                                then tests/node/pack/app.js on memory, Redis, TLS and PostgreSQL
    [5/5] tarball from source   RATEWARDEN_BUILD_FROM_SOURCE=1: without cmake or a compiler it stops, naming what is
                                missing; with them, the fallback build from the tarball's sources, showing [n/N]

    check_install.py DIST       (the folder scripts/build_packages.sh filled; scripts/test_install.sh runs both)

Install times (wheel into a fresh venv, tarball into a fresh folder, tarball built from source) are printed at the
end.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from redis_server import PostgresServer, RedisServer  # noqa: E402  (the test servers' launcher, tests/servers/launch.py)

STEPS = 5
TRAPPED = ["cc", "c++", "gcc", "g++", "clang", "clang++", "cpp", "ld", "as", "cmake", "ninja", "make", "pkg-config",
           "gcc-12", "g++-12", "x86_64-linux-gnu-gcc", "x86_64-linux-gnu-g++", "x86_64-linux-gnu-gcc-12",
           "x86_64-linux-gnu-g++-12"]
EVERYDAY = ["sh", "bash", "env", "node", "npm", "npx", "cat", "ls", "mkdir", "rm", "cp", "mv", "ln", "chmod",
            "uname", "tar", "gzip", "grep", "sed", "dirname", "basename", "readlink", "which", "id", "head", "tail"]
LEAKS = ("libhiredis", "libssl", "libcrypto", "libpq")
times: dict[str, float] = {}


def step(n: int, what: str) -> None:
    print(f"== install [{n}/{STEPS}] {what} ==", flush=True)


def run(args, *, env=None, cwd=None, log: Path | None = None, expect_failure=False) -> str:
    """Runs a command; its output goes to `log` (printed in full when it fails) and is returned."""
    result = subprocess.run([str(a) for a in args], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    if log is not None:
        log.write_text(result.stdout)
    if (result.returncode != 0) != expect_failure:
        print(result.stdout)
        verb = "succeeded, but should have failed" if expect_failure else f"failed ({result.returncode})"
        sys.exit(f"check_install: {' '.join(map(str, args))} {verb}")
    return result.stdout


def timed(name: str, *args, **kwargs) -> str:
    start = time.monotonic()
    out = run(*args, **kwargs)
    times[name] = time.monotonic() - start
    return out


def no_compiler_path(work: Path) -> tuple[str, Path]:
    """A PATH without compilers or build tools: stand-ins that record any call, then the everyday tools."""
    traps, tools, called = work / "trap-bin", work / "bin", work / "compiler-calls.log"
    traps.mkdir()
    tools.mkdir()
    for name in TRAPPED:
        trap = traps / name
        trap.write_text(f'#!/bin/sh\necho "$0 $*" >> {called}\nexit 127\n')
        trap.chmod(0o755)
    for name in EVERYDAY:
        found = shutil.which(name)
        if found:
            (tools / name).symlink_to(found)
    return f"{traps}:{tools}", called


def bare_env(path: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CC", "CXX", "CFLAGS", "CXXFLAGS", "CPATH",
                                                                      "LD_LIBRARY_PATH", "PKG_CONFIG"))}
    env.update(PATH=path, PKG_CONFIG_LIBDIR="/nonexistent", PKG_CONFIG_PATH="", npm_config_nodedir="/nonexistent")
    return env


def check_nothing_compiled(called: Path, what: str) -> None:
    if called.exists() and called.read_text().strip():
        sys.exit(f"check_install: {what} called a compiler or build tool:\n{called.read_text()}")


def check_self_contained(binary: Path) -> None:
    ldd = run(["ldd", binary])
    leaked = [line.strip() for line in ldd.splitlines() if any(lib in line for lib in LEAKS)]
    if leaked or "not found" in ldd:
        sys.exit(f"check_install: {binary.name} needs libraries from the system:\n{ldd}")
    exported = run(["nm", "-D", "--defined-only", binary])
    if re.search(r" [TDBW] (SSL_|EVP_|OPENSSL_|CRYPTO_|redis)", exported):
        sys.exit(f"check_install: {binary.name} exports hiredis or OpenSSL symbols")
    print(f"ldd {binary.name}: " + ", ".join(line.split()[0] for line in ldd.splitlines() if "=>" in line) +
          f"; {len(exported.splitlines())} exported symbols, none of hiredis or OpenSSL")


def check_packages(dist: Path, work: Path) -> tuple[Path, Path, Path]:
    step(1, f"the packages in {dist}")
    wheel, sdist, tarball = (Path(glob.glob(str(dist / pattern))[0]) for pattern in
                             ("ratewarden-*manylinux*.whl", "ratewarden-*.tar.gz", "ratewarden-*.tgz"))
    shown = run(["auditwheel", "show", wheel])  # scripts/test_install.sh puts it on PATH
    tag = re.search(r'platform tag: "(manylinux_\d+_\d+_x86_64)"', " ".join(shown.split()))
    if not tag:
        sys.exit(f"check_install: auditwheel show reports no manylinux tag:\n{shown}")
    print(f"{wheel.name}: auditwheel show -> {tag.group(1)}")
    unpacked = work / "unpacked"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(unpacked / "wheel")
        if not any(n.endswith(".dist-info/licenses/LICENSE") for n in z.namelist()):
            sys.exit("check_install: the wheel ships no LICENSE")
    (unpacked / "npm").mkdir()
    run(["tar", "xzf", tarball, "-C", unpacked / "npm"])
    if not (unpacked / "npm" / "package" / "LICENSE").is_file():
        sys.exit(f"check_install: {tarball.name} ships no LICENSE")
    for binary in (glob.glob(str(unpacked / "wheel" / "ratewarden" / "_native*.so"))[0],
                   unpacked / "npm" / "package" / "prebuilds" / "linux-x64" / "ratewarden.node"):
        check_self_contained(Path(binary))
    return wheel, sdist, tarball


def python_wheel(work: Path, wheel: Path, sdist: Path, called: Path, no_compiler: str, urls: list[str]) -> None:
    step(2, "the wheel into a fresh venv, without a compiler; smoke test")
    venv = work / "venv"
    run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    timed("wheel into a fresh venv (pip install 'ratewarden-*.whl[flask]')",
          [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", f"{wheel}[flask]"],
          env=bare_env(no_compiler))
    check_nothing_compiled(called, "pip install of the wheel")
    print(run([python, ROOT / "tests" / "install" / "smoke.py", *urls], env=bare_env(no_compiler), cwd=work).strip())

    step(3, "the sdist without its build dependencies: one line says what to install")
    only_cmake = work / "cmake-only-bin"
    only_cmake.mkdir()
    for name in EVERYDAY + ["cmake", "ninja"]:  # no compiler, no pkg-config
        if shutil.which(name):
            (only_cmake / name).symlink_to(shutil.which(name))
    cases = [("without a compiler", dict(os.environ, PATH=str(only_cmake)), "ratewarden: no C compiler"),
             ("without hiredis", dict(os.environ, PKG_CONFIG_LIBDIR=str(work / "no-pc")), "ratewarden: hiredis was not found")]
    for name, env, expected in cases:
        out = run([python, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check", sdist],
                  env=env, expect_failure=True)
        line = next((l.strip() for l in out.splitlines() if expected in l), None)
        if not line or "apt-get install" not in line:
            sys.exit(f"check_install: the sdist {name} does not say in one line what to install:\n{out}")
        print(f"sdist {name}: {line}")


def node_tarball(work: Path, tarball: Path, called: Path, no_compiler: str, urls: list[str]) -> None:
    env = dict(os.environ, npm_config_nodedir="/usr", npm_config_fund="false", npm_config_audit="false",
               npm_config_update_notifier="false")
    express = run(["node", "-p", "require('express/package.json').version"], cwd=ROOT).strip()

    def install(folder: Path, name: str, install_env: dict, expect_failure: bool = False) -> Path:
        folder.mkdir()
        shutil.copy(ROOT / "tests" / "node" / "pack" / "app.js", folder)
        run(["npm", "init", "-y"], env=install_env, cwd=folder)
        timed(name, ["npm", "install", "--foreground-scripts", "--no-progress", tarball, f"express@{express}"],
              env=install_env, cwd=folder, log=folder / "install.log", expect_failure=expect_failure)
        return folder / "node_modules" / "ratewarden"

    step(4, "the tarball into a fresh folder, without a compiler; smoke test")
    plain = dict(bare_env(no_compiler), **{k: v for k, v in env.items() if k.startswith("npm_config_") and k != "npm_config_nodedir"})
    package = install(work / "app", "tarball into a fresh folder (npm install, prebuilt addon)", plain)
    log = (work / "app" / "install.log").read_text()
    check_nothing_compiled(called, "npm install of the tarball")
    if "using the prebuilt addon for linux-x64" not in log or (package / "build-node").exists():
        sys.exit(f"check_install: the tarball's install did not use the prebuilt addon:\n{log}")
    out = run(["node", "app.js", *urls], env=plain, cwd=work / "app").strip()
    if "/prebuilds/linux-x64/ratewarden.node" not in out:
        sys.exit(f"check_install: the app did not load the prebuilt addon: {out}")
    print(out)

    step(5, "the tarball built from source (RATEWARDEN_BUILD_FROM_SOURCE=1): first without the tools, then with them")
    install(work / "app-no-tools", "tarball from source without cmake (fails, saying so)",
            dict(plain, RATEWARDEN_BUILD_FROM_SOURCE="1"), expect_failure=True)
    log = (work / "app-no-tools" / "install.log").read_text()
    if "ratewarden: cmake was not found on PATH." not in log or "apt-get install g++ cmake" not in log:
        sys.exit(f"check_install: a source build without cmake does not say what is missing:\n{log}")
    print("tarball from source without cmake: " + next(l for l in log.splitlines() if "cmake was not found" in l))
    package = install(work / "app-source", "tarball built from source (npm install, no prebuilt used)",
                      dict(env, RATEWARDEN_BUILD_FROM_SOURCE="1"))
    log = (work / "app-source" / "install.log").read_text()
    if not re.search(r"^\[\d+/\d+\] ", log, re.M) or not (package / "build-node" / "Release" / "ratewarden.node").exists():
        sys.exit(f"check_install: the source build showed no progress or built nothing:\n{log}")
    out = run(["node", "app.js", *urls], env=env, cwd=work / "app-source").strip()
    if "/build-node/Release/ratewarden.node" not in out:
        sys.exit(f"check_install: the app did not load the addon built from source: {out}")
    print(out)


def main() -> None:
    dist = Path(sys.argv[1]).resolve()
    work = Path(tempfile.mkdtemp(prefix="rw-install-"))
    try:
        wheel, sdist, tarball = check_packages(dist, work)
        no_compiler, called = no_compiler_path(work)
        with RedisServer(tls=True) as redis, PostgresServer() as postgres:
            urls = [redis.url, redis.tls_url, postgres.url + "?timeout=5s"]
            python_wheel(work, wheel, sdist, called, no_compiler, urls)
            node_tarball(work, tarball, called, no_compiler, urls)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("install times:")
    for name, seconds in times.items():
        print(f"  {seconds:6.1f} s  {name}")


if __name__ == "__main__":
    main()

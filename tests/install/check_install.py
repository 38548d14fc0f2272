#!/usr/bin/env python3
"""The binary packages, built the way a release builds them (scripts/build_packages.sh) and installed the way a
user does, on "a machine without a compiler": every install below runs with a PATH that holds the everyday tools
(sh, node, npm, tar...) and, in place of every compiler and build tool (cc, c++, gcc, g++, clang, ld, cmake, ninja,
make, pkg-config), a stand-in that records its call and fails; pkg-config's search path and the Node headers
(npm_config_nodedir) point nowhere. "Nothing was compiled" is checked three ways: no stand-in was called, no build
directory appeared, and the install said (or pip's report showed) that it used the shipped binary.

    the packages                  a wheel for each CPython asked for; `auditwheel show` gives each the manylinux tag
                                  its name has (auditwheel's lowest); ldd of every wheel's extension and of the
                                  tarball's prebuilt addon shows no libhiredis, libssl, libcrypto or libpq (loaded
                                  at run time by the PostgreSQL store), nm shows neither exports their symbols; all
                                  ship the LICENSE
    CPython X.Y, pip chooses      for each CPython: a fresh venv, `pip install --find-links DIST 'ratewarden[flask]'`
                                  (pip picks the wheel: its report must show this CPython's wheel from DIST), then
                                  tests/install/smoke.py on memory, a real redis-server, one over TLS, a real
                                  PostgreSQL, and Flask served over HTTP
    FastAPI under uvicorn         the newest CPython: `ratewarden[fastapi]` and uvicorn, tests/install/smoke_asgi.py
    sdist, no build deps          without a compiler, and without hiredis: pip says in one line what to install
    tarball, Node majors          a fresh folder: npm install of the tarball and express, the prebuilt addon loaded,
                                  then tests/node/pack/app.js on the machine's Node and on each Node major in
                                  RATEWARDEN_NODE_MAJORS (default NODE_MAJORS, run through the `node` package of
                                  the npm registry)
    other systems' layouts        tests/install/layouts.py (a mount namespace: root): rediss:// with no tls_ca finds
                                  the CA bundle of Debian, Fedora/RHEL and Alpine layouts and honours SSL_CERT_FILE
                                  and SSL_CERT_DIR, in the wheel and the prebuilt addon; with libpq.so.5 hidden,
                                  postgres:// says in one line what to install
    tarball from source           RATEWARDEN_BUILD_FROM_SOURCE=1: without cmake or a compiler it stops, naming what
                                  is missing; with them, the fallback build from the tarball's sources, showing [n/N]

    check_install.py DIST PYTHON...   (DIST: what scripts/build_packages.sh made; PYTHON: the interpreters it built
                                       wheels for, oldest first)

Every check runs even when one before it failed (the packages' check excepted); the end prints the packages, a
verdict for each interpreter and check, and the install times, and the exit status is 1 if any check failed.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import zipfile
from pathlib import Path
from typing import Callable, Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests" / "python"))
sys.path.insert(0, str(HERE))
from layouts import run_in_layout  # noqa: E402
from packages import table  # noqa: E402
from redis_server import PostgresServer, RedisServer  # noqa: E402  (the test servers' launcher, tests/servers/launch.py)

TRAPPED = ["cc", "c++", "gcc", "g++", "clang", "clang++", "cpp", "ld", "as", "cmake", "ninja", "make", "pkg-config",
           "gcc-12", "g++-12", "x86_64-linux-gnu-gcc", "x86_64-linux-gnu-g++", "x86_64-linux-gnu-gcc-12",
           "x86_64-linux-gnu-g++-12"]
EVERYDAY = ["sh", "bash", "env", "node", "npm", "npx", "cat", "ls", "mkdir", "rm", "cp", "mv", "ln", "chmod",
            "uname", "tar", "gzip", "grep", "sed", "dirname", "basename", "readlink", "which", "id", "head", "tail"]
LEAKS = ("libhiredis", "libssl", "libcrypto", "libpq")
CA_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS")
# What points a build at a compiler, by prefix (CMAKE_*_COMPILER_LAUNCHER: scripts/test.sh's ccache), left out of a
# machine without one.
COMPILER_VARIABLES = ("CC", "CXX", "CFLAGS", "CXXFLAGS", "CPATH", "LD_LIBRARY_PATH", "PKG_CONFIG", "CMAKE_C_COMPILER",
                      "CMAKE_CXX_COMPILER")
NODE_MAJORS = "22 24 26"  # the Node majors in support (LTS) besides the machine's own
times: Dict[str, float] = {}
verdicts: List[Tuple[str, str, float, str]] = []  # (what, pass or FAIL, seconds, detail)


class Failed(Exception):
    pass


def step(what: str) -> None:
    print(f"== install: {what} ==", flush=True)


def run(args, *, env=None, cwd=None, log: Path | None = None, expect_failure=False) -> str:
    """Runs a command; its output goes to `log` and is returned. Failed, with the output, when it fails (or succeeds
    when it should have failed)."""
    result = subprocess.run([str(a) for a in args], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    if log is not None:
        log.write_text(result.stdout)
    if (result.returncode != 0) != expect_failure:
        verb = "succeeded, but should have failed" if expect_failure else f"failed ({result.returncode})"
        raise Failed(f"{' '.join(map(str, args))} {verb}:\n{result.stdout}")
    return result.stdout


def timed(name: str, *args, **kwargs) -> str:
    start = time.monotonic()
    out = run(*args, **kwargs)
    times[name] = time.monotonic() - start
    return out


def check(what: str, fn: Callable[..., str], *args) -> None:
    """Runs one check, recording its verdict and the line that says what it saw."""
    step(what)
    start = time.monotonic()
    try:
        detail = fn(*args)
        verdicts.append((what, "pass", time.monotonic() - start, detail))
        print(detail, flush=True)
    except Failed as failure:
        verdicts.append((what, "FAIL", time.monotonic() - start, str(failure)))
        print(f"FAILED: {failure}", flush=True)
    except Exception:  # a bug of this script, or a server that would not start: still a failure of this check
        verdicts.append((what, "FAIL", time.monotonic() - start, traceback.format_exc().strip().splitlines()[-1]))
        traceback.print_exc()


class NoCompiler:
    """A PATH without compilers or build tools: stand-ins that record any call, then the everyday tools."""

    def __init__(self, work: Path) -> None:
        traps, tools, self.called = work / "trap-bin", work / "bin", work / "compiler-calls.log"
        traps.mkdir()
        tools.mkdir()
        for name in TRAPPED:
            trap = traps / name
            trap.write_text(f'#!/bin/sh\necho "$0 $*" >> {self.called}\nexit 127\n')
            trap.chmod(0o755)
        for name in EVERYDAY:
            found = shutil.which(name)
            if found:
                (tools / name).symlink_to(found)
        self.path = f"{traps}:{tools}"

    def env(self) -> dict:
        """The environment of an install on this PATH; forgets the calls of earlier checks."""
        self.called.unlink(missing_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(COMPILER_VARIABLES)}
        env.update(PATH=self.path, PKG_CONFIG_LIBDIR="/nonexistent", PKG_CONFIG_PATH="",
                   npm_config_nodedir="/nonexistent")
        return env

    def check_nothing_called(self, what: str) -> None:
        if self.called.exists() and self.called.read_text().strip():
            raise Failed(f"{what} called a compiler or build tool:\n{self.called.read_text()}")


def python_version(python: str) -> str:
    return subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                          capture_output=True, text=True, check=True).stdout.strip()


def check_self_contained(binary: Path) -> str:
    ldd = run(["ldd", binary])
    leaked = [line.strip() for line in ldd.splitlines() if any(lib in line for lib in LEAKS)]
    if leaked or "not found" in ldd:
        raise Failed(f"{binary.name} needs libraries from the system:\n{ldd}")
    exported = run(["nm", "-D", "--defined-only", binary])
    if re.search(r" [TDBW] (SSL_|EVP_|OPENSSL_|CRYPTO_|redis)", exported):
        raise Failed(f"{binary.name} exports hiredis or OpenSSL symbols")
    return ", ".join(line.split()[0] for line in ldd.splitlines() if "=>" in line)


def check_packages(dist: Path, versions: List[str], work: Path) -> Tuple[Path, Path]:
    """The wheels (one per CPython asked for), the sdist and the tarball; returns the sdist and the tarball."""
    step(f"the packages in {dist}")
    sdist, tarball = (Path(glob.glob(str(dist / glob_))[0]) for glob_ in ("ratewarden-*.tar.gz", "ratewarden-*.tgz"))
    for version in versions:
        cp = "cp" + "".join(version.split(".")[:2])
        wheels = glob.glob(str(dist / f"ratewarden-*-{cp}-{cp}-*.whl"))
        if len(wheels) != 1:
            raise Failed(f"{dist} has {len(wheels)} wheels for CPython {version}, not one")
        wheel = Path(wheels[0])
        shown = " ".join(run(["auditwheel", "show", wheel]).split())  # scripts/build_packages.sh puts it on PATH
        tag = re.search(r'platform tag: "(manylinux_\d+_\d+_x86_64)"', shown)
        if not tag or not wheel.stem.endswith(tag.group(1)):
            raise Failed(f"{wheel.name}: its name does not end with the tag auditwheel show gives:\n{shown}")
        unpacked = work / "unpacked" / cp
        with zipfile.ZipFile(wheel) as z:
            z.extractall(unpacked)
            if not any(n.endswith(".dist-info/licenses/LICENSE") for n in z.namelist()):
                raise Failed(f"{wheel.name} ships no LICENSE")
        libs = check_self_contained(Path(glob.glob(str(unpacked / "ratewarden" / "_native*.so"))[0]))
        print(f"{wheel.name}: auditwheel show -> {tag.group(1)}; its extension needs only {libs}")
    npm = work / "unpacked" / "npm"
    npm.mkdir(parents=True)
    run(["tar", "xzf", tarball, "-C", npm])
    if not (npm / "package" / "LICENSE").is_file():
        raise Failed(f"{tarball.name} ships no LICENSE")
    libs = check_self_contained(npm / "package" / "prebuilds" / "linux-x64" / "ratewarden.node")
    print(f"{tarball.name}: prebuilds/linux-x64/ratewarden.node needs only {libs}")
    print("no binary exports hiredis or OpenSSL symbols")
    return sdist, tarball


def pip_install(python: Path, dist: Path, requirements: List[str], name: str, no_compiler: NoCompiler,
                work: Path) -> str:
    """pip installs from PyPI and the folder `dist` (--find-links), choosing the files itself; returns the name of
    the ratewarden file it chose, which must be a wheel from `dist`."""
    report = work / "pip-report.json"
    timed(name, [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--find-links", dist,
                 "--report", report, *requirements], env=no_compiler.env())
    no_compiler.check_nothing_called(f"pip install {' '.join(requirements)}")
    chosen = [item["download_info"]["url"] for item in json.loads(report.read_text())["install"]
              if item["metadata"]["name"] == "ratewarden"]
    if len(chosen) != 1 or not chosen[0].startswith(f"file://{dist}/") or not chosen[0].endswith(".whl"):
        raise Failed(f"pip installed ratewarden from {chosen}, not a wheel from {dist}")
    return chosen[0].rsplit("/", 1)[1]


def python_wheel(python: str, dist: Path, no_compiler: NoCompiler, urls: List[str], work: Path) -> str:
    version = python_version(python)
    venv = work / f"venv-{version}"
    run([python, "-m", "venv", venv])
    cp = "cp" + "".join(version.split(".")[:2])
    chosen = pip_install(venv / "bin" / "python", dist, ["ratewarden[flask]"],
                         f"CPython {version}: pip install 'ratewarden[flask]'", no_compiler, venv)
    if f"-{cp}-{cp}-manylinux" not in chosen:
        raise Failed(f"pip chose {chosen} for CPython {version}")
    smoke = run([venv / "bin" / "python", HERE / "smoke.py", *urls], env=no_compiler.env(), cwd=work).strip()
    return f"pip chose {chosen}; {smoke}"


def python_asgi(python: str, dist: Path, no_compiler: NoCompiler, redis_url: str, work: Path) -> str:
    venv = work / "venv-asgi"
    run([python, "-m", "venv", venv])
    chosen = pip_install(venv / "bin" / "python", dist, ["ratewarden[fastapi]", "uvicorn"],
                         f"CPython {python_version(python)}: pip install 'ratewarden[fastapi]' uvicorn",
                         no_compiler, venv)
    smoke = run([venv / "bin" / "python", HERE / "smoke_asgi.py", redis_url], env=no_compiler.env(), cwd=work)
    return f"pip chose {chosen}; {smoke.strip()}"


def sdist_without_build_deps(python: Path, sdist: Path, work: Path) -> str:
    only_cmake = work / "cmake-only-bin"
    only_cmake.mkdir()
    for name in EVERYDAY + ["cmake", "ninja"]:  # no compiler, no pkg-config
        if shutil.which(name):
            (only_cmake / name).symlink_to(shutil.which(name))
    without = {k: v for k, v in os.environ.items() if not k.startswith(COMPILER_VARIABLES)}
    cases = [("without a compiler", dict(without, PATH=str(only_cmake)), "ratewarden: no C compiler"),
             ("without hiredis", dict(os.environ, PKG_CONFIG_LIBDIR=str(work / "no-pc")),
              "ratewarden: hiredis was not found")]
    said = []
    for name, env, expected in cases:
        out = run([python, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check", sdist],
                  env=env, expect_failure=True)
        line = next((l.strip() for l in out.splitlines() if expected in l), None)
        if not line or "apt-get install" not in line:
            raise Failed(f"the sdist {name} does not say in one line what to install:\n{out}")
        said.append(f"{name}: {line}")
    return "one line says what to install, " + "; ".join(said)


def npm_env() -> dict:
    return dict(os.environ, npm_config_nodedir="/usr", npm_config_fund="false", npm_config_audit="false",
                npm_config_update_notifier="false")


def npm_install(folder: Path, tarball: Path, name: str, env: dict, expect_failure: bool = False) -> Path:
    express = run(["node", "-p", "require('express/package.json').version"], cwd=ROOT).strip()
    folder.mkdir()
    for script in (ROOT / "tests" / "node" / "pack" / "app.js", HERE / "probe_store.js"):
        shutil.copy(script, folder)
    run(["npm", "init", "-y"], env=env, cwd=folder)
    timed(name, ["npm", "install", "--foreground-scripts", "--no-progress", tarball, f"express@{express}"],
          env=env, cwd=folder, log=folder / "install.log", expect_failure=expect_failure)
    return folder / "node_modules" / "ratewarden"


def prebuilt_env(no_compiler: NoCompiler) -> dict:
    return dict(no_compiler.env(), **{k: v for k, v in npm_env().items()
                                      if k.startswith("npm_config_") and k != "npm_config_nodedir"})


def node_tarball(tarball: Path, no_compiler: NoCompiler, urls: List[str], work: Path) -> str:
    env = prebuilt_env(no_compiler)
    package = npm_install(work / "app", tarball, "tarball into a fresh folder (npm install, prebuilt addon)", env)
    log = (work / "app" / "install.log").read_text()
    no_compiler.check_nothing_called("npm install of the tarball")
    if "using the prebuilt addon for linux-x64" not in log or (package / "build-node").exists():
        raise Failed(f"the tarball's install did not use the prebuilt addon:\n{log}")
    out = run(["node", "app.js", *urls], env=env, cwd=work / "app").strip()
    if "/prebuilds/linux-x64/ratewarden.node" not in out:
        raise Failed(f"the app did not load the prebuilt addon: {out}")
    return f"Node {run(['node', '--version']).strip()}: {out}"


def node_binary(major: str) -> str:
    """The `node` package of the npm registry (the official binaries, cached by npm): the path of its binary."""
    return run(["npm", "exec", "--yes", f"--package=node@{major}", "--", "node", "-p", "process.execPath"],
               env=npm_env(), cwd=tempfile.gettempdir()).strip().splitlines()[-1]


def node_major(major: str, no_compiler: NoCompiler, urls: List[str], work: Path) -> str:
    if not (work / "app" / "node_modules" / "ratewarden").is_dir():
        raise Failed("the tarball was not installed (see the check before)")
    node = node_binary(major)
    out = run([node, "app.js", *urls], env=prebuilt_env(no_compiler), cwd=work / "app").strip()
    if "/prebuilds/linux-x64/ratewarden.node" not in out:
        raise Failed(f"the app did not load the prebuilt addon: {out}")
    return f"Node {run([node, '--version']).strip()}: {out}"


def other_layouts(python: Path, redis: RedisServer, postgres_url: str, no_compiler: NoCompiler, work: Path) -> str:
    """rediss:// with no tls_ca, and postgres:// without libpq, as other systems see them."""
    assert redis.tls is not None
    hashed = work / "hashed-certs"  # an SSL_CERT_DIR: certificates under their subject hashes
    hashed.mkdir()
    shutil.copy(redis.tls.ca, hashed / "ca.pem")
    run(["openssl", "rehash", hashed])
    rediss = f"rediss://127.0.0.1:{redis.tls_port}"
    verify_failed = "certificate verify failed"
    cases = [  # (what, CA layout, environment, libpq hidden, URL, what the line must hold)
        ("Debian layout (OpenSSL's OPENSSLDIR)", "debian", {}, False, rediss, "ok"),
        ("Fedora/RHEL layout", "fedora", {}, False, rediss, "ok"),
        ("Alpine layout", "alpine", {}, False, rediss, "ok"),
        ("no CA bundle: not trusted", "none", {}, False, rediss, verify_failed),
        ("SSL_CERT_FILE", "none", {"SSL_CERT_FILE": redis.tls.ca}, False, rediss, "ok"),
        ("SSL_CERT_DIR", "none", {"SSL_CERT_DIR": str(hashed)}, False, rediss, "ok"),
        ("SSL_CERT_FILE over Fedora's bundle", "fedora", {"SSL_CERT_FILE": redis.tls.wrong_ca}, False, rediss,
         verify_failed),
        ("libpq.so.5 hidden", "debian", {}, True, postgres_url, "apt-get install libpq5"),
    ]
    runtimes = [("wheel", [python, HERE / "probe_store.py"], work),
                ("prebuilt", ["node", work / "app" / "probe_store.js"], work / "app")]
    seen, wrong = [], []
    for runtime, argv, cwd in runtimes:
        for i, (what, layout, extra, hide_libpq, url, expected) in enumerate(cases):
            env = {k: v for k, v in no_compiler.env().items() if k not in CA_VARIABLES}  # this machine sets some
            env.update(extra)
            done = run_in_layout(argv + [url], ca_layout=layout, ca=Path(redis.tls.ca), env=env, cwd=cwd,
                                 work=work / "layouts" / f"{runtime}-{i}", hide_libpq=hide_libpq)
            # The probe's one line, no crash; besides it, the 'ratewarden' logger's warnings (a store that fails is
            # told on stderr when the program configured no logging: Python's last-resort handler).
            lines = [line for line in done.stdout.strip().splitlines() if not line.startswith("ratewarden: ")]
            said = lines[0] if done.returncode == 0 and len(lines) == 1 else ""
            ok = said == "ok" if expected == "ok" else said.startswith("error:") and expected in said
            (seen if ok else wrong).append(f"{runtime}, {what}: {done.stdout.strip()}")
    if wrong:
        raise Failed(f"{len(wrong)} of {len(wrong) + len(seen)} answers unexpected:\n" + "\n".join(wrong))
    return f"all {len(seen)} answers as expected (CA layouts, SSL_CERT_*, no libpq; wheel and prebuilt):\n" + \
        "\n".join(seen)


def tarball_from_source(tarball: Path, no_compiler: NoCompiler, urls: List[str], work: Path) -> str:
    plain = prebuilt_env(no_compiler)
    npm_install(work / "app-no-tools", tarball, "tarball from source without cmake (fails, saying so)",
                dict(plain, RATEWARDEN_BUILD_FROM_SOURCE="1"), expect_failure=True)
    log = (work / "app-no-tools" / "install.log").read_text()
    if "ratewarden: cmake was not found on PATH." not in log or "apt-get install g++ cmake" not in log:
        raise Failed(f"a source build without cmake does not say what is missing:\n{log}")
    said = "without cmake: " + next(l for l in log.splitlines() if "cmake was not found" in l)
    package = npm_install(work / "app-source", tarball, "tarball built from source (npm install, no prebuilt used)",
                          dict(npm_env(), RATEWARDEN_BUILD_FROM_SOURCE="1"))
    log = (work / "app-source" / "install.log").read_text()
    built = package / "build-node" / "Release" / "ratewarden.node"
    if not re.search(r"^\[\d+/\d+\] ", log, re.M) or not built.exists():
        raise Failed(f"the source build showed no progress or built nothing:\n{log}")
    out = run(["node", "app.js", *urls], env=npm_env(), cwd=work / "app-source").strip()
    if "/build-node/Release/ratewarden.node" not in out:
        raise Failed(f"the app did not load the addon built from source: {out}")
    return f"built from source: {out}\n{said}"


def report(dist: Path) -> None:
    print(f"\npackages in {dist}:\n{table(dist)}")
    print("\nverdicts:")
    width = max(len(what) for what, _, _, _ in verdicts)
    for what, verdict, seconds, detail in verdicts:
        print(f"  {what:<{width}}  {verdict:<4}  {seconds:5.1f} s  {detail.splitlines()[0]}")
    print("\ninstall times:")
    for name, seconds in times.items():
        print(f"  {seconds:6.1f} s  {name}")


def main() -> None:
    dist, pythons = Path(sys.argv[1]).resolve(), sys.argv[2:]
    if not pythons:
        sys.exit("usage: check_install.py DIST PYTHON... (scripts/build_packages.sh runs it)")
    versions = [python_version(p) for p in pythons]
    work = Path(tempfile.mkdtemp(prefix="rw-install-"))
    try:
        try:
            sdist, tarball = check_packages(dist, versions, work)
        except Failed as failure:
            sys.exit(f"check_install: {failure}")
        no_compiler = NoCompiler(work)
        with RedisServer(tls=True) as redis, PostgresServer() as postgres:
            urls = [redis.url, redis.tls_url, postgres.url + "?timeout=5s"]
            for python, version in zip(pythons, versions):
                check(f"CPython {version}, pip chooses", python_wheel, python, dist, no_compiler, urls, work)
            check(f"CPython {versions[-1]}, FastAPI under uvicorn", python_asgi, pythons[-1], dist, no_compiler,
                  redis.url, work)
            newest = work / f"venv-{versions[-1]}" / "bin" / "python"
            check("sdist without its build dependencies", sdist_without_build_deps, newest, sdist, work)
            check("tarball, prebuilt addon, machine's Node", node_tarball, tarball, no_compiler, urls, work)
            for major in os.environ.get("RATEWARDEN_NODE_MAJORS", NODE_MAJORS).split():
                check(f"tarball, prebuilt addon, Node {major}", node_major, major, no_compiler, urls, work)
            check("CA and libpq as other systems have them", other_layouts, newest, redis, urls[2], no_compiler, work)
            check("tarball built from source", tarball_from_source, tarball, no_compiler, urls, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(dist)
    failed = [what for what, verdict, _, _ in verdicts if verdict != "pass"]
    if failed:
        sys.exit(f"check_install: {len(failed)} of {len(verdicts)} checks failed: {', '.join(failed)}")
    print(f"all {len(verdicts)} checks passed")


if __name__ == "__main__":
    main()

"""Runs a command as if on another Linux distribution, or on a system without libpq: in a private mount namespace
(`unshare -m`, which needs root), overlays on /etc, OpenSSL's folder and the library folder change what that one
command sees; the host's files are untouched and the changes vanish with it.

A CA layout puts one CA bundle (the test servers' CA) where a distribution keeps its bundle, and removes the rest:
    debian  /etc/ssl/certs/ca-certificates.crt, reached through /usr/lib/ssl (the OPENSSLDIR that Debian's OpenSSL,
            linked into the wheel and the npm prebuilt, was built with): OpenSSL's own default
    fedora  /etc/pki/tls/certs/ca-bundle.crt (and /etc/ssl/certs a link to /etc/pki/tls/certs); no /usr/lib/ssl
    alpine  /etc/ssl/cert.pem only; no /usr/lib/ssl
    none    no CA bundle anywhere
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

OPENSSLDIR = "/usr/lib/ssl"
LIBDIR = "/usr/lib/x86_64-linux-gnu"  # where Debian's libpq5 puts libpq.so.5 (x86-64, the one platform built)

CA_LAYOUTS: Dict[str, List[str]] = {
    "debian": ["mkdir -p /etc/ssl/certs", "cp \"$CA\" /etc/ssl/certs/ca-certificates.crt",
               f"ln -s /etc/ssl/certs/ca-certificates.crt {OPENSSLDIR}/cert.pem",
               f"ln -s /etc/ssl/certs {OPENSSLDIR}/certs"],
    "fedora": ["mkdir -p /etc/pki/tls/certs", "cp \"$CA\" /etc/pki/tls/certs/ca-bundle.crt",
               "ln -s /etc/pki/tls/certs /etc/ssl/certs"],
    "alpine": ["cp \"$CA\" /etc/ssl/cert.pem"],
    "none": [],
}

SCRIPT = """set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
n=0
overlay() {{  # changes to folder $1 land in $WORK: this namespace sees them, the host does not
  n=$((n + 1)); mkdir -p "$WORK/up$n" "$WORK/work$n"
  mount -t overlay overlay -o "lowerdir=$1,upperdir=$WORK/up$n,workdir=$WORK/work$n" "$1"
}}
overlay /etc
overlay {openssldir}
rm -rf /etc/ssl/certs /etc/ssl/cert.pem /etc/pki {openssldir}/*
{layout}
{libpq}
PATH=$COMMAND_PATH
exec "$@"
"""


def run_in_layout(argv: List[str], *, ca_layout: str, ca: Path, work: Path, hide_libpq: bool = False,
                  env: Optional[Dict[str, str]] = None, cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    """`argv` under `ca_layout` (CA_LAYOUTS) with `ca` as the only CA bundle, and without libpq.so.5 if asked;
    `work` is an empty folder for the overlays' upper layers. Output (stdout and stderr) is in the result."""
    work.mkdir(parents=True)
    script = SCRIPT.format(openssldir=OPENSSLDIR, layout="\n".join(CA_LAYOUTS[ca_layout]),
                           libpq=f"overlay {LIBDIR}\nrm -f {LIBDIR}/libpq.so*" if hide_libpq else "")
    wrapper = ["/usr/bin/unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script, "layout"]
    full_env = dict(env or {}, CA=str(ca), WORK=str(work), COMMAND_PATH=(env or {}).get("PATH", ""))
    return subprocess.run(wrapper + [str(a) for a in argv], env=full_env, cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


if __name__ == "__main__":  # layouts.py LAYOUT CA COMMAND...: a look around, by hand
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        done = run_in_layout(sys.argv[3:], ca_layout=sys.argv[1], ca=Path(sys.argv[2]), work=Path(tmp) / "w",
                             env={"PATH": "/usr/bin:/bin"})
        print(done.stdout, end="")
        sys.exit(done.returncode)

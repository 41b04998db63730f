"""kproto installs everywhere: `python -m build` makes an sdist and a wheel that
install into a fresh venv and run; without a C compiler (CC=/bin/false) the
wheel still builds, without the extension, and runs on the pure-Python path.

Offline and quick: builds use this interpreter's setuptools (--no-isolation),
the wheel goes in with --no-deps --no-index, and the fresh venv reaches the
runtime dependencies through a .pth line naming this venv's site-packages
(added after pip ran, so pip never sees, let alone touches, this venv).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120

SMOKE = r"""
import sys
from pathlib import Path
import kproto
from kproto import accel
from kproto.records import NewRecord, build_record_batch, iter_batches

assert Path(kproto.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), kproto.__file__
buf = build_record_batch([NewRecord(b"k", b"v" * 100, [("h", b"x")], 1700000000000)], base_offset=5,
                         compression=1)
(batch,) = iter_batches(buf)
(rec,) = batch.records()
assert (rec.offset, rec.key, rec.value, rec.headers) == (5, b"k", b"v" * 100, (("h", b"x"),)), rec
print("accelerator", accel.crecords is not None)
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KPROTO_NO_EXTENSIONS")}
    env.update(extra)
    return env


def _run(cmd: list, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=TIMEOUT, **kw)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _build(srcdir: Path, outdir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    try:
        import build  # noqa: F401
    except ImportError:
        pytest.fail("the `build` package is missing: pip install -e '.[test]' (make test does)", pytrace=False)
    return _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", outdir, *args, srcdir],
                env=_env(**env), cwd=srcdir)


def _install(wheel: Path, venv: Path) -> Path:
    """A fresh venv holding only the wheel; returns its python."""
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", "--no-index",
          wheel], env=_env())
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(purelib) / "kproto_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _smoke(python: Path, cwd: Path) -> str:
    out = _run([python, "-I", "-c", SMOKE], env=_env(), cwd=cwd).stdout
    _run([python.parent / "kproto", "--help"], env=_env(), cwd=cwd)
    return out


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    """The sdist, built from a copy of what the package is made of (the
    worktree stays clean of build/ and *.egg-info)."""
    base = tmp_path_factory.mktemp("pkg")
    src = base / "src"
    src.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md", "MANIFEST.in"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "csrc", src / "csrc")
    shutil.copytree(ROOT / "kproto", src / "kproto",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    _build(src, base / "dist", "--sdist")
    (tarball,) = (base / "dist").glob("kproto-*.tar.gz")
    return tarball


def _unpacked(sdist: Path, where: Path) -> Path:
    with tarfile.open(sdist) as tar:
        tar.extractall(where, filter="data")
    (srcdir,) = where.iterdir()
    return srcdir


def test_wheel_built_from_the_sdist_installs_and_runs(sdist, tmp_path):
    srcdir = _unpacked(sdist, tmp_path / "unpacked")
    assert {p.name for p in (srcdir / "csrc").iterdir()} == {p.name for p in (ROOT / "csrc").iterdir()}, \
        "the sdist must carry the C source"
    _build(srcdir, tmp_path / "dist", "--wheel")
    (wheel,) = (tmp_path / "dist").glob("kproto-*.whl")
    python = _install(wheel, tmp_path / "venv")
    assert _smoke(python, tmp_path).split() == ["accelerator", "True"]


def test_installs_without_a_c_compiler(sdist, tmp_path):
    srcdir = _unpacked(sdist, tmp_path / "unpacked")
    proc = _build(srcdir, tmp_path / "dist", "--wheel", CC="/bin/false")
    (wheel,) = (tmp_path / "dist").glob("kproto-*.whl")
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith((".so", ".pyd"))], names
    assert "kproto/records.py" in names
    assert "_crecords" in proc.stdout + proc.stderr      # setuptools says it skipped the extension
    python = _install(wheel, tmp_path / "venv")
    assert _smoke(python, tmp_path).split() == ["accelerator", "False"]
    # The fallback says so once, at debug level, and only there.
    quiet = _run([python, "-I", "-c", "import kproto.records"], env=_env(), cwd=tmp_path)
    assert quiet.stderr == ""
    debug = _run([python, "-I", "-c", "import logging; logging.basicConfig(level=logging.DEBUG); "
                  "import kproto.records"], env=_env(), cwd=tmp_path)
    assert debug.stderr.count("kproto._crecords is not built") == 1, debug.stderr

# Run with: PYTHONPATH=build-py/python /usr/bin/python3 -m pytest tests/python
import os
import select
import shutil
import subprocess
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "thunder")


@pytest.fixture
def fixtures_dir():
    if not os.path.isdir(FIXTURES):
        pytest.skip(f"no fixtures at {FIXTURES}")
    return FIXTURES


def _skip(reason):
    print(f"skipping: {reason}")
    pytest.skip(reason)


@pytest.fixture
def xvfb(monkeypatch):
    """A private Xvfb (it picks a free display and tells us with -displayfd); DISPLAY points at it."""
    exe = shutil.which("Xvfb")
    if not exe:
        _skip("Xvfb is not installed (apt-get install xvfb): show() needs an X display")
    r, w = os.pipe()
    proc = subprocess.Popen([exe, "-displayfd", str(w), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    number = b""
    deadline = time.time() + 30
    while not number.endswith(b"\n") and time.time() < deadline and proc.poll() is None:
        if select.select([r], [], [], 0.5)[0]:
            chunk = os.read(r, 16)
            if not chunk:
                break
            number += chunk
    os.close(r)
    if not number.strip().isdigit():
        proc.kill()
        proc.wait()
        pytest.fail(f"Xvfb did not report a display number (exit {proc.poll()})")
    monkeypatch.setenv("DISPLAY", f":{number.strip().decode()}")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    yield
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture
def gui_binary():
    try:
        exe = _thunder_viz().find_binary()
    except FileNotFoundError as e:
        _skip(f"no thunder-viz executable ({e})")
    if not _thunder_viz().inspector.has_gui(exe):
        _skip(f"{exe} was built without the GUI (TV_BUILD_GUI=OFF)")
    return exe


def _thunder_viz():
    import thunder_viz  # imported when a test asks for the GUI, so collection needs no build

    return thunder_viz


# Lightning Thunder, for the tests that run the real thing: THUNDER_PATH lists (os.pathsep) the
# folders to import it from (a lightning-thunder checkout, lightning-utilities' src, optree's
# install folder); without it, whatever `import thunder` finds. Absent: those tests skip, saying why.
def thunder_path_entries():
    return [p for p in os.environ.get("THUNDER_PATH", "").split(os.pathsep) if p]


@pytest.fixture(scope="session")
def thunder():
    import sys

    for p in reversed(thunder_path_entries()):
        if p not in sys.path:
            sys.path.insert(0, p)
    try:
        import thunder as lightning_thunder
    except Exception as e:  # noqa: BLE001 - any failure to import means: not here
        where = os.environ.get("THUNDER_PATH") or "(THUNDER_PATH unset)"
        _skip(f"Lightning Thunder is not importable from {where}: {type(e).__name__}: {e}")
    return lightning_thunder


@pytest.fixture
def thunder_env(thunder):
    """The environment of a subprocess that imports Thunder and thunder_viz."""
    import sys

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(thunder_path_entries() + [p for p in sys.path if p])
    env.setdefault("USE_LIBUV", "0")  # torch.distributed's TCP store without libuv (Debian's torch has none)
    return env

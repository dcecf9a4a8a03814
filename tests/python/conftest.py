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

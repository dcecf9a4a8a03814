"""Inspector.show() for real: the GUI process under a private Xvfb opens the inspector's capture."""
import json
import os
import subprocess
import sys
import time

import pytest
import torch

import thunder_viz as tv

sys.path.insert(0, os.path.dirname(__file__))
from models import mlp  # noqa: E402


def _skip(reason):
    print(f"skipping: {reason}")
    pytest.skip(reason)


def _inspected_mlp():
    torch.manual_seed(0)
    tm = tv.jit(mlp(8, 16))
    insp = tv.attach(tm)
    tm(torch.randn(2, 8)).sum().backward()
    return insp


def test_show_opens_the_capture_in_the_gui(xvfb, gui_binary, tmp_path):
    insp = _inspected_mlp()
    cap, state = tmp_path / "show.tvz.json", tmp_path / "state.json"
    proc = insp.show(cap, args=["--frames", 20, "--dump-state", state, "--size", "800x600"],
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert isinstance(proc, subprocess.Popen)
    assert proc.poll() is None  # show() returned while the GUI starts (it does not wait for the window)
    assert proc.args[:3] == [gui_binary, "gui", str(cap)]
    out, _ = proc.communicate(timeout=180)
    assert proc.returncode == 0, out.decode(errors="replace")
    s = json.loads(state.read_text())
    assert s["error"] == "" and s["frames"] >= 20
    assert s["source"].endswith("show.tvz.json")
    c = s["capture"]
    assert c["model"] == "Sequential"
    assert len(c["pipelines"]) == 1
    p = c["pipelines"][0]
    assert p["order"] == ["jit"] and p["stages"]["forward"] >= 1 and p["stages"]["backward"] >= 1
    assert p["replayed"]  # the Python call's checks against eager torch travel with the capture


def test_show_keeps_running_until_terminated(xvfb, gui_binary, tmp_path):
    insp = _inspected_mlp()
    proc = insp.show(tmp_path / "live.tvz.json", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(4)  # loading the capture and drawing frames; a failure exits at once
        assert proc.poll() is None, proc.stderr.read().decode(errors="replace")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert (tmp_path / "live.tvz.json").is_file()


def test_show_without_display_is_a_clear_error(monkeypatch, tmp_path):
    if not sys.platform.startswith("linux"):
        pytest.skip("the display check is for X11/Wayland")
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    insp = _inspected_mlp()
    with pytest.raises(RuntimeError, match="no display"):
        insp.show(tmp_path / "c.tvz.json")
    assert not (tmp_path / "c.tvz.json").exists()  # nothing started, nothing written


def test_show_with_a_binary_without_gui_is_a_clear_error(monkeypatch, tmp_path):
    fake = tmp_path / "thunder-viz"
    fake.write_text("#!/bin/sh\necho 'Subcommands:'\necho '  show    Print a capture'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("THUNDER_VIZ_BIN", str(fake))
    monkeypatch.setenv("DISPLAY", ":12345")
    insp = _inspected_mlp()
    with pytest.raises(RuntimeError, match="TV_BUILD_GUI=OFF"):
        insp.show(tmp_path / "c.tvz.json")

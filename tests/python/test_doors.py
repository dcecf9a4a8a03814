"""One capture through the four doors: the CLI's `show`, both reports (text and HTML), the GUI's
state and Python print the session layer's words for outcomes and verdicts, to the letter."""
import html
import json
import subprocess

import thunder_viz as tv

SEED = ["compare", "--model", "linear", "--order", "jit,ddp", "--order", "ddp,jit", "--world", "2",
        "--semantics", "thunder-2024-03"]
# What thunder-2024-03 gives: ddp's backward bucketing read the process group jit() snapshotted.
VALUE_ERROR = ("ValueError: None had an unexpected type <class 'NoneType'>. Supported types are <class "
               "'torch.distributed.distributed_c10d.ProcessGroup'>")


def _run(exe, *args):
    return subprocess.run([exe, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)


def test_every_door_prints_the_same_outcomes_and_verdicts(tmp_path, xvfb, gui_binary):
    capture = tmp_path / "seed.tvz.json"
    compared = _run(gui_binary, *SEED, "--out", str(capture))
    assert compared.returncode == 1, compared.stdout  # the reproduced failure is a failed run

    c = tv.load(capture)
    comparison = c.comparison_lines()
    pipelines = [c.pipeline_line(i) for i in range(c.num_pipelines)]
    # The pipeline that passed keeps its own outcome; only the comparison is not possible.
    assert comparison == [f"P1 [ddp,jit thunder-2024-03] vs P0 [jit,ddp thunder-2024-03]: not comparable: "
                          f"P0 [jit,ddp thunder-2024-03] failed: {VALUE_ERROR}"]
    assert pipelines[0] == f"failed: {VALUE_ERROR}"
    assert pipelines[1] == "passed; vs P0 [jit,ddp thunder-2024-03]: not comparable"
    assert c.pipeline_outcome(1)[0] == "passed"
    assert c.pipeline_outcome(0)[:2] == ("failed", "state-read-at-call")
    assert c.verdicts()[0][2] == "not comparable"
    words = comparison + pipelines

    assert all(w in compared.stdout for w in comparison + [f"P0 [jit,ddp thunder-2024-03]: {pipelines[0]}"]), compared.stdout

    shown = _run(gui_binary, "show", str(capture))
    assert shown.returncode == 0, shown.stdout
    assert all(w in shown.stdout for w in words), shown.stdout
    # The failure's partial backward is a stage of P0, marked where it failed.
    assert "ddp bucketing (25 MB)                    FAILED at bound symbol" in shown.stdout, shown.stdout

    text, page = tmp_path / "report.txt", tmp_path / "report.html"
    reported = _run(gui_binary, "report", str(capture), "--text", str(text), "--html", str(page))
    assert reported.returncode == 0, reported.stdout
    assert all(w in text.read_text() for w in words)
    assert all(w in html.unescape(page.read_text()) for w in words)

    script, state = tmp_path / "script.json", tmp_path / "state.json"
    script.write_text(json.dumps([{"select_panel": "order"}, {"frames": 3}, {"quit": True}]))
    gui = _run(gui_binary, "gui", str(capture), "--script", str(script), "--dump-state", str(state))
    assert gui.returncode == 0, gui.stdout
    s = json.loads(state.read_text())["capture"]
    assert [cmp["line"] for cmp in s["comparisons"]] == comparison
    assert [p["line"] for p in s["pipelines"]] == pipelines
    assert [p["verdict"] for p in s["pipelines"]] == ["failed", "passed"]

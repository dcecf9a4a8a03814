#!/usr/bin/env python3
"""Fails on an #include that points up the layers.

Usage: check_layers.py SOURCE_DIR LAYER [LAYER ...]

The engine's layers are given bottom up (engine/CMakeLists.txt's TV_ENGINE_LAYERS): a file in
engine/L may include engine/K only when K is L or below it. Every folder of engine/ must be a layer.
The engine includes nothing of app/ or bindings/. In app/, cli and gui include common (and the
engine) but never each other; common includes neither; reader, the command line's front door that
runs one cli command without LibTorch, includes cli and common.
"""
import re
import sys
from pathlib import Path

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = (".h", ".hpp", ".cpp", ".cu")


def includes(path):
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield number, m.group(1)


def check_engine(root, layers, problems):
    engine = root / "engine"
    rank = {name: i for i, name in enumerate(layers)}
    for folder in sorted(p for p in engine.iterdir() if p.is_dir()):
        if folder.name not in rank:
            problems.append(f"engine/{folder.name}/: not a layer; add it to TV_ENGINE_LAYERS in engine/CMakeLists.txt")
    for path in sorted(engine.rglob("*")):
        if path.suffix not in SOURCES:
            continue
        layer = path.relative_to(engine).parts[0]
        if layer not in rank:
            continue
        for number, target in includes(path):
            top = target.split("/")[0]
            where = f"{path.relative_to(root)}:{number}"
            if top in ("cli", "gui", "common", "bindings"):
                problems.append(f'{where}: the engine includes "{target}" of a door')
            elif top in rank and rank[top] > rank[layer]:
                problems.append(f'{where}: layer {layer} includes "{target}" of layer {top}, which is above it '
                                f'(order: {" → ".join(layers)}); move what it needs down, or the file up')


def check_app(root, problems):
    app = root / "app"
    allowed = {"common": {"common"}, "cli": {"cli", "common"}, "gui": {"gui", "common"},
               "reader": {"reader", "cli", "common"}}
    for path in sorted(app.rglob("*")):
        if path.suffix not in SOURCES or len(path.relative_to(app).parts) < 2:
            continue
        part = path.relative_to(app).parts[0]
        for number, target in includes(path):
            top = target.split("/")[0]
            if top in allowed and top not in allowed.get(part, set()):
                problems.append(f'{path.relative_to(root)}:{number}: app/{part} includes "{target}" of app/{top}; '
                                f'what both need belongs in app/common')


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root, layers = Path(argv[1]), argv[2:]
    problems = []
    check_engine(root, layers, problems)
    check_app(root, problems)
    for p in problems:
        print(p)
    checked = sum(1 for p in (root / "engine").rglob("*") if p.suffix in SOURCES)
    print(f"{len(layers)} layers, {checked} engine files: {len(problems)} upward include(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

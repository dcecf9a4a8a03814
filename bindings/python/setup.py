"""pip install for thunder_viz: builds the extension _thunder_viz with CMake (the whole repository's
CMakeLists.txt with TV_BUILD_PYTHON=ON, GUI and tests off) and packages it with the Python files.

    python3 -m venv --system-site-packages .venv      # torch comes from the system
    .venv/bin/pip install --no-build-isolation ./bindings/python

Environment: TV_CMAKE_ARGS (extra arguments), TV_BUILD_DIR (reuse a build folder), TV_JOBS (default 2),
TV_GUI=ON (also build the `thunder-viz` executable with its GUI, copied next to the package so that
Inspector.show() finds it; needs GLFW and OpenGL). A thunder-viz already built in the build folder is
copied too.
"""
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.environ.get("TV_BUILD_DIR") or os.path.join(ROOT, "build-pip")
        os.makedirs(build_dir, exist_ok=True)
        gui = os.environ.get("TV_GUI", "OFF").upper() in ("1", "ON", "YES", "TRUE")
        args = ["cmake", "-S", ROOT, "-B", build_dir, "-DTV_BUILD_PYTHON=ON", f"-DTV_BUILD_GUI={'ON' if gui else 'OFF'}",
                "-DTV_BUILD_TESTS=OFF", f"-DPython_EXECUTABLE={sys.executable}", "-DCMAKE_BUILD_TYPE=Release"]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        args += os.environ.get("TV_CMAKE_ARGS", "").split()
        if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):  # an existing build folder keeps its settings
            subprocess.check_call(args)
        targets = ["_thunder_viz"] + (["thunder-viz"] if gui else [])
        subprocess.check_call(["cmake", "--build", build_dir, "--target", *targets, "-j", os.environ.get("TV_JOBS", "2")])
        built_pkg = os.path.join(build_dir, "python", "thunder_viz")
        target = os.path.dirname(self.get_ext_fullpath(ext.name))
        os.makedirs(target, exist_ok=True)
        for f in os.listdir(built_pkg):
            if f.startswith("_thunder_viz") and f.endswith(".so"):
                shutil.copy2(os.path.join(built_pkg, f), os.path.join(target, f))
        exe = os.path.join(build_dir, "bin", "thunder-viz")
        if os.path.isfile(exe):  # let inspector.show() find the CLI/GUI next to the package
            shutil.copy2(exe, os.path.join(target, "thunder-viz"))


setup(
    name="thunder_viz",
    version="0.1.0",
    description="Python door of Thunder Viz: jit torch modules into the engine, inspect Thunder traces",
    packages=["thunder_viz"],
    ext_modules=[CMakeExtension("thunder_viz._thunder_viz")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    zip_safe=False,
)

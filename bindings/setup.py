"""Builds the csgi package with CMake (the project's own build) and installs it.

    /usr/bin/python3 -m pip install --no-build-isolation ./bindings      # from the source tree root

Needs cmake, a C++20 compiler, pybind11-dev and python3-dev (scripts/install-deps.sh build).
"""
import os
import pathlib
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = pathlib.Path(__file__).resolve().parent
SOURCE = HERE.parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = pathlib.Path(self.build_temp).resolve() / "cmake"
        build.mkdir(parents=True, exist_ok=True)
        subprocess.check_call([
            "cmake", "-S", str(SOURCE), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
            "-DCSGI_BUILD_TESTS=OFF", "-DCSGI_BUILD_BENCH=OFF", "-DCSGI_PYTHON=ON",
            "-DPython3_EXECUTABLE=" + sys.executable,
        ])
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", str(build), "--target", "csgi_python", "-j", jobs])
        built = build / "bindings" / "python" / "csgi"
        target = pathlib.Path(self.get_ext_fullpath(ext.name)).parent
        target.mkdir(parents=True, exist_ok=True)
        for f in built.iterdir():
            if f.is_file():
                shutil.copy2(f, target / f.name)


setup(
    packages=["csgi"],
    package_dir={"csgi": str(pathlib.Path("python") / "csgi")},
    package_data={"csgi": ["*.pyi", "py.typed"]},
    ext_modules=[CMakeExtension("csgi._csgi")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)

# SPDX-License-Identifier: Apache-2.0
"""Build hook of the gcompute package: generates gcompute/v1 (the gRPC stubs of proto/) into the
build tree, so that wheels ship them and the source tree holds no generated code. Metadata is in
pyproject.toml."""
import os
import shutil
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_stubs  # noqa: E402  (beside this file)


class BuildWithStubs(build_py):
    """build_py, then protoc: the stubs land in the build tree (in the source tree for
    editable installs, where the build tree is not what gets imported)."""

    def run(self):
        here = os.path.dirname(os.path.abspath(__file__))
        editable = getattr(self, "editable_mode", False)
        if not editable:
            # build/lib outlives builds (pip builds in the source tree): drop modules that no
            # longer exist in the source, which the wheel would otherwise ship.
            shutil.rmtree(os.path.join(self.build_lib, "gcompute"), ignore_errors=True)
        super().run()
        gen_stubs.generate(gen_stubs.default_proto_dir(), here if editable else self.build_lib)


setup(cmdclass={"build_py": BuildWithStubs})

"""Builds bpefst's compiled core (``bpefst._core``, from ``src/core``) beside the Python package.

Everything else is in pyproject.toml.  The extension is optional: where no C
compiler works, the build prints one line and bpefst installs on its
pure-Python path (``bpefst info`` says which path runs).
"""

import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """build_ext that turns a failed compile into a one-line notice instead of a failed install."""

    def run(self):
        try:
            super().run()
        except Exception as error:  # no compiler, or a broken toolchain
            self._notice(error)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as error:
            self._notice(error)

    @staticmethod
    def _notice(error):
        reason = (str(error).strip().splitlines() or [type(error).__name__])[-1]
        reason = reason if len(reason) <= 100 else reason[:45] + " ... " + reason[-50:]
        print(f"bpefst: the compiled core was not built ({reason}); installing the pure-Python path", file=sys.stderr)


core = Extension(
    "bpefst._core",
    sources=["src/core/core.c"],
    depends=["src/core/bpe.h", "src/core/banned.h", "src/core/chunk_cache.h", "src/core/filed.h", "src/core/guide.h", "src/core/liveness.h", "src/core/minimal_dfa.h", "src/core/packed_rows.h",
             "src/core/pairs.h", "src/core/pretokenize.h", "src/core/promote.h", "src/core/refine.h", "src/core/state_walk.h", "src/core/subsets.h", "src/core/trie_build.h", "src/core/trie_subtrees.h",
             "src/core/unicode_classes.h", "src/core/validate.h", "src/core/vocab.h"],
    extra_compile_args=["-O3", "-std=c11"] if sys.platform != "win32" else [],
)

setup(ext_modules=[core], cmdclass={"build_ext": OptionalBuildExt})

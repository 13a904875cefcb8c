"""``__version__`` (from the native module) and ``__git_commit__`` (the GIT_COMMIT file the
build writes next to this module; "" when built outside a git checkout)."""

from __future__ import annotations

from pathlib import Path

from kvikio._lib import __version__

try:
    __git_commit__ = (Path(__file__).parent / "GIT_COMMIT").read_text(encoding="utf-8").strip()
except OSError:
    __git_commit__ = ""

__all__ = ["__git_commit__", "__version__"]

"""Reading memc's TOML files (memc.toml, inbox sidecars, the claims lexicon) with one error shape:
a :class:`TomlError` that names the file and, for a syntax error, the line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any


class TomlError(ValueError):
    """A TOML file that cannot be read or parsed; ``path`` and ``line`` (when known) say where."""

    def __init__(self, reason: str, *, path: Path, line: int | None = None):
        self.reason, self.path, self.line = reason, path, line
        super().__init__(f"{path}{f':{line}' if line else ''}: {reason}")


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file as a dict."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TomlError(f"not UTF-8 (byte {exc.start})", path=path) from None
    except OSError as exc:
        raise TomlError(f"cannot read: {exc.strerror or exc}", path=path) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # Python 3.11's error carries its position only in the message: "... (at line 2, column 5)".
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column \d+\)$", msg)
        raise TomlError(f"not valid TOML: {msg}", path=path, line=int(m.group(1)) if m else None) from None

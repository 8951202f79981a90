"""Who sees evidence nobody gave a visibility for: one default for every interface.

`memc ingest`, the inbox, HTTP ``/v1/ingest`` and MCP ``remember`` all resolve a missing
visibility here, from the memory home's ``<home>/memc.toml``::

    [ingest]
    default_visibility = "public"   # the default: every asker of the entry's scope sees it
    # default_visibility = "writer" # private to the principal who writes it

``"writer"`` makes an entry private to its writer: the API key's principal, or ``memc ingest
--as P``'s P. memc's own writers (the operator's ``memc ingest`` without ``--as``, the inbox)
are not principals anyone asks as, so under ``"writer"`` they must be told a visibility
(``--visibility``, an inbox sidecar) and refuse the file otherwise: quietly hiding evidence
from everyone would be as bad as quietly showing it to everyone.

Whenever entries end up public only because nothing said otherwise, the caller is told
(:func:`public_default_warning`): one stderr line from the CLI, ``warnings`` in the HTTP
response, the inbox's report and the sensor's log.

Plain module, read per call (a stat and a few bytes): the CLI, the API and the inbox job see an
edit to memc.toml at once. ``orchestration/settings.py`` reads the same file's ``[freshness]``
and ``[automation]`` tables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from memc import toml as memc_toml
from memc.visibility import PUBLIC, RESERVED_PREFIX
from ingestion.errors import IngestError
from ingestion.formats import check_visibility

CONFIG_FILE = "memc.toml"
WRITER = "writer"
DEFAULT_VISIBILITY_CHOICES = (PUBLIC, WRITER)


@dataclass(frozen=True)
class IngestSettings:
    """``[ingest]`` of a home's memc.toml. ``origin`` says where the default came from, for messages."""

    default_visibility: str = PUBLIC
    origin: str = "memc's default"


@dataclass(frozen=True)
class ResolvedVisibility:
    principals: tuple[str, ...]
    defaulted: bool  # True: nobody gave a visibility, the home's default decided

    @property
    def public_by_default(self) -> bool:
        return self.defaulted and PUBLIC in self.principals


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file as a dict; an unreadable or malformed one is an :class:`IngestError` naming the
    file and line (the inbox reports it in the rejected file's error.json)."""
    try:
        return memc_toml.read_toml(path)
    except memc_toml.TomlError as exc:
        raise IngestError(exc.reason, path=str(path), line=exc.line) from None


def load_ingest_settings(home_root: str | os.PathLike[str] | None) -> IngestSettings:
    """The ``[ingest]`` table of ``<home_root>/memc.toml``; memc's defaults when it has none."""
    if home_root is None:
        return IngestSettings()
    path = Path(home_root) / CONFIG_FILE
    if not path.is_file():
        return IngestSettings()
    table = read_toml(path).get("ingest", {})
    if not isinstance(table, dict):
        raise IngestError("[ingest] must be a table", path=str(path), field="ingest")
    unknown = sorted(set(table) - {"default_visibility"})
    if unknown:
        raise IngestError("unknown setting; [ingest] knows only default_visibility", path=str(path), field=f"ingest.{unknown[0]}")
    value = table.get("default_visibility", PUBLIC)
    if value not in DEFAULT_VISIBILITY_CHOICES:
        raise IngestError(
            f"{value!r} is not a default visibility: use \"public\" (every asker of the scope) or \"writer\" "
            "(private to the principal who writes it)",
            path=str(path),
            field="ingest.default_visibility",
        )
    origin = f"{path} [ingest] default_visibility" if "default_visibility" in table else "memc's default"
    return IngestSettings(default_visibility=value, origin=origin)


def resolve_visibility(
    given: Sequence[str] | str | None,
    *,
    writer: str | None,
    settings: IngestSettings,
    how: str = "--visibility P,...",
) -> ResolvedVisibility:
    """The visibility given (checked), else the home's default for ``writer``.

    ``writer`` is the principal writing (None or a ``memc:`` name for memc's own writers);
    ``how`` names the way to give a visibility in the caller's interface, for the error when
    ``"writer"`` is the default and there is no principal to make the evidence private to."""
    if given is not None and len(given):
        return ResolvedVisibility(check_visibility(tuple([given] if isinstance(given, str) else given)), False)
    if settings.default_visibility == PUBLIC:
        return ResolvedVisibility((PUBLIC,), True)
    if writer is None or writer.startswith(RESERVED_PREFIX):
        raise IngestError(
            f"{settings.origin} is {WRITER!r} (private to the principal who writes), but {writer or 'the operator'} "
            f"writes for the home, not as a principal: give a visibility ({how})",
            field="visibility",
        )
    return ResolvedVisibility((writer,), True)


def public_default_warning(entries: int, scope: str, *, what: str = "", how: str = "--visibility P,...") -> str:
    """One line: these entries are public because nothing said otherwise, and how to restrict."""
    n = f"{entries} entr{'y' if entries == 1 else 'ies'}"
    return (
        f"{what}{': ' if what else ''}{n} made public in scope {scope!r} because no visibility was given "
        f"(every asker of the scope sees {'it' if entries == 1 else 'them'}); restrict with {how}, or make "
        f"private-to-the-writer the home's default with [ingest] default_visibility = \"{WRITER}\" in {CONFIG_FILE}"
    )


__all__ = [
    "CONFIG_FILE",
    "IngestSettings",
    "ResolvedVisibility",
    "WRITER",
    "load_ingest_settings",
    "public_default_warning",
    "read_toml",
    "resolve_visibility",
]

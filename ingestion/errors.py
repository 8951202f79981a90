"""The one error ingestion raises for bad input.

Every rejection (malformed JSON, wrong encoding, a missing field, an oversize file, a path
trick) is an :class:`IngestError` that names the file, the line and the field, so a person
can open the file at that line and fix it, and the inbox can write the same facts into a
machine-readable ``<name>.error.json``. Whenever one is raised nothing of that file has been
committed: ingestion parses and validates a whole file before its single ledger append.
"""

from __future__ import annotations

from typing import Any, Sequence

# How many of a file's bad lines a rejection names: enough to fix a file in one pass, bounded so
# a file of a million bad lines does not make a million-line error.json.
MAX_REPORTED = 50


class IngestError(Exception):
    """Bad input: names the file (``path``), the 1-based ``line`` and the ``field`` when known.

    ``str(err)`` reads like a compiler diagnostic::

        conv.jsonl:17: field 'timestamp': not an ISO 8601 time ('yesterday')

    ``retryable`` is True when the input was not wrong but in motion (the file changed while it
    was being read): the inbox leaves such a file for its next pass instead of rejecting it.

    ``more``: the file's further errors after this first one (a JSONL parse goes on past a bad
    line to report them, committing nothing), at most :data:`MAX_REPORTED` in all;
    ``truncated`` says the parse stopped there (or at an error it cannot read past, such as an
    oversize line) and more may follow.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        field: str | None = None,
        retryable: bool = False,
        more: Sequence["IngestError"] = (),
        truncated: bool = False,
    ):
        self.message = message
        self.path = path
        self.line = line
        self.field = field
        self.retryable = retryable
        self.more = tuple(more)
        self.truncated = truncated
        super().__init__(str(self))

    @property
    def all(self) -> tuple["IngestError", ...]:
        """This error and the ones after it, in file order."""
        return (self, *self.more)

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
        elif self.line is not None:
            where = f"line {self.line}"
        what = f"field '{self.field}': {self.message}" if self.field else self.message
        return f"{where}: {what}" if where else what

    def __reduce__(self):  # keep the keyword fields across pickling (Dagster ships errors between processes)
        return (_rebuild, (self.message, self.path, self.line, self.field, self.retryable, self.more, self.truncated))

    def _facts(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "field": self.field, "message": self.message, "error": str(self)}

    def to_dict(self) -> dict[str, Any]:
        """The error as JSON-ready facts (what the inbox writes into ``<name>.error.json``): the
        first error's fields, and ``errors``, every error found (up to :data:`MAX_REPORTED`)."""
        return {
            **self._facts(),
            "errors": [e._facts() for e in self.all],
            "error_count": len(self.all),
            "errors_truncated": self.truncated,
        }

    def located(self, *, path: str | None = None, line: int | None = None) -> "IngestError":
        """The same error with a file/line filled in where the raiser did not know them."""
        return IngestError(
            self.message,
            path=self.path if self.path is not None else path,
            line=self.line if self.line is not None else line,
            field=self.field,
            retryable=self.retryable,
            more=self.more,
            truncated=self.truncated,
        )


def _rebuild(message: str, path: str | None, line: int | None, field: str | None, retryable: bool, more=(), truncated=False) -> IngestError:
    return IngestError(message, path=path, line=line, field=field, retryable=retryable, more=more, truncated=truncated)

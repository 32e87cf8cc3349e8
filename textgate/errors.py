"""The one exception tree of textgate.

Every error a user can cause or meet is one of these. Each class carries a ``kind``: what
happened, in no protocol's words (``Kind``). The CLI (``cli.py``) maps errors to exit codes;
the gateway's front ends each map ``kind`` in one table of their own: HTTP statuses
(``gateway/http_errors.py``), spamd exit codes (``gateway/spamd.py``), milter replies
(``gateway/milter.py``). What an error means is said here, once.

Just over 400 lines: the whole tree stays in one file, so that the drawing below is checked
against one page of classes.

    TextgateError                  base: ``message`` plus an optional ``hint`` (the fix)
    ├── ConfigError                a configuration key is missing or invalid (names the key)
    ├── DataError                  an input data file is unusable (names file, row, column)
    │   └── SourceError            a packaged corpus is missing or not the pinned file
    ├── TrainError                 fine-tuning cannot start or did not converge
    ├── ExportError                ONNX export failed
    │   ├── ParityError            ONNX disagrees with PyTorch (carries every mismatch)
    │   └── VocabularyError        the tokenizer maps too much of the test split to [UNK]
    ├── BundleError                a bundle is corrupt, incomplete or not a bundle (invalid)
    ├── RepositoryError            a Triton model repository cannot be built
    ├── TritonError                the Triton process or a model in it failed (upstream)
    │   ├── TritonNotFound         no usable tritonserver / stub on this machine
    │   ├── TritonStartError       the server exited or did not become ready
    │   ├── ModelLoadError         a model failed to load (names the model, quotes the log)
    │   ├── TritonUnavailable      no Triton endpoint answers (unavailable)
    │   └── TritonTimeout          Triton did not answer within the deadline (timeout)
    ├── DependencyError            an extra (train, serve) missing, or the web stack not fitting
    ├── Overloaded                 too much work in flight; retry after ``retry_after_s``
    ├── ParseWorkerError           an e-mail parse worker process did not start (unavailable)
    ├── InputError                 a request's input cannot be classified (``reason``: a code)
    │   ├── PayloadTooLarge        over a size limit: body, headers, text (too_large)
    │   ├── UnsupportedContentType a content type the gateway does not read (unsupported)
    │   ├── InvalidInput           unusable as sent; names the ``field`` (invalid)
    │   │   ├── EmptyText          nothing left to classify after normalization
    │   │   ├── MalformedMessage   a MIME structure that cannot be read unambiguously
    │   │   └── MessageTooComplex  more MIME parts or deeper nesting than allowed
    │   └── GatewayError           a request to the gateway names the wrong thing (``field``)
    │       ├── UnknownTask        a task no Triton endpoint serves (not_found)
    │       ├── NotFound           something the gateway does not have: an expired request id
    │       ├── Unauthorized       a missing or wrong API key or admin token (unauthenticated)
    │       ├── Forbidden          a known caller asks for another tenant's mail (forbidden)
    │       └── Conflict           the current state does not allow it (conflict)
    ├── OutboxError                the event outbox cannot be opened or written (names the file)
    │   └── OutboxFull             the bound of unpublished events is reached (unavailable)
    ├── FeedbackError              the feedback store cannot be opened or written (names the file)
    │   └── ReviewStoreError       the review/quarantine store of the console, likewise
    ├── MailReleaseError           the MTA's release command failed for a held message (upstream)
    └── ReleaseError               a release operation is not possible now (conflict)
        └── GateFailed             promote refused: the compare gate failed or never ran
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar


class Kind(enum.Enum):
    """What went wrong, for a front end to answer in its own protocol's words."""

    INVALID = "invalid"  # the input or the named thing is unusable as sent
    TOO_LARGE = "too_large"
    UNSUPPORTED = "unsupported"  # a content type that is not read
    NOT_FOUND = "not_found"
    UNAUTHENTICATED = "unauthenticated"
    FORBIDDEN = "forbidden"
    CONFLICT = "conflict"  # the current state does not allow it
    OVERLOADED = "overloaded"  # too much work in flight: retry later
    UNAVAILABLE = "unavailable"  # a part we depend on cannot take it now: retry later
    TIMEOUT = "timeout"
    UPSTREAM = "upstream"  # Triton failed the request
    INTERNAL = "internal"  # an error of ours, in the tree (the CLI's failures)
    BUG = "bug"  # anything outside the tree


def kind_of(exc: BaseException) -> Kind:
    return exc.kind if isinstance(exc, TextgateError) else Kind.BUG


class TextgateError(Exception):
    """Base of all textgate errors: a message for people and, where known, the fix."""

    kind: ClassVar[Kind] = Kind.INTERNAL

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  fix: {self.hint}"


class ConfigError(TextgateError):
    """A configuration value is invalid; ``key`` is its dotted name."""

    kind = Kind.INVALID

    def __init__(self, key: str, problem: str, *, hint: str | None = None) -> None:
        super().__init__(f"config key '{key}': {problem}", hint=hint)
        self.key = key


class DataError(TextgateError):
    """An input data file cannot be used as given."""

    kind = Kind.INVALID

    def __init__(
        self,
        message: str,
        *,
        path: Path | str | None = None,
        row: int | None = None,
        column: str | None = None,
        hint: str | None = None,
    ) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if row is not None:
            where.append(f"row {row}")
        if column is not None:
            where.append(f"column '{column}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message, hint=hint)
        self.path = None if path is None else str(path)
        self.row = row
        self.column = column


class SourceError(DataError):
    """A corpus textgate takes from a pinned package is missing or differs from the pin."""


class TrainError(TextgateError):
    """Fine-tuning cannot start or failed."""


class ExportError(TextgateError):
    """ONNX export or variant generation failed."""


class ParityError(ExportError):
    """The exported model does not compute what the checkpoint computes."""

    def __init__(self, message: str, mismatches: Sequence[str], *, hint: str | None = None) -> None:
        shown = "\n".join(f"  - {m}" for m in mismatches[:20])
        more = f"\n  ... and {len(mismatches) - 20} more" if len(mismatches) > 20 else ""
        super().__init__(f"{message}\n{shown}{more}", hint=hint)
        self.mismatches = list(mismatches)


class VocabularyError(ExportError):
    """The tokenizer cannot represent the data: ``ratio`` of its tokens are [UNK]."""

    def __init__(self, message: str, *, ratio: float, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.ratio = ratio


class BundleError(TextgateError):
    """A bundle is corrupt, incomplete, or not a bundle; ``file`` names the culprit."""

    kind = Kind.INVALID

    # What an HTTP caller sent that is wrong: the bundle it named (``POST /admin/release/add``).
    field = "bundle"

    def __init__(self, message: str, *, file: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.file = file


class RepositoryError(TextgateError):
    """A Triton model repository cannot be built from the given bundles and config."""


class TritonError(TextgateError):
    """The Triton server process or a model in it failed."""

    kind = Kind.UPSTREAM


class TritonNotFound(TritonError):
    """No usable tritonserver binary or Python-backend stub was found."""


class TritonStartError(TritonError):
    """tritonserver exited or did not become ready in time."""


class ModelLoadError(TritonError):
    """A model failed to load; the message names it and quotes the log."""

    def __init__(self, model: str, log_excerpt: str, *, hint: str | None = None) -> None:
        super().__init__(f"model '{model}' failed to load:\n{log_excerpt}", hint=hint)
        self.model = model


class DependencyError(TextgateError):
    """An optional dependency is missing, or an installed one does not fit (gateway/upstream)."""


class TritonUnavailable(TritonError):
    """No Triton endpoint could take the request (all down, ejected or refusing)."""

    kind = Kind.UNAVAILABLE


class TritonTimeout(TritonError):
    """Triton did not answer within the request's deadline."""

    kind = Kind.TIMEOUT


class Overloaded(TextgateError):
    """The gateway is at its in-flight bound; the client should retry later."""

    kind = Kind.OVERLOADED

    def __init__(self, message: str, *, retry_after_s: int = 1, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.retry_after_s = retry_after_s


class ParseWorkerError(TextgateError):
    """An e-mail parse worker process did not start (the gateway's parse pool)."""

    kind = Kind.UNAVAILABLE


class OutboxError(TextgateError):
    """The event outbox (SQLite) cannot be opened, read or written; ``path`` names the file."""

    kind = Kind.UNAVAILABLE

    def __init__(self, message: str, *, path: Path | str, hint: str | None = None) -> None:
        super().__init__(f"event outbox {path}: {message}", hint=hint)
        self.path = str(path)


class OutboxFull(OutboxError):
    """The outbox holds its bound of unpublished events; the classification is refused (503)."""

    def __init__(self, message: str, *, path: Path | str, retry_after_s: int = 5) -> None:
        super().__init__(message, path=path, hint="the event publisher is behind; retry later")
        self.retry_after_s = retry_after_s


class FeedbackError(TextgateError):
    """The feedback store (SQLite) cannot be opened, read or written; ``path`` names the file."""

    kind = Kind.UNAVAILABLE

    def __init__(self, message: str, *, path: Path | str, hint: str | None = None) -> None:
        super().__init__(f"feedback store {path}: {message}", hint=hint)
        self.path = str(path)


class ReviewStoreError(FeedbackError):
    """The review/quarantine store (SQLite) cannot be opened, read or written (503)."""

    def __init__(self, message: str, *, path: Path | str, hint: str | None = None) -> None:
        TextgateError.__init__(self, f"review store {path}: {message}", hint=hint)
        self.path = str(path)


def require(module: str, extra: str) -> None:
    """Fail with an install hint when an optional extra's module is missing."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise DependencyError(
            f"this command needs '{module}', which is not installed",
            hint=f"pip install 'textgate[{extra}]'",
        )


class InputError(TextgateError):
    """A request's input cannot be classified as sent (a 4xx, never a 500).

    ``reason`` is a short stable code (``"too_many_parts"``) for responses and metrics.
    """

    kind = Kind.INVALID

    def __init__(self, message: str, *, reason: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason


class PayloadTooLarge(InputError):
    """The input is over a configured size limit; ``limit`` is that limit, ``field`` (when
    known) the input that is too large (``body``, ``content-length``)."""

    kind = Kind.TOO_LARGE

    def __init__(
        self,
        message: str,
        *,
        reason: str,
        limit: int,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message, reason=reason, hint=hint)
        self.limit = limit
        self.field = field


class UnsupportedContentType(InputError):
    """The request's Content-Type is not one the gateway reads."""

    kind = Kind.UNSUPPORTED

    def __init__(
        self, message: str, *, field: str = "content-type", hint: str | None = None
    ) -> None:
        super().__init__(message, reason="unsupported_media", hint=hint)
        self.field = field


class InvalidInput(InputError):
    """The input cannot be used as sent; ``field`` names the offending field (None: the
    request as a whole, e.g. a schema violation with no location)."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        reason: str = "invalid",
        hint: str | None = None,
    ) -> None:
        super().__init__(f"{field}: {message}" if field else message, reason=reason, hint=hint)
        self.field = field


class EmptyText(InvalidInput):
    """Nothing is left to classify once the input is normalized."""


class MalformedMessage(InvalidInput):
    """A raw message whose MIME structure cannot be read unambiguously."""


class MessageTooComplex(InvalidInput):
    """A raw message with more MIME parts or deeper nesting than the settings allow."""


class MailReleaseError(TextgateError):
    """``review.release_command`` (e.g. ``postsuper -H``) failed for a held message: it
    could not start, timed out or exited non-zero. The decision is not recorded, so the
    reviewer can release again once the MTA is fixed."""

    kind = Kind.UPSTREAM


class ReleaseError(TextgateError):
    """A release operation cannot run in the current state (no candidate, unknown version)."""

    kind = Kind.CONFLICT


class GateFailed(ReleaseError):
    """A promote was refused: the candidate's compare gate failed or has not run."""


class GatewayError(InputError):
    """A request to the gateway names the wrong thing; ``field`` names the offending input."""

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        reason: str = "invalid",
        hint: str | None = None,
    ) -> None:
        super().__init__(message, reason=reason, hint=hint)
        self.field = field


class UnknownTask(GatewayError):
    """The request names a task that no Triton endpoint serves."""

    kind = Kind.NOT_FOUND


class NotFound(GatewayError):
    """A request names something the gateway does not have (an expired request id)."""

    kind = Kind.NOT_FOUND


class Unauthorized(GatewayError):
    """A missing or wrong API key or admin token."""

    kind = Kind.UNAUTHENTICATED


class Forbidden(GatewayError):
    """A known caller asks for something that is not its own (another tenant's mail)."""

    kind = Kind.FORBIDDEN


class Conflict(GatewayError):
    """A request the current state does not allow (releases off, a contradicting decision)."""

    kind = Kind.CONFLICT

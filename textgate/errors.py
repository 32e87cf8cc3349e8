"""The one exception tree of textgate.

Every error a user can cause or meet is one of these; the CLI (``cli.py``) and the
gateway (``gateway/http_errors.py``) map them to exit codes and HTTP statuses, each in one
table. The gateway adds only HTTP-level classes (unknown task, auth, conflict) under
``InputError``; what an input error means is said here, once.

    TextgateError                  base: ``message`` plus an optional ``hint`` (the fix)
    ├── ConfigError                a configuration key is missing or invalid (names the key)
    ├── DataError                  an input data file is unusable (names file, row, column)
    │   └── SourceError            a packaged corpus is missing or not the pinned file
    ├── TrainError                 fine-tuning cannot start or did not converge
    ├── ExportError                ONNX export failed
    │   ├── ParityError            ONNX disagrees with PyTorch (carries every mismatch)
    │   └── VocabularyError        the tokenizer maps too much of the test split to [UNK]
    ├── BundleError                a bundle is corrupt, incomplete or not a bundle (gateway: 422)
    ├── RepositoryError            a Triton model repository cannot be built
    ├── TritonError                the Triton process or a model in it failed
    │   ├── TritonNotFound         no usable tritonserver / stub on this machine
    │   ├── TritonStartError       the server exited or did not become ready
    │   ├── ModelLoadError         a model failed to load (names the model, quotes the log)
    │   ├── TritonUnavailable      no Triton endpoint answers (gateway: 503)
    │   └── TritonTimeout          Triton did not answer within the deadline (gateway: 504)
    ├── DependencyError            an extra (train, serve) missing, or the web stack not fitting
    ├── Overloaded                 too much work in flight; retry after ``retry_after_s`` (429)
    ├── InputError                 a request's input cannot be classified (``reason``: a code)
    │   ├── PayloadTooLarge        over a size limit: body, headers, text (gateway: 413)
    │   ├── UnsupportedContentType a content type the gateway does not read (gateway: 415)
    │   └── InvalidInput           unusable as sent; names the ``field`` (gateway: 422)
    │       ├── EmptyText          nothing left to classify after normalization
    │       ├── MalformedMessage   a MIME structure that cannot be read unambiguously
    │       └── MessageTooComplex  more MIME parts or deeper nesting than allowed
    ├── OutboxError                the event outbox cannot be opened or written (names the file)
    │   └── OutboxFull             the bound of unpublished events is reached (gateway: 503)
    ├── FeedbackError              the feedback store cannot be opened or written (names the file)
    │   └── ReviewStoreError       the review/quarantine store of the console, likewise
    └── ReleaseError               a release operation is not possible now (gateway: 409)
        └── GateFailed             promote refused: the compare gate failed or never ran
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class TextgateError(Exception):
    """Base of all textgate errors: a message for people and, where known, the fix."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  fix: {self.hint}"


class ConfigError(TextgateError):
    """A configuration value is invalid; ``key`` is its dotted name."""

    def __init__(self, key: str, problem: str, *, hint: str | None = None) -> None:
        super().__init__(f"config key '{key}': {problem}", hint=hint)
        self.key = key


class DataError(TextgateError):
    """An input data file cannot be used as given."""

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

    # What an HTTP caller sent that is wrong: the bundle it named (``POST /admin/release/add``).
    field = "bundle"

    def __init__(self, message: str, *, file: str | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.file = file


class RepositoryError(TextgateError):
    """A Triton model repository cannot be built from the given bundles and config."""


class TritonError(TextgateError):
    """The Triton server process or a model in it failed."""


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


class TritonTimeout(TritonError):
    """Triton did not answer within the request's deadline."""


class Overloaded(TextgateError):
    """The gateway is at its in-flight bound; the client should retry later."""

    def __init__(self, message: str, *, retry_after_s: int = 1, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.retry_after_s = retry_after_s


class ParseWorkerError(TextgateError):
    """An e-mail parse worker process did not start (the gateway's parse pool)."""


class OutboxError(TextgateError):
    """The event outbox (SQLite) cannot be opened, read or written; ``path`` names the file."""

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

    def __init__(self, message: str, *, reason: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.reason = reason


class PayloadTooLarge(InputError):
    """The input is over a configured size limit; ``limit`` is that limit, ``field`` (when
    known) the input that is too large (``body``, ``content-length``)."""

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


class ReleaseError(TextgateError):
    """A release operation cannot run in the current state (no candidate, unknown version)."""


class GateFailed(ReleaseError):
    """A promote was refused: the candidate's compare gate failed or has not run."""

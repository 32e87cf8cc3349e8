"""A classify request's body: read within the size limit, then parsed by its media type.

    application/json   {"text": "..."} or {"texts": [...]} (at most gateway.max_batch)
    message/rfc822     one raw e-mail, as bytes (normalized later, in the parse pool)
    text/plain         one UTF-8 text

Every refusal is an ``InputError`` naming its ``field`` (413, 415, 422 in the one table).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson
from starlette.requests import ClientDisconnect, Request

from textgate.errors import InvalidInput, PayloadTooLarge, UnsupportedContentType

JSON_TYPES = ("application/json",)
EMAIL_TYPES = ("message/rfc822",)
TEXT_TYPES = ("text/plain",)


async def read_body(request: Request, limit: int) -> bytes:
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise PayloadTooLarge(
            f"body of {length} bytes is over the limit of {limit}",
            field="body",
            reason="too_large",
            limit=limit,
        )
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise PayloadTooLarge(
                    f"body is over the limit of {limit} bytes",
                    field="body",
                    reason="too_large",
                    limit=limit,
                )
            chunks.append(chunk)
    except ClientDisconnect:  # the front door's body deadline, or the client gave up
        raise InvalidInput("did not arrive", field="body", reason="incomplete") from None
    return b"".join(chunks)


def media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip().lower()


def check_media(media: str) -> None:
    """A 415 from the header alone, before any body is read."""
    if media in (*JSON_TYPES, *EMAIL_TYPES, *TEXT_TYPES) or media.endswith("+json"):
        return
    raise UnsupportedContentType(
        f"unsupported Content-Type '{media[:80] or '(none)'}'",
        field="content-type",
        hint="send application/json, message/rfc822 or text/plain",
    )


def parse(media: str, body: bytes, max_batch: int) -> list[str | bytes]:
    """The texts (str) or raw e-mail (bytes) to classify."""
    if media in EMAIL_TYPES:
        return [body]
    if media in TEXT_TYPES:
        return [_utf8(body, "body")]
    check_media(media)
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        # orjson is stricter (lone surrogates, NaN, huge ints, depth): the standard parser
        # decides, so answers and error messages are exactly those of json.loads.
        data = _json_slow(body)
    return _texts(data, max_batch)


def _json_slow(body: bytes) -> Any:
    try:
        return json.loads(_utf8(body, "body"))
    except RecursionError:
        raise InvalidInput("JSON nested too deeply", field="body") from None
    except ValueError as exc:
        raise InvalidInput(f"not valid JSON: {exc}", field="body") from None


def _utf8(body: bytes, name: str) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"not valid UTF-8 (byte {exc.start})", field=name) from None


def _texts(data: Any, max_batch: int) -> list[str | bytes]:
    if not isinstance(data, dict):
        raise InvalidInput("must be a JSON object", field="body")
    unknown = sorted(set(data) - {"text", "texts"})
    if unknown:
        raise InvalidInput("unknown field", field=unknown[0][:64])
    if ("text" in data) == ("texts" in data):
        raise InvalidInput("send exactly one of 'text' or 'texts'", field="text")
    if "text" in data:
        if not isinstance(data["text"], str):
            raise InvalidInput("must be a string", field="text")
        return [data["text"]]
    texts = data["texts"]
    if not isinstance(texts, list) or not texts:
        raise InvalidInput("must be a non-empty list of strings", field="texts")
    if len(texts) > max_batch:
        raise InvalidInput(f"{len(texts)} texts; at most {max_batch}", field="texts")
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InvalidInput("must be a string", field=f"texts[{i}]")
    return list(texts)


def payload_hash(task: str, media: str, body: bytes) -> str:
    """What a repeated ``X-Request-ID`` must match to be answered from the stored verdict."""
    digest = hashlib.sha256()
    for part in (task.encode("utf-8", "surrogatepass"), media.encode("latin-1", "replace"), body):
        digest.update(len(part).to_bytes(8, "big") + part)  # length-prefixed: unambiguous
    return digest.hexdigest()

"""Kafka's frames as the proxy reads and writes them, with kio's message types.

Every request and response is a frame: a 4-byte size, then the message. A request starts
with its header (API key, API version, correlation id, client id; tagged fields where the
request's version is flexible: header v2, else v1); a response with the correlation id
(and tagged fields where flexible: header v1; ApiVersions answers always use v0, so that a
client that does not know the broker's versions yet can read them). Only what a rule needs
is decoded: the hot path reads the first eight bytes of a request and nothing of a response.
"""

from __future__ import annotations

import dataclasses
import io
import struct
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer

from faults.message_proxy.apis import Api

API_VERSIONS_KEY = 18
_REQUEST_START = struct.Struct(">hhi")  # api key, api version, correlation id
_CORRELATION = struct.Struct(">i")
_SIZE = struct.Struct(">i")


class FrameError(ValueError):
    """A message the proxy cannot read with the schemas it has."""


def request_start(frame: bytes) -> tuple[int, int, int]:
    """(api key, api version, correlation id) of a request frame (without its size)."""
    return _REQUEST_START.unpack_from(frame)


def response_correlation(frame: bytes) -> int:
    return _CORRELATION.unpack_from(frame)[0]


def sized(message: bytes) -> bytes:
    return _SIZE.pack(len(message)) + message


@cache
def _request_schema(api_key: int, version: int):
    try:
        return load_request_schema(api_key, version)
    except Exception as e:
        raise FrameError(f"no schema of API {api_key} request v{version} in kio: {e}") from None


@cache
def _response_schema(api_key: int, version: int):
    try:
        return load_response_schema(api_key, version)
    except Exception as e:
        raise FrameError(f"no schema of API {api_key} response v{version} in kio: {e}") from None


def _response_header(api_key: int, version: int):
    if api_key == API_VERSIONS_KEY:
        return ResponseHeaderV0
    return ResponseHeaderV1 if _response_schema(api_key, version).__flexible__ else ResponseHeaderV0


def decode_request(frame: bytes) -> Any:
    """The request's body, as kio's type of its API and version."""
    api_key, version, _ = request_start(frame)
    schema = _request_schema(api_key, version)
    header = RequestHeaderV2 if schema.__flexible__ else RequestHeaderV1
    _, offset = entity_reader(header)(frame, 0)
    body, _ = entity_reader(schema)(frame, offset)
    return body


def decode_response(frame: bytes, api_key: int, version: int) -> tuple[Any, Any]:
    """(header, body) of a response to ``api_key`` at ``version``."""
    header_type = _response_header(api_key, version)
    header, offset = entity_reader(header_type)(frame, 0)
    body, _ = entity_reader(_response_schema(api_key, version))(frame, offset)
    return header, body


def encode_response(header: Any, body: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(header))(out, header)
    entity_writer(type(body))(out, body)
    return out.getvalue()


def error_code(name: str) -> ErrorCode:
    """Kafka's error name (REBALANCE_IN_PROGRESS) as kio's code."""
    try:
        return ErrorCode[name.lower()]
    except KeyError:
        raise FrameError(f"no Kafka error {name!r}") from None


def first_error(body: Any) -> str:
    """The first error code the answer carries, by Kafka's name (NONE: it succeeded)."""
    for value in _error_codes(body):
        if value != ErrorCode.none:
            return value.name.upper()
    return "NONE"


def _error_codes(entity: Any):
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if f.name == "error_code":
            yield value
        elif isinstance(value, tuple):
            for item in value:
                if dataclasses.is_dataclass(item):
                    yield from _error_codes(item)
        elif dataclasses.is_dataclass(value):
            yield from _error_codes(value)


def with_error(body: Any, api: Api, code: ErrorCode) -> Any:
    """The answer as a broker writes it when it answers ``code``: every error code set; for an
    API answered at the group's level (OffsetFetch) the group's error set and its partitions left
    out, as the broker leaves them out (librdkafka reads a partition's error as that partition's
    alone, and retries it)."""
    return _set_errors(body, code, api.group_level, top=True)


def _set_errors(entity: Any, code: ErrorCode, group_level: bool, top: bool) -> Any:
    changes: dict[str, Any] = {}
    names = {f.name for f in dataclasses.fields(entity)}
    carries_error = "error_code" in names
    for f in dataclasses.fields(entity):
        value = getattr(entity, f.name)
        if f.name == "error_code":
            changes[f.name] = code
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            if group_level and carries_error and f.name == "topics":
                changes[f.name] = ()
            else:
                changes[f.name] = tuple(_set_errors(item, code, group_level, top=False) for item in value)
        elif dataclasses.is_dataclass(value):
            changes[f.name] = _set_errors(value, code, group_level, top=False)
    return dataclasses.replace(entity, **changes)


def rewrite_error(frame: bytes, api: Api, version: int, name: str) -> tuple[bytes, str]:
    """The response frame (without its size) with its errors replaced by ``name``, re-encoded at the
    same version; and the error the broker had answered."""
    header, body = decode_response(frame, api.key, version)
    return encode_response(header, with_error(body, api, error_code(name))), first_error(body)


def cap_api_versions(frame: bytes, version: int, highest: dict[int, int]) -> tuple[bytes, dict[int, tuple[int, int]]]:
    """An ApiVersions answer with no API's max_version above ``highest`` (API key -> the highest
    version kio reads), and what it lowered (key -> (broker's, capped)). An answer kio cannot
    read is passed on as it is."""
    header, body = decode_response(frame, API_VERSIONS_KEY, version)
    lowered: dict[int, tuple[int, int]] = {}
    keys = []
    for k in body.api_keys:
        cap = highest.get(k.api_key)
        if cap is not None and k.max_version > cap >= k.min_version:
            lowered[k.api_key] = (k.max_version, cap)
            k = dataclasses.replace(k, max_version=type(k.max_version)(cap))
        keys.append(k)
    if not lowered:
        return frame, lowered
    return encode_response(header, dataclasses.replace(body, api_keys=tuple(keys))), lowered

#!/usr/bin/env python3
"""AWS Signature Version 4 and the instance role's IMDSv2 credentials (Python standard library only, 3.9+).

The one home of the kit's signer on a node: utilisation.py (CloudWatch PutMetricData) and fetch.py (S3 GetObject
of the node scripts) import it, as a sibling module when run from /opt/neuronfleet (``python3 X.py`` puts the
script's directory first on ``sys.path``) and as ``neuronfleet.node.sigv4`` in the package. The ECS-optimized AMI
(AL2023) has python3 and no AWS CLI nor boto3, so nothing here needs them.

Signing (AWS "Create a signed AWS API request", IAM User Guide; tested against the AWS SigV4 test suite, AWS's
S3 example and botocore's own signers): for S3 (``s3=True``) the path is signed as sent (S3 does not encode it a
second time nor normalise it: botocore S3SigV4Auth._normalize_url_path returns it unchanged) and the request carries
``x-amz-content-sha256``, the payload's SHA-256 (the empty string's for a GET), in its signed headers: "You also
specify the same value as the x-amz-content-sha256 header value when sending the request to S3" (Amazon S3 API
Reference, "Signature Calculations for the Authorization Header: Transferring Payload in a Single Chunk",
https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, read 2026-11-26).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the host's python3 may be 3.9: no ``X | None`` evaluated at run time
    from email.message import Message
    from typing import IO

    Http = Callable[[str, str, Mapping[str, str], bytes | None, float], tuple[int, bytes]]
    """(method, url, headers, body, timeout) -> (status, body); raises OSError when no response came."""

IMDS = "http://169.254.169.254"
REFRESH_BEFORE_S = 300
"""Credentials are fetched again this long before their ``Expiration`` (IMDS rotates them well before)."""
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
"""e3b0c442...b855: the ``x-amz-content-sha256`` of a request without a body."""


@dataclass(frozen=True)
class Credentials:
    access_key: str
    secret_key: str
    token: str | None = None
    expiration: float | None = None
    """Epoch seconds; None: never expires (tests)."""


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def _uri_encode(text: str, safe: str = "-_.~") -> str:
    return urllib.parse.quote(text, safe=safe)


def canonical_request(method: str, url: str, headers: Mapping[str, str], body: bytes, *, s3: bool = False
                      ) -> tuple[str, str]:
    """The SigV4 canonical request and its signed-header list (AWS "Create a canonical request"): path and query
    URI-encoded, headers lower-cased, trimmed, sorted, values of a repeated header joined by commas. With ``s3``
    the path is taken as the URL carries it (already URI-encoded once, as S3 signs it)."""
    parts = urllib.parse.urlsplit(url)
    path = (parts.path or "/") if s3 else _uri_encode(parts.path or "/", safe="-_.~/")
    query = sorted((_uri_encode(k), _uri_encode(v))
                   for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    merged: dict[str, list[str]] = {}
    for name, value in headers.items():
        merged.setdefault(name.strip().lower(), []).append(" ".join(str(value).split()))
    signed = ";".join(sorted(merged))
    canonical_headers = "".join(f"{k}:{','.join(merged[k])}\n" for k in sorted(merged))
    text = "\n".join([method.upper(), path, "&".join(f"{k}={v}" for k, v in query), canonical_headers, signed,
                      hashlib.sha256(body).hexdigest()])
    return text, signed


def authorization(method: str, url: str, headers: Mapping[str, str], body: bytes, creds: Credentials, region: str,
                  service: str, amz_date: str, *, s3: bool = False) -> str:
    """The ``Authorization`` header for a request whose headers already carry ``Host`` and ``X-Amz-Date``
    (and ``X-Amz-Security-Token`` when the credentials have one)."""
    creq, signed = canonical_request(method, url, headers, body, s3=s3)
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(creq.encode()).hexdigest()])
    key = _hmac(_hmac(_hmac(_hmac(f"AWS4{creds.secret_key}".encode(), amz_date[:8]), region), service),
                "aws4_request")
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return f"AWS4-HMAC-SHA256 Credential={creds.access_key}/{scope}, SignedHeaders={signed}, Signature={signature}"


def signed_headers(method: str, url: str, headers: Mapping[str, str], body: bytes, creds: Credentials, region: str,
                   service: str, now: float, *, s3: bool = False) -> dict[str, str]:
    """``headers`` plus Host, X-Amz-Date, the session token, for S3 x-amz-content-sha256, and Authorization."""
    amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    out = {**headers, "Host": urllib.parse.urlsplit(url).netloc, "X-Amz-Date": amz_date}
    if s3:
        out["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
    if creds.token:
        out["X-Amz-Security-Token"] = creds.token
    out["Authorization"] = authorization(method, url, out, body, creds, region, service, amz_date, s3=s3)
    return out


# ------------------------------------------------------------------------------------- transport


class SendError(Exception):
    """A request that did not succeed; ``retryable``: throttling, 5xx or the network; ``auth``: credentials."""

    def __init__(self, message: str, *, retryable: bool = False, auth: bool = False) -> None:
        super().__init__(message)
        self.retryable, self.auth = retryable, auth


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A signed request is never sent on to another host: a 3xx comes back as the answer (S3 answers a request to
    the wrong region with 301 PermanentRedirect, whose body names the right endpoint)."""

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str, headers: Message,
                         newurl: str) -> urllib.request.Request | None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def urllib_http(method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float
                ) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method, headers=dict(headers))
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


class ImdsCredentials:
    """The instance role's credentials from IMDSv2 (a session token first, then the role's credentials), cached
    until ``REFRESH_BEFORE_S`` before they expire, or until :meth:`refresh` (a request rejected them)."""

    def __init__(self, http: Http = urllib_http, clock: Callable[[], float] = time.time, base: str = IMDS) -> None:
        self.http, self.clock, self.base = http, clock, base
        self._creds: Credentials | None = None

    def _get(self, path: str, token: str) -> bytes:
        status, body = self.http("GET", self.base + path, {"X-aws-ec2-metadata-token": token}, None, 2)
        if status != 200:
            raise SendError(f"IMDS {path}: HTTP {status}", retryable=True)
        return body

    def fetch(self) -> Credentials:
        status, token = self.http("PUT", self.base + "/latest/api/token",
                                  {"X-aws-ec2-metadata-token-ttl-seconds": "21600"}, None, 2)
        if status != 200:
            raise SendError(f"IMDSv2 token: HTTP {status}", retryable=True)
        base = "/latest/meta-data/iam/security-credentials/"
        roles = self._get(base, token.decode()).decode().split()
        if not roles:
            raise SendError(f"IMDS {base}: no instance role", retryable=True)
        raw = json.loads(self._get(base + roles[0], token.decode()))
        if raw.get("Code", "Success") != "Success":
            raise SendError(f"IMDS credentials for {roles[0]}: {raw.get('Code')}", retryable=True)
        expires = dt.datetime.fromisoformat(raw["Expiration"].replace("Z", "+00:00")).timestamp()
        return Credentials(raw["AccessKeyId"], raw["SecretAccessKey"], raw.get("Token"), expires)

    def get(self) -> Credentials:
        c = self._creds
        if c is None or (c.expiration is not None and self.clock() >= c.expiration - REFRESH_BEFORE_S):
            self._creds = c = self.fetch()
        return c

    def refresh(self) -> Credentials:
        self._creds = None
        return self.get()

#!/usr/bin/env python3
"""neuronfleet node-script fetcher (Python standard library only, python3 3.9+; runs in a training host's user data).

    python3 /opt/neuronfleet/fetch.py --bucket B --key K --region R --url-suffix S --dest /opt/neuronfleet

EC2 takes at most 16 KB of user data ("User data is limited to 16 KB, in raw form, before it is base64-encoded",
EC2 User Guide, "Work with instance user data"), too little for the node scripts: the user data writes only this
file and sigv4.py (neuronfleet.node.BOOTSTRAP) and runs it. It

1. takes the instance role's credentials from IMDSv2 (sigv4.ImdsCredentials: no AWS CLI on the AMI);
2. GETs ``https://B.s3.R.S/K`` (virtual-hosted style; a bucket name with a dot, which the TLS certificate of
   ``*.s3.R.S`` does not cover, is asked for as ``https://s3.R.S/B/K``), signed with SigV4 for service ``s3``:
   the key URI-encoded once (S3 signs the path as sent) and ``x-amz-content-sha256`` the empty body's SHA-256
   (Amazon S3 API Reference, "Signature Calculations for the Authorization Header: Transferring Payload in a
   Single Chunk", https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, read 2026-11-26);
   redirects are not followed (a signed request stays with its host);
3. retries what may pass: no connection or no answer, HTTP 429 and 5xx (S3 answers throttling with 503 SlowDown),
   S3's ``RequestTimeout``, and IMDS failures; :data:`ATTEMPTS` (5) attempts, waiting
   ``BACKOFF_S * 2**n`` (1, 2, 4, 8 s: 15 s in all) plus up to 10 % jitter between them. Anything else
   (403 AccessDenied, 404 NoSuchKey, 301 PermanentRedirect...) fails at once;
4. unpacks the zip (the CDK asset: cdk-assets zips files only, each by its path relative to the asset directory,
   cdklabs/cdk-assets lib/private/archive.ts at 4d8c044a) into ``--dest``: only plain file names; a member with a
   directory part, ``..``, an absolute name, a NUL, a duplicate name, a symbolic link, or a zip over
   :data:`MAX_BYTES` refuses the whole archive before anything is written. Each file is written to a temporary
   name in ``--dest`` and renamed over its target (a running script keeps its old file; no half-written file is
   ever at a script's name); ``.py`` files get mode 0755, others 0644.

Exit 0 on success (one line on stdout naming the files; each retry is a line on stdout). On failure one line on
stderr,
``neuronfleet fetch: ...``, names what failed (the URL, never credentials; the HTTP status, S3's error Code and
Message and RequestId; or the zip member refused), and the exit status is 1 (2 for bad arguments): the user data
runs under ``set -e``, so the node never joins the cluster, and the line is in the instance's console output.

Test hooks (for tests/unit/test_node_fetch.py, never set on a host): ``--endpoint-url URL`` sends the request
path-style to ``URL/B/K`` instead of the region's endpoint; ``NEURONFLEET_IMDS_URL`` replaces the IMDS base
``http://169.254.169.254``; ``NEURONFLEET_FETCH_BACKOFF_S`` replaces :data:`BACKOFF_S`.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client as http_client
import io
import os
import random
import re
import stat
import sys
import time
import urllib.error
import urllib.parse
import zipfile
from collections.abc import Callable
from typing import TYPE_CHECKING
from xml.etree import ElementTree

if TYPE_CHECKING or __package__:  # neuronfleet.node.fetch (mypy reads this branch)
    from .sigv4 import IMDS, Credentials, ImdsCredentials, SendError, signed_headers, urllib_http
else:  # python3 /opt/neuronfleet/fetch.py: sigv4.py beside it, first on sys.path
    from sigv4 import IMDS, Credentials, ImdsCredentials, SendError, signed_headers, urllib_http

if TYPE_CHECKING:
    from .sigv4 import Http

SERVICE = "s3"
ATTEMPTS = 5
BACKOFF_S = 1.0
"""Waits between attempts: BACKOFF_S * 2**n for n = 0..ATTEMPTS-2 (1, 2, 4, 8 s), each plus up to 10 % jitter."""
TIMEOUT_S = 30.0
"""Per request (the node scripts' zip is tens of KB)."""
MAX_BYTES = 8 * 1024 * 1024
"""The most the archive, and the sum of its unpacked files, may hold (the scripts are about 100 KB)."""
RETRYABLE_CODES = ("SlowDown", "RequestTimeout", "InternalError", "ServiceUnavailable", "Throttling",
                   "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException")
BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
"""S3 bucket naming rules (general purpose buckets): 3-63 characters, lowercase letters, digits, dots, hyphens,
beginning and ending with a letter or digit."""
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
URL_SUFFIX = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+$")
PREFIX = "neuronfleet fetch"


class FetchError(Exception):
    """What failed, as the one line the user data's log shows."""


class Refused(FetchError):
    """The archive holds something fetch.py will not write."""


# --------------------------------------------------------------------------------------------- the request


def _reason(exc: BaseException) -> str:
    """An exception as a few words: a SendError's own message, urllib's reason without its wrapper."""
    if isinstance(exc, SendError):
        return str(exc)
    if isinstance(exc, urllib.error.URLError) and not isinstance(exc, urllib.error.HTTPError):
        return str(exc.reason)
    return f"{type(exc).__name__}: {exc}"


def object_url(bucket: str, key: str, region: str, url_suffix: str, endpoint_url: str | None = None) -> str:
    """The GetObject URL: the key URI-encoded once ('/' kept), as S3 signs the path."""
    path = urllib.parse.quote(key, safe="-_.~/")
    if endpoint_url:
        return f"{endpoint_url.rstrip('/')}/{bucket}/{path}"
    if "." in bucket:
        return f"https://s3.{region}.{url_suffix}/{bucket}/{path}"
    return f"https://{bucket}.s3.{region}.{url_suffix}/{path}"


def s3_error(body: bytes) -> tuple[str, str, str]:
    """(Code, Message, RequestId) of an S3 REST error document; empty strings for what it lacks or a body that is
    not one (Amazon S3 User Guide, "The REST error response": ``<Error><Code>...</Code><Message>...</Message>
    <Resource>...</Resource><RequestId>...</RequestId></Error>``)."""
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return "", "", ""
    if root.tag != "Error":
        return "", "", ""
    code, message, request_id = ((root.findtext(name) or "").strip() for name in ("Code", "Message", "RequestId"))
    return code, message, request_id


def get_object(url: str, region: str, creds: Credentials, http: Http, clock: Callable[[], float]) -> bytes:
    """One signed GET; raises SendError (``retryable`` for what may pass) naming the URL, status and S3's code."""
    headers = signed_headers("GET", url, {}, b"", creds, region, SERVICE, clock(), s3=True)
    try:
        status, body = http("GET", url, headers, None, TIMEOUT_S)
    except (OSError, http_client.HTTPException) as exc:  # no answer, a broken one (IncompleteRead)
        raise SendError(f"GET {url}: no answer ({_reason(exc)})", retryable=True) from exc
    if status == 200:
        return body
    code, message, request_id = s3_error(body)
    detail = " ".join(part for part in (code, f"({message})" if message else "",
                                        f"RequestId {request_id}" if request_id else "") if part)
    raise SendError(f"GET {url}: HTTP {status}" + (f" {detail}" if detail else ""),
                    retryable=status == 429 or status >= 500 or code in RETRYABLE_CODES)


def with_retries(action: Callable[[], bytes], sleep: Callable[[float], None], backoff_s: float,
                 on_retry: Callable[[str], None]) -> bytes:
    for attempt in range(ATTEMPTS):
        try:
            return action()
        except (SendError, OSError, ValueError, KeyError) as exc:
            retryable = isinstance(exc, OSError) or (isinstance(exc, SendError) and exc.retryable)
            what = _reason(exc)
            if not retryable or attempt == ATTEMPTS - 1:
                tries = f" (after {attempt + 1} attempts)" if attempt else ""
                raise FetchError(f"{what}{tries}") from exc
            wait = backoff_s * 2 ** attempt * (1 + random.random() / 10)
            on_retry(f"{what}: retrying in {wait:.1f} s")
            sleep(wait)
    raise AssertionError("unreachable")


def download(url: str, region: str, credentials: ImdsCredentials, *, http: Http = urllib_http,
             clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
             backoff_s: float = BACKOFF_S, on_retry: Callable[[str], None] = lambda m: None) -> bytes:
    def attempt() -> bytes:
        try:
            creds = credentials.get()
        except (SendError, OSError, http_client.HTTPException, ValueError, KeyError) as exc:
            raise SendError(f"instance role credentials from IMDS ({credentials.base}): {_reason(exc)}",
                            retryable=True) from exc
        return get_object(url, region, creds, http, clock)

    return with_retries(attempt, sleep, backoff_s, on_retry)


# ----------------------------------------------------------------------------------------------- the zip


def _plain_name(name: str) -> bool:
    return (bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name and "\0" not in name
            and not re.match(r"^[A-Za-z]:", name))


def members(archive: bytes) -> dict[str, bytes]:
    """Every member of the zip by name, read and CRC-checked; raises Refused before anything is written."""
    if len(archive) > MAX_BYTES:
        raise Refused(f"archive of {len(archive)} bytes is over {MAX_BYTES}")
    try:
        zf = zipfile.ZipFile(io.BytesIO(archive))
    except zipfile.BadZipFile as exc:
        raise Refused(f"not a zip archive ({exc})") from exc
    out: dict[str, bytes] = {}
    total = 0
    with zf:
        for info in zf.infolist():
            name = info.filename
            if not _plain_name(name):
                raise Refused(f"member {name!r}: only plain file names (no directory, '..' or absolute path)")
            if name in out:
                raise Refused(f"member {name!r} appears twice")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise Refused(f"member {name!r} is a symbolic link")
            total += info.file_size
            if total > MAX_BYTES:
                raise Refused(f"members unpack to more than {MAX_BYTES} bytes")
            try:
                out[name] = zf.read(info)
            except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as exc:
                raise Refused(f"member {name!r} cannot be read ({exc})") from exc
    if not out:
        raise Refused("the archive is empty")
    return out


def install(files: dict[str, bytes], dest: str) -> list[str]:
    """Write each file to a temporary name in ``dest``, then rename it over its target."""
    try:
        os.makedirs(dest, exist_ok=True)
    except OSError as exc:
        raise FetchError(f"making {dest}: {exc}") from exc
    written = []
    for name in sorted(files):
        mode = 0o755 if name.endswith(".py") else 0o644
        target = os.path.join(dest, name)
        temp = os.path.join(dest, f".{name}.fetch-{os.getpid()}")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
            with os.fdopen(fd, "wb") as f:
                f.write(files[name])
                f.flush()
                os.fsync(f.fileno())
            os.chmod(temp, mode)  # whatever the umask
            os.replace(temp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise FetchError(f"writing {target}: {exc}") from exc
        written.append(name)
    return written


# ------------------------------------------------------------------------------------------------- main


def _checked(parser: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    problems = []
    if not BUCKET.match(a.bucket) or ".." in a.bucket:
        problems.append(f"--bucket {a.bucket!r}: an S3 bucket name (3-63 of a-z 0-9 . -, starting and ending with "
                        "a letter or digit)")
    if not a.key or a.key.startswith("/"):
        problems.append(f"--key {a.key!r}: an object key, not empty and without a leading '/'")
    if not REGION.match(a.region):
        problems.append(f"--region {a.region!r}: a region name such as us-east-2")
    if not URL_SUFFIX.match(a.url_suffix):
        problems.append(f"--url-suffix {a.url_suffix!r}: a domain such as amazonaws.com or amazonaws.com.cn")
    if a.endpoint_url and not re.match(r"^https?://[^/]+/?$", a.endpoint_url):
        problems.append(f"--endpoint-url {a.endpoint_url!r}: scheme and host only, such as http://127.0.0.1:9000")
    if problems:
        parser.error("; ".join(problems))


def main(argv: list[str] | None = None, *, http: Http = urllib_http, sleep: Callable[[float], None] = time.sleep
         ) -> int:
    p = argparse.ArgumentParser(description="Download the neuronfleet node scripts (a zip in S3) with the "
                                            "instance role and unpack them")
    p.add_argument("--bucket", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--region", required=True)
    p.add_argument("--url-suffix", required=True, help="the partition's domain: amazonaws.com, amazonaws.com.cn")
    p.add_argument("--dest", required=True, help="the directory to unpack into (made if missing)")
    p.add_argument("--endpoint-url", default=None, help="tests only: send the request path-style to this URL")
    p.add_argument("--expect", action="append", default=[], metavar="NAME",
                   help="a file the archive must hold (repeatable): an archive without it is refused, nothing written")
    a = p.parse_args(argv)
    _checked(p, a)
    url = object_url(a.bucket, a.key, a.region, a.url_suffix, a.endpoint_url)
    imds = os.environ.get("NEURONFLEET_IMDS_URL") or IMDS
    backoff = float(os.environ.get("NEURONFLEET_FETCH_BACKOFF_S") or BACKOFF_S)
    try:
        archive = download(url, a.region, ImdsCredentials(http=http, base=imds), http=http, sleep=sleep,
                           backoff_s=backoff, on_retry=lambda m: print(f"{PREFIX}: {m}", flush=True))
        try:
            files = members(archive)
            missing = sorted(set(a.expect) - set(files))
            if missing:
                raise Refused(f"the archive lacks {', '.join(missing)} (it holds {', '.join(sorted(files))})")
        except Refused as exc:
            raise Refused(f"{url}: {exc}; nothing written") from exc
        written = install(files, a.dest)
    except FetchError as exc:
        print(f"{PREFIX}: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # still one line in the console output, never a traceback
        print(f"{PREFIX}: {url} -> {a.dest}: unexpected {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(f"{PREFIX}: {url} -> {a.dest}: {', '.join(written)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

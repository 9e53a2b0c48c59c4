"""Thin adapters of the hub-model copy: the Hugging Face Hub over HTTPS, Secrets Manager, S3, Lambda (the hand-over to
the next run) and CloudFormation's response URL."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from .logic import BadListing, Upload

HUB = "https://huggingface.co"
TREE = "{hub}/api/models/{model_id}/tree/{revision}?recursive=true"
"""The recursive file list of a revision (huggingface_hub ``HfApi.list_repo_tree``: ``{endpoint}/api/{repo_type}s/
{repo_id}/tree/{revision}``, paginated by a ``Link: <...>; rel="next"`` header; src/huggingface_hub/hf_api.py and
utils/_pagination.py at ee0a4510, read 2026-11-28)."""
RESOLVE = "{hub}/{model_id}/resolve/{revision}/{path}"
"""A file's bytes (huggingface_hub constants.HUGGINGFACE_CO_URL_TEMPLATE ``{endpoint}/{repo_id}/resolve/{revision}/
{filename}``; a Range header reads part of it, as huggingface_hub's ``http_get`` does to resume; an LFS file answers
with a redirect to its storage host; file_download.py at ee0a4510, read 2026-11-28)."""
TIMEOUT_S = 60
MAX_REDIRECTS = 5


class HubError(RuntimeError):
    """The hub refused or failed a request: the message says which and its HTTP status."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        return None  # answered as an HTTPError: Hub.get follows it itself, without the token on another host


Open = Callable[[urllib.request.Request], Any]


def default_open() -> Open:
    opener = urllib.request.build_opener(_NoRedirect)
    return lambda request: opener.open(request, timeout=TIMEOUT_S)


class Hub:
    """The Hugging Face Hub with a token. The token goes to the hub's own host only: a redirect to another host (an
    LFS file's storage) is followed without it, as huggingface_hub does (its HTTP client drops Authorization on a
    cross-origin redirect)."""

    def __init__(self, token: str, *, hub: str = HUB, open_: Open | None = None) -> None:
        self._token, self._hub = token, hub.rstrip("/")
        self._host = urllib.parse.urlsplit(self._hub).netloc
        self._open = open_ or default_open()

    def _get(self, url: str, headers: Mapping[str, str]) -> tuple[bytes, Any]:
        for _ in range(MAX_REDIRECTS + 1):
            sent = dict(headers)
            if urllib.parse.urlsplit(url).netloc == self._host:
                sent["Authorization"] = f"Bearer {self._token}"
            try:
                with self._open(urllib.request.Request(url, headers=sent)) as answer:
                    return answer.read(), answer.headers
            except urllib.error.HTTPError as e:
                if e.code in (301, 302, 303, 307, 308) and e.headers.get("Location"):
                    url = urllib.parse.urljoin(url, e.headers["Location"])
                    continue
                what = {401: "the token is refused", 403: "the token has no access (accept the model's licence on "
                        "the hub with the token's account)", 404: "no such model, revision or file"}.get(e.code, "")
                raise HubError(f"GET {url.split('?')[0]}: HTTP {e.code} {what}".rstrip()) from None
        raise HubError(f"GET {url.split('?')[0]}: more than {MAX_REDIRECTS} redirects")

    def tree(self, model_id: str, revision: str) -> list[Any]:
        url: str | None = TREE.format(hub=self._hub, model_id=model_id, revision=revision)
        entries: list[Any] = []
        while url:
            body, headers = self._get(url, {"Accept": "application/json"})
            page = json.loads(body)
            if not isinstance(page, list):
                raise BadListing(f"the tree of {model_id}@{revision}: got {type(page).__name__}; allowed: a list")
            entries += page
            url = _next_link(headers.get("Link"))
        return entries

    def read(self, model_id: str, revision: str, path: str, start: int | None = None, end: int | None = None) -> bytes:
        url = RESOLVE.format(hub=self._hub, model_id=model_id, revision=revision,
                             path=urllib.parse.quote(path, safe="/"))
        headers = {} if start is None else {"Range": f"bytes={start}-{end}"}
        body, _ = self._get(url, headers)
        if start is not None and end is not None and len(body) != end - start + 1:
            raise HubError(f"GET {path} bytes {start}-{end}: got {len(body)} bytes")
        return body


def _next_link(link: str | None) -> str | None:
    """The ``rel="next"`` URL of a Link header (the format GitHub uses, as huggingface_hub's pagination reads it)."""
    for part in (link or "").split(","):
        url, _, params = part.partition(";")
        if 'rel="next"' in params.replace(" ", ""):
            return url.strip().strip("<>")
    return None


class Secrets:
    def __init__(self, client: Any) -> None:
        self._client = client

    def token(self, arn: str) -> str:
        """GetSecretValue's SecretString, stripped (the fleet file's instructions: SecretString is the token)."""
        value = self._client.get_secret_value(SecretId=arn).get("SecretString")
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"secret {arn}: its SecretString is empty; allowed: the Hugging Face token")
        return value.strip()


class Store:
    """The copy's objects in the fleet's model bucket."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._client, self._bucket = client, bucket

    def objects(self, prefix: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=self._bucket, Prefix=prefix):
            found |= {o["Key"]: o["Size"] for o in page.get("Contents", [])}
        return found

    def uploads(self, prefix: str) -> dict[str, Upload]:
        """The multipart uploads an earlier run left (the newest per key) with the parts S3 holds."""
        found: dict[str, tuple[str, Upload]] = {}
        for page in self._client.get_paginator("list_multipart_uploads").paginate(Bucket=self._bucket, Prefix=prefix):
            for u in page.get("Uploads", []):
                started = str(u.get("Initiated", ""))
                if u["Key"] not in found or started > found[u["Key"]][0]:
                    found[u["Key"]] = (started, Upload(u["UploadId"]))
        for k, (_, upload) in found.items():
            for page in self._client.get_paginator("list_parts").paginate(Bucket=self._bucket, Key=k,
                                                                          UploadId=upload.upload_id):
                upload.done |= {p["PartNumber"]: p["ETag"] for p in page.get("Parts", [])}
        return {k: u for k, (_, u) in found.items()}

    def put(self, key: str, body: bytes) -> None:
        self._client.put_object(Bucket=self._bucket, Key=key, Body=body)

    def start(self, key: str) -> Upload:
        return Upload(self._client.create_multipart_upload(Bucket=self._bucket, Key=key)["UploadId"])

    def put_part(self, key: str, upload: Upload, number: int, body: bytes) -> str:
        return str(self._client.upload_part(Bucket=self._bucket, Key=key, UploadId=upload.upload_id,
                                            PartNumber=number, Body=body)["ETag"])

    def complete(self, key: str, upload: Upload) -> None:
        self._client.complete_multipart_upload(
            Bucket=self._bucket, Key=key, UploadId=upload.upload_id,
            MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e} for n, e in sorted(upload.done.items())]})


class Relay:
    """Hands the copy over to a new run of this function (an asynchronous invoke of itself)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def again(self, function_name: str, event: Mapping[str, Any]) -> None:
        self._client.invoke(FunctionName=function_name, InvocationType="Event", Payload=json.dumps(event).encode())


def respond(url: str, body: Mapping[str, Any], *, open_: Open | None = None) -> None:
    """PUT the answer to CloudFormation's presigned URL, with an empty Content-Type as the URL was signed for (the
    user guide's cfn-response module sends ``content-type: ''``)."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="PUT",
                                     headers={"Content-Type": "", "Content-Length": str(len(data))})
    with (open_ or default_open())(request) as answer:
        answer.read()

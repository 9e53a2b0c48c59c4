"""Pure rules of the hub-model copy: what CloudFormation asks, which files of a Hugging Face Hub revision are copied,
where each lands in S3, the parts of a large file, what is left to do, and the answer CloudFormation gets.

No AWS or network call here (tests/unit/test_hub_staging.py); the calls live in ``adapters``."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neuronfleet_contract.hub_staging import MAX_RUNS as MAX_RUNS  # re-exported: the handler reads it here
from neuronfleet_contract.hub_staging import RESOURCE_TYPE as RESOURCE_TYPE

PART_SIZE = 64 * 1024 * 1024
"""Bytes per multipart part (and the largest file sent in one PutObject). S3: a part is 5 MiB to 5 GiB, the last one
smaller, at most 10,000 parts (S3 user guide, "Amazon S3 multipart upload limits", read 2026-11-28): 64 MiB parts
carry files up to 625 GiB."""
MIN_PART_SIZE = 5 * 1024 * 1024
MAX_PARTS = 10_000
STOP_MARGIN_MS = 180_000
"""A run starts no new part with less than this left (a 64 MiB part read and written at 1 MB/s takes about 2 min),
answers or hands over to the next run with the rest, and never runs into its 15-minute timeout."""
REASON_LIMIT = 1000
"""CloudFormation takes a response body of at most 4096 bytes (user guide, "Custom resource response objects", read
2026-11-28): the reason is cut to this many characters."""
RUN_KEY = "NeuronFleetRun"
"""Added to CloudFormation's request when a run hands the copy over to the next one: that run's number (2, 3, ...)."""

SKIPPED = ("original/",)
"""Folders not copied: Meta's own checkpoint format next to the Transformers one (meta-llama repositories' original/),
which no serving container loads."""
OTHER_WEIGHTS = (".bin", ".pth", ".pt", ".h5", ".msgpack", ".ckpt", ".gguf", ".onnx")
"""Weights in another format, not copied when the revision holds ``*.safetensors`` (what the servers load first)."""
NOT_A_MODEL_FILE = (".gitattributes",)

_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_REVISION = re.compile(r"^[0-9a-f]{40}$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_SECRET_ARN = re.compile(r"^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$")


class BadRequest(ValueError):
    """A request this copier cannot take: the message names the field, the value and what is allowed."""


class BadListing(ValueError):
    """The hub's file list is not of the shape huggingface_hub reads."""


@dataclass(frozen=True)
class Request:
    """CloudFormation's request to a custom resource (user guide, "Custom resource request objects"; the Create
    example copied in tests/data/cloudformation/create_request.json) with this resource's properties."""

    kind: str
    request_id: str
    stack_id: str
    logical_id: str
    response_url: str
    physical_id: str | None
    model_id: str
    revision: str
    secret_arn: str
    bucket: str
    prefix: str
    run: int = 1

    @property
    def s3_uri(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def _text(source: Mapping[str, Any], name: str, where: str = "") -> str:
    value = source.get(name)
    if not isinstance(value, str) or not value:
        raise BadRequest(f"{where}{name}: got {value!r}; allowed: a non-empty string")
    return value


def parse_request(event: Mapping[str, Any]) -> Request:
    """The request, checked: each property named with its value when it is not what the construct sends."""
    kind = _text(event, "RequestType")
    if kind not in ("Create", "Update", "Delete"):
        raise BadRequest(f"RequestType: got {kind!r}; allowed: Create, Update or Delete")
    props = event.get("ResourceProperties")
    if not isinstance(props, Mapping):
        raise BadRequest(f"ResourceProperties: got {props!r}; allowed: an object")
    where = "ResourceProperties."
    model_id, revision = _text(props, "ModelId", where), _text(props, "Revision", where)
    bucket, prefix, secret = _text(props, "Bucket", where), _text(props, "Prefix", where), _text(props, "SecretArn", where)
    if not _MODEL_ID.match(model_id):
        raise BadRequest(f"{where}ModelId: got {model_id!r}; allowed: a Hugging Face Hub id (owner/name)")
    if not _REVISION.match(revision):
        raise BadRequest(f"{where}Revision: got {revision!r}; allowed: a commit (40 hex digits)")
    if not _BUCKET.match(bucket):
        raise BadRequest(f"{where}Bucket: got {bucket!r}; allowed: an S3 bucket name")
    if not prefix.endswith("/") or prefix.startswith("/"):
        raise BadRequest(f"{where}Prefix: got {prefix!r}; allowed: a key prefix ending in '/' (not starting with one)")
    if not _SECRET_ARN.match(secret):
        raise BadRequest(f"{where}SecretArn: got {secret!r}; allowed: a Secrets Manager secret ARN")
    run = event.get(RUN_KEY, 1)
    if not isinstance(run, int) or isinstance(run, bool) or run < 1:
        raise BadRequest(f"{RUN_KEY}: got {run!r}; allowed: a run number from 1")
    physical = event.get("PhysicalResourceId")
    return Request(kind=kind, request_id=_text(event, "RequestId"), stack_id=_text(event, "StackId"),
                   logical_id=_text(event, "LogicalResourceId"), response_url=_text(event, "ResponseURL"),
                   physical_id=physical if isinstance(physical, str) and physical else None,
                   model_id=model_id, revision=revision, secret_arn=secret, bucket=bucket, prefix=prefix, run=run)


@dataclass(frozen=True)
class HubFile:
    path: str
    size: int


def tree_files(entries: Sequence[Any]) -> list[HubFile]:
    """The files of a hub tree listing (``GET /api/models/{id}/tree/{revision}?recursive=true``): entries of ``type``
    ``file`` with ``path`` and ``size`` (an LFS file's real size is ``lfs.size``), as huggingface_hub's
    ``list_repo_tree`` and ``RepoFile`` read them (src/huggingface_hub/hf_api.py at ee0a4510, read 2026-11-28);
    directories are skipped."""
    files = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping) or "type" not in entry:
            raise BadListing(f"entry {i}: got {entry!r}; allowed: an object with a type")
        if entry["type"] != "file":
            continue
        path, size, lfs = entry.get("path"), entry.get("size"), entry.get("lfs")
        if isinstance(lfs, Mapping) and isinstance(lfs.get("size"), int):
            size = lfs["size"]
        if not isinstance(path, str) or not path or path.startswith("/") or ".." in path.split("/"):
            raise BadListing(f"entry {i}: path {path!r}; allowed: a relative path inside the repository")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise BadListing(f"entry {i} ({path}): size {size!r}; allowed: a byte count")
        files.append(HubFile(path, size))
    return files


def selected(files: Sequence[HubFile]) -> list[HubFile]:
    """The files a server loads: all but the skipped folders, git's own files, and other weight formats when
    safetensors are there; in path order."""
    safetensors = any(f.path.endswith(".safetensors") for f in files)
    keep = [f for f in files if not f.path.startswith(SKIPPED) and f.path.split("/")[-1] not in NOT_A_MODEL_FILE
            and not (safetensors and f.path.endswith(OTHER_WEIGHTS))]
    return sorted(keep, key=lambda f: f.path)


def key(prefix: str, path: str) -> str:
    return prefix + path


@dataclass(frozen=True)
class Part:
    number: int
    start: int
    end: int
    """Inclusive, as in an HTTP Range header."""


def parts(size: int, part_size: int = PART_SIZE) -> list[Part]:
    """The parts of a file uploaded in several (1-based, as S3 numbers them)."""
    if part_size < MIN_PART_SIZE:
        raise ValueError(f"part_size: got {part_size}; allowed: at least {MIN_PART_SIZE} (S3's smallest part)")
    count = -(-size // part_size)
    if count > MAX_PARTS:
        raise ValueError(f"size: got {size}; allowed: at most {MAX_PARTS} parts of {part_size} bytes")
    return [Part(n + 1, n * part_size, min(size, (n + 1) * part_size) - 1) for n in range(count)]


@dataclass
class Upload:
    """A multipart upload in progress: its id and the parts S3 holds (number -> ETag)."""

    upload_id: str
    done: dict[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Work:
    """One file still to copy: in one PutObject (small), or the parts its upload still lacks."""

    file: HubFile
    key: str
    upload: Upload | None
    missing: tuple[Part, ...]

    @property
    def single(self) -> bool:
        return self.file.size <= PART_SIZE


def plan(files: Sequence[HubFile], prefix: str, present: Mapping[str, int],
         uploads: Mapping[str, Upload], part_size: int = PART_SIZE) -> list[Work]:
    """What is left: every file not yet in S3 at its size, with the parts an earlier run's upload lacks."""
    work = []
    for f in files:
        k = key(prefix, f.path)
        if present.get(k) == f.size:
            continue
        if f.size <= part_size:
            work.append(Work(f, k, None, ()))
            continue
        upload = uploads.get(k)
        done = set(upload.done) if upload else set()
        work.append(Work(f, k, upload, tuple(p for p in parts(f.size, part_size) if p.number not in done)))
    return work


def out_of_time(remaining_ms: int, margin_ms: int = STOP_MARGIN_MS) -> bool:
    return remaining_ms < margin_ms


def scrub(text: str, secret: str | None) -> str:
    """``text`` without the secret, should an error ever quote it."""
    return text.replace(secret, "***") if secret else text


def response(req: Request, status: str, *, reason: str = "", data: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The body PUT to the request's ResponseURL (user guide, "Custom resource response objects", read 2026-11-28).
    PhysicalResourceId: the copy's S3 URI (a new model or revision is a new copy, and CloudFormation then deletes the
    old resource); a Create that failed before it knew one answers with its request id."""
    if status not in ("SUCCESS", "FAILED"):
        raise ValueError(f"status: got {status!r}; allowed: SUCCESS or FAILED")
    physical = req.physical_id if req.kind == "Delete" and req.physical_id else \
        (req.s3_uri if status == "SUCCESS" else (req.physical_id or req.request_id))
    body: dict[str, Any] = {"Status": status, "RequestId": req.request_id, "LogicalResourceId": req.logical_id,
                            "StackId": req.stack_id, "PhysicalResourceId": physical}
    if status == "FAILED":
        body["Reason"] = (reason or "failed")[:REASON_LIMIT]
    if data:
        body["Data"] = dict(data)
    return body


def progress(files: Sequence[HubFile], work: Sequence[Work]) -> tuple[int, int]:
    """(bytes copied, bytes in all) for a message."""
    total = sum(f.size for f in files)
    left = sum(w.file.size if w.upload is None else sum(p.end - p.start + 1 for p in w.missing) for w in work)
    return total - left, total

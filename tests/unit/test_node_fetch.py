"""node/fetch.py, the user data's downloader of the node scripts: run as the host runs it (``python3 fetch.py``
from a directory holding neuronfleet.node.BOOTSTRAP, under this interpreter and, when one is installed, Python 3.9,
the AL2023 host's) against a local server on 127.0.0.1 that plays IMDSv2 and S3. The S3 stand-in checks every
request's SigV4 signature by signing it again with botocore's own S3SigV4Auth (same credentials, same X-Amz-Date)
and answers 403 SignatureDoesNotMatch, as S3 would, when they differ. No network beyond 127.0.0.1."""

from __future__ import annotations

import datetime
import glob
import hashlib
import io
import json
import os
import socket
import stat
import subprocess
import sys
import threading
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

import botocore.auth
import pytest
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials

from neuronfleet.node import BOOTSTRAP, SCRIPTS, bootstrap_text, fetch, script_text, sigv4

pytestmark = pytest.mark.enable_socket

REGION = "us-east-2"
BUCKET = "cdk-hnb659fds-assets-111111111111-us-east-2"
KEY = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0.zip"  # a CDK asset key: <sha256>.zip
ROLE = "neuronfleet-train-InstanceRole"
CREDS = {"AccessKeyId": "ASIAFETCHEXAMPLE", "SecretAccessKey": "fetch/secret+EXAMPLEKEY", "Token": "fetch-session-token"}
TOKEN = "imds-session-token"
TRUNCATED = -1

PY39 = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.9.*/bin/python3")))
INTERPRETERS = [pytest.param(sys.executable, id="venv"),
                pytest.param(PY39[-1] if PY39 else None, id="python3.9",
                             marks=pytest.mark.skipif(not PY39, reason="no Python 3.9 installed"))]

# Amazon S3 User Guide, "The REST error response" (https://docs.aws.amazon.com/AmazonS3/latest/userguide/
# UsingRESTError.html, read 2026-11-26): AWS's own example, verbatim
S3_ERROR_EXAMPLE = (b'<?xml version="1.0" encoding="UTF-8"?> <Error> <Code>NoSuchKey</Code> <Message>The resource you '
                    b'requested does not exist</Message> <Resource>/mybucket/myfoto.jpg</Resource> <RequestId>'
                    b'4442587FB7D0A2F9</RequestId> </Error>')


def s3_error(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
            f"<RequestId>4442587FB7D0A2F9</RequestId><HostId>host-id</HostId></Error>").encode()


def zipped(files: dict[str, bytes] | list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        warnings.simplefilter("ignore")  # "Duplicate name": wanted by one test
        for name, data in (files.items() if isinstance(files, dict) else files):
            zf.writestr(name, data)
    return buf.getvalue()


SCRIPT_FILES = {name: script_text(name).encode() for name in SCRIPTS}


# --------------------------------------------------------------------------------------- the stand-in


@dataclass
class Aws:
    """What the stand-in answers and what it saw."""

    archive: bytes = b""
    answers: list[tuple[int, bytes]] = field(default_factory=list)
    """S3 answers in order before the archive (status, body)."""
    signer_secret: str = CREDS["SecretAccessKey"]
    """The secret the S3 stand-in verifies with (another one: every signature is wrong)."""
    s3_requests: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    bad_signatures: list[str] = field(default_factory=list)
    imds_calls: list[str] = field(default_factory=list)
    url: str = ""


_BOTOCORE_CLOCK = threading.Lock()


def botocore_authorization(method: str, host: str, path: str, amz_date: str, secret: str) -> AWSRequest:
    """The request as botocore's S3 signer signs it, at the request's own X-Amz-Date."""
    request = AWSRequest(method=method, url=f"http://{host}{path}")
    when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    with _BOTOCORE_CLOCK, mock.patch.object(botocore.auth, "get_current_datetime", return_value=when):
        S3SigV4Auth(BotoCredentials(CREDS["AccessKeyId"], secret, CREDS["Token"]), "s3", REGION).add_auth(request)
    return request


def handler(aws: Aws) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, status: int, body: bytes, content_type: str = "text/plain") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_PUT(self) -> None:  # IMDSv2 session token
            aws.imds_calls.append(f"PUT {self.path}")
            if self.path == "/latest/api/token" and self.headers["X-aws-ec2-metadata-token-ttl-seconds"]:
                return self._answer(200, TOKEN.encode())
            self._answer(400, b"")

        def do_GET(self) -> None:
            if self.path.startswith("/latest/"):
                return self._imds()
            self._s3()

        def _imds(self) -> None:
            aws.imds_calls.append(f"GET {self.path}")
            if self.headers["X-aws-ec2-metadata-token"] != TOKEN:
                return self._answer(401, b"")
            base = "/latest/meta-data/iam/security-credentials/"
            if self.path == base:
                return self._answer(200, ROLE.encode())
            if self.path == base + ROLE:
                expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=6)
                # the fields of EC2's "Retrieve security credentials from instance metadata"
                return self._answer(200, json.dumps({
                    "Code": "Success", "LastUpdated": "2026-11-26T00:00:00Z", "Type": "AWS-HMAC", **CREDS,
                    "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}, indent=2).encode())
            self._answer(404, b"")

        def _s3(self) -> None:
            seen = {k.lower(): v for k, v in self.headers.items()}
            aws.s3_requests.append(seen)
            aws.paths.append(self.path)
            expected = botocore_authorization("GET", self.headers["Host"], self.path, seen.get("x-amz-date", ""),
                                              aws.signer_secret)
            checks = {"authorization": expected.headers["Authorization"],
                      "x-amz-content-sha256": expected.headers["X-Amz-Content-SHA256"],
                      "x-amz-security-token": CREDS["Token"]}
            wrong = [k for k, v in checks.items() if seen.get(k) != v]
            if wrong:
                aws.bad_signatures.append(", ".join(wrong))
                return self._answer(403, s3_error("SignatureDoesNotMatch", "The request signature we calculated "
                                                  "does not match the signature you provided."), "application/xml")
            if aws.answers:
                status, body = aws.answers.pop(0)
                if status == TRUNCATED:  # says 200 and more bytes than it sends, then hangs up
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(aws.archive)))
                    self.end_headers()
                    self.wfile.write(aws.archive[:100])
                    self.close_connection = True
                    return None
                return self._answer(status, body, "application/xml")
            self._answer(200, aws.archive, "application/zip")

    return Handler


@pytest.fixture
def aws() -> Iterator[Aws]:
    state = Aws(archive=zipped(SCRIPT_FILES))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(params=["stripped", "full"])
def host(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """/opt/neuronfleet as the user data leaves it: the bootstrap files only, as bootstrap_text writes them (no
    docstrings) or whole."""
    opt = tmp_path / "opt"
    opt.mkdir()
    for name in BOOTSTRAP:
        (opt / name).write_text(bootstrap_text(name) if request.param == "stripped" else script_text(name))
    return opt


def run(python: str, host: Path, dest: Path, aws: Aws, *, key: str = KEY, imds: str | None = None,
        expect: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower() and not k.startswith("AWS_")}
    env.update(NEURONFLEET_IMDS_URL=imds or aws.url, NEURONFLEET_FETCH_BACKOFF_S="0.01")
    return subprocess.run(
        [python, str(host / "fetch.py"), "--bucket", BUCKET, "--key", key, "--region", REGION,
         "--url-suffix", "amazonaws.com", "--dest", str(dest), "--endpoint-url", aws.url,
         *(arg for name in expect for arg in ("--expect", name))],
        capture_output=True, text=True, env=env, cwd="/", timeout=120)


def no_secrets(*texts: str) -> None:
    for text in texts:
        assert CREDS["SecretAccessKey"] not in text and CREDS["Token"] not in text and TOKEN not in text


# ----------------------------------------------------------------------------------------- the host runs


@pytest.mark.parametrize("python", INTERPRETERS)
def test_fetches_signed_and_unpacks_the_scripts(python: str, host: Path, aws: Aws) -> None:
    dest = host  # as the user data does: into the directory the bootstrap files are in
    aws.archive = zipped({**SCRIPT_FILES, "README": b"not a script\n"})
    out = run(python, host, dest, aws)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert aws.bad_signatures == [] and len(aws.s3_requests) == 1
    assert aws.paths == [f"/{BUCKET}/{KEY}"]
    signed = aws.s3_requests[0]
    assert signed["x-amz-content-sha256"] == hashlib.sha256(b"").hexdigest()
    assert "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token," in signed["authorization"]
    assert f"/{REGION}/s3/aws4_request" in signed["authorization"]
    assert aws.imds_calls[0] == "PUT /latest/api/token"
    for name, data in SCRIPT_FILES.items():
        assert (dest / name).read_bytes() == data
        assert stat.S_IMODE((dest / name).stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "README").stat().st_mode) == 0o644
    # no temp files (Python's own bytecode cache aside: fetch.py imports sigv4.py beside it, as on the instance)
    assert sorted(p.name for p in dest.iterdir() if p.name != "__pycache__") == sorted({*SCRIPT_FILES, *BOOTSTRAP, "README"})
    no_secrets(out.stdout, out.stderr)
    # what it unpacked runs from there: utilisation.py finds sigv4.py beside it
    check = subprocess.run([python, str(dest / "utilisation.py"), "--help"], capture_output=True, text=True, cwd="/")
    assert check.returncode == 0, check.stderr


@pytest.mark.parametrize("python", INTERPRETERS)
def test_access_denied_fails_at_once_with_one_line_naming_status_and_code(python: str, host: Path, aws: Aws,
                                                                          tmp_path: Path) -> None:
    aws.answers = [(403, s3_error("AccessDenied", "Access Denied"))]
    dest = tmp_path / "dest"
    out = run(python, host, dest, aws)
    assert out.returncode == 1
    (line,) = out.stderr.splitlines()
    assert line == (f"neuronfleet fetch: GET {aws.url}/{BUCKET}/{KEY}: HTTP 403 AccessDenied (Access Denied) "
                    "RequestId 4442587FB7D0A2F9")
    assert len(aws.s3_requests) == 1  # not retried
    assert not dest.exists() or not any(dest.iterdir())
    no_secrets(out.stdout, out.stderr)


def test_a_wrong_signature_is_caught_by_the_stand_in(host: Path, aws: Aws, tmp_path: Path) -> None:
    """The stand-in's check can fail: verified with another secret, the same request is rejected as S3 would."""
    aws.signer_secret = "another-secret"
    out = run(sys.executable, host, tmp_path / "dest", aws)
    assert out.returncode == 1
    assert aws.bad_signatures == ["authorization"]
    assert "HTTP 403 SignatureDoesNotMatch" in out.stderr


def test_slow_down_is_retried_then_succeeds(host: Path, aws: Aws, tmp_path: Path) -> None:
    aws.answers = [(503, s3_error("SlowDown", "Please reduce your request rate.")),
                   (500, s3_error("InternalError", "We encountered an internal error. Please try again."))]
    dest = tmp_path / "dest"
    out = run(sys.executable, host, dest, aws)
    assert out.returncode == 0, out.stderr
    assert len(aws.s3_requests) == 3 and aws.bad_signatures == []
    assert out.stdout.count("retrying in") == 2 and "HTTP 503 SlowDown" in out.stdout
    assert (dest / "launch.py").read_bytes() == SCRIPT_FILES["launch.py"]


def test_a_body_cut_short_is_retried(host: Path, aws: Aws, tmp_path: Path) -> None:
    aws.answers = [(TRUNCATED, b"")]
    dest = tmp_path / "dest"
    out = run(sys.executable, host, dest, aws)
    assert out.returncode == 0, out.stderr
    assert len(aws.s3_requests) == 2 and "IncompleteRead" in out.stdout
    assert (dest / "sigv4.py").read_bytes() == SCRIPT_FILES["sigv4.py"]


def test_throttling_that_never_ends_gives_up_after_the_attempts(host: Path, aws: Aws, tmp_path: Path) -> None:
    aws.answers = [(503, s3_error("SlowDown", "Please reduce your request rate."))] * fetch.ATTEMPTS
    out = run(sys.executable, host, tmp_path / "dest", aws)
    assert out.returncode == 1
    (line,) = out.stderr.splitlines()
    assert line.endswith(f"HTTP 503 SlowDown (Please reduce your request rate.) RequestId 4442587FB7D0A2F9 "
                         f"(after {fetch.ATTEMPTS} attempts)")
    assert len(aws.s3_requests) == fetch.ATTEMPTS


@pytest.mark.parametrize("python", INTERPRETERS)
@pytest.mark.parametrize("evil", ["../evil", "/abs", "sub/launch.py", "..", "__pycache__/x.pyc", "a\\b"])
def test_a_member_with_a_path_refuses_the_archive_and_nothing_is_written(python: str, evil: str, host: Path,
                                                                         aws: Aws, tmp_path: Path) -> None:
    aws.archive = zipped({"launch.py": b"print('first')\n", evil: b"pwned\n"})
    dest = tmp_path / "a" / "dest"
    out = run(python, host, dest, aws)
    assert out.returncode == 1
    (line,) = out.stderr.splitlines()
    assert f"member {evil!r}" in line and line.endswith("nothing written")
    assert not dest.exists()
    assert not (tmp_path / "a" / "evil").exists() and not Path("/abs").exists()


@pytest.mark.parametrize("archive, reason", [
    (b"this is not a zip", "not a zip archive"),
    (zipped({}), "the archive is empty"),
    (zipped([("launch.py", b"1"), ("launch.py", b"2")]), "appears twice"),
])
def test_malformed_archives_are_refused(archive: bytes, reason: str, host: Path, aws: Aws, tmp_path: Path) -> None:
    aws.archive = archive
    out = run(sys.executable, host, tmp_path / "dest", aws)
    assert out.returncode == 1
    (line,) = out.stderr.splitlines()
    assert reason in line and not (tmp_path / "dest").exists()


def test_imds_unreachable_fails_with_one_line_after_the_retries(host: Path, aws: Aws, tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    out = run(sys.executable, host, tmp_path / "dest", aws, imds=closed)
    assert out.returncode == 1
    (line,) = out.stderr.splitlines()
    assert line.startswith(f"neuronfleet fetch: instance role credentials from IMDS ({closed}): ")
    assert "Connection refused" in line and line.endswith(f"(after {fetch.ATTEMPTS} attempts)")
    assert out.stdout.count("retrying in") == fetch.ATTEMPTS - 1
    assert aws.s3_requests == []


def test_a_key_is_encoded_once_as_s3_signs_it(host: Path, aws: Aws, tmp_path: Path) -> None:
    out = run(sys.executable, host, tmp_path / "dest", aws, key="assets/a b+c=.zip")
    assert out.returncode == 0, out.stderr
    assert aws.paths == [f"/{BUCKET}/assets/a%20b%2Bc%3D.zip"] and aws.bad_signatures == []


@pytest.mark.parametrize("args, field_name", [
    (["--bucket", "My_Bucket"], "--bucket 'My_Bucket'"),
    (["--key", ""], "--key ''"),
    (["--region", "Ohio"], "--region 'Ohio'"),
    (["--url-suffix", "https://amazonaws.com"], "--url-suffix 'https://amazonaws.com'"),
])
def test_bad_arguments_name_the_field_and_value(args: list[str], field_name: str, capsys) -> None:
    base = {"--bucket": BUCKET, "--key": KEY, "--region": REGION, "--url-suffix": "amazonaws.com", "--dest": "/x"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    with pytest.raises(SystemExit) as exc:
        fetch.main([x for kv in base.items() for x in kv], http=lambda *a: pytest.fail("no request"))
    assert exc.value.code == 2
    assert field_name in capsys.readouterr().err


@pytest.mark.parametrize("python", INTERPRETERS)
def test_every_node_file_imports_on_the_hosts_python(python: str, tmp_path: Path) -> None:
    """AL2023's python3 is 3.9: no ``X | Y`` evaluated at import (utilisation.py's ``bytes | None`` alias was)."""
    for name in {*SCRIPTS, *BOOTSTRAP}:
        (tmp_path / name).write_text(script_text(name))
    (tmp_path / "stripped").mkdir()
    for name in BOOTSTRAP:
        (tmp_path / "stripped" / name).write_text(bootstrap_text(name))
    for where, names in ((tmp_path, {*SCRIPTS, *BOOTSTRAP}), (tmp_path / "stripped", set(BOOTSTRAP))):
        modules = ", ".join(sorted(Path(n).stem for n in names))
        out = subprocess.run([python, "-c", f"import {modules}"], capture_output=True, text=True, cwd=where)
        assert out.returncode == 0, out.stderr


def test_the_stripped_bootstrap_is_the_same_code_without_its_words() -> None:
    import ast

    assert BOOTSTRAP
    for name in BOOTSTRAP:
        stripped, full = bootstrap_text(name), script_text(name)
        assert len(stripped) < len(full) * 0.7 and '"""' not in stripped and "\n#" not in stripped
        assert stripped.startswith("#!/usr/bin/env python3\n")
        # every function and class is still there
        names = {n.name for n in ast.walk(ast.parse(full)) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        assert names == {n.name for n in ast.walk(ast.parse(stripped)) if isinstance(n, ast.FunctionDef | ast.ClassDef)}


def test_an_unexpected_error_is_still_one_line(tmp_path: Path, capsys) -> None:
    def boom(*args: object) -> tuple[int, bytes]:
        raise RuntimeError("boom")

    rc = fetch.main(["--bucket", BUCKET, "--key", KEY, "--region", REGION, "--url-suffix", "amazonaws.com",
                     "--dest", str(tmp_path / "d")], http=boom, sleep=lambda s: None)
    assert rc == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f"neuronfleet fetch: https://{BUCKET}.s3.{REGION}.amazonaws.com/{KEY} -> {tmp_path / 'd'}: "
                    "unexpected RuntimeError: boom")


# ---------------------------------------------------------------------------------------------- pieces


def test_the_signer_reproduces_aws_s3_get_object_example() -> None:
    """Amazon S3 API Reference, "Signature Calculations for the Authorization Header: Transferring Payload in a Single
    Chunk", Example: GET Object (https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html, read
    2026-11-26; the same figures are in many independent signers' tests)."""
    creds = sigv4.Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    headers = {"Host": "examplebucket.s3.amazonaws.com", "Range": "bytes=0-9",
               "x-amz-content-sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
               "x-amz-date": "20130524T000000Z"}
    authz = sigv4.authorization("GET", "https://examplebucket.s3.amazonaws.com/test.txt", headers, b"", creds,
                                "us-east-1", "s3", "20130524T000000Z", s3=True)
    assert authz == ("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                     "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                     "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
    assert headers["x-amz-content-sha256"] == sigv4.EMPTY_SHA256


def test_s3_paths_are_signed_as_sent_other_services_encode_again() -> None:
    url = "https://b.s3.us-east-2.amazonaws.com/a%20b.zip"
    assert sigv4.canonical_request("GET", url, {}, b"", s3=True)[0].split("\n")[1] == "/a%20b.zip"
    assert sigv4.canonical_request("GET", url, {}, b"")[0].split("\n")[1] == "/a%2520b.zip"


def test_the_s3_error_parser_reads_aws_example() -> None:
    assert fetch.s3_error(S3_ERROR_EXAMPLE) == ("NoSuchKey", "The resource you requested does not exist",
                                                "4442587FB7D0A2F9")
    assert fetch.s3_error(b"<html>bad gateway</html>") == ("", "", "")
    assert fetch.s3_error(b"") == ("", "", "")


def test_object_urls() -> None:
    assert fetch.object_url(BUCKET, KEY, REGION, "amazonaws.com") == f"https://{BUCKET}.s3.us-east-2.amazonaws.com/{KEY}"
    assert (fetch.object_url("b", "k.zip", "cn-north-1", "amazonaws.com.cn")
            == "https://b.s3.cn-north-1.amazonaws.com.cn/k.zip")
    assert fetch.object_url("my.bucket", "k.zip", REGION, "amazonaws.com") == (
        "https://s3.us-east-2.amazonaws.com/my.bucket/k.zip")  # *.s3.R.S certificates do not cover a dotted name


def test_retry_waits_are_the_documented_figures() -> None:
    waits: list[float] = []

    def busy() -> bytes:
        raise sigv4.SendError("HTTP 503 SlowDown", retryable=True)

    with pytest.raises(fetch.FetchError, match=r"HTTP 503 SlowDown \(after 5 attempts\)"):
        fetch.with_retries(busy, waits.append, fetch.BACKOFF_S, lambda m: None)
    assert len(waits) == fetch.ATTEMPTS - 1 == 4
    for wait, base in zip(waits, [1, 2, 4, 8], strict=True):
        assert base <= wait <= base * 1.1


def test_an_unreadable_dest_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(fetch.FetchError, match=f"making {blocker}"):
        fetch.install({"launch.py": b"x"}, str(blocker))


def test_an_archive_without_an_expected_script_is_refused_and_nothing_written(host: Path, aws: Aws,
                                                                             tmp_path: Path) -> None:
    """The user data names every script the asset must hold (--expect, one per node.SCRIPTS): an archive without
    launch.py fails the fetch (the node never joins) instead of jobs failing later on a missing launcher."""
    aws.archive = zipped({k: v for k, v in SCRIPT_FILES.items() if k != "launch.py"})
    dest = tmp_path / "dest"
    out = run(sys.executable, host, dest, aws, expect=tuple(SCRIPT_FILES))
    assert out.returncode == 1
    (line,) = out.stderr.splitlines()
    assert "the archive lacks launch.py (it holds " in line and line.endswith("; nothing written")
    assert not dest.exists() or not any(dest.iterdir())
    aws.archive = zipped(SCRIPT_FILES)
    ok = run(sys.executable, host, dest, aws, expect=tuple(SCRIPT_FILES))
    assert ok.returncode == 0, ok.stderr
    assert sorted(p.name for p in dest.iterdir()) == sorted(SCRIPT_FILES)

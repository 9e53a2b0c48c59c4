"""The hub-model copy's pure rules (lambdas/hub_staging/logic.py) and its hub adapter, on the publishers' examples
(tests/data/hub_staging: CloudFormation's Create request and responses, huggingface_hub's tree entry)."""

from __future__ import annotations

import ast
import io
import json
import urllib.error
import urllib.request
from email.message import Message
from pathlib import Path
from typing import Any

import pytest

from neuronfleet.lambdas.hub_staging import logic
from neuronfleet.lambdas.hub_staging.adapters import Hub, HubError
from neuronfleet.lambdas.hub_staging.logic import BadListing, BadRequest, HubFile, Upload
from neuronfleet_contract.hub_staging import properties

DATA = Path(__file__).resolve().parents[1] / "data" / "hub_staging"
SHA = "0e9e39f249a16976918f6564b8830bc894c89659"
ARN = "arn:aws:secretsmanager:us-east-2:222222222222:secret:nf-pilot/hf-token-Ab12Cd"
MiB = 1024 * 1024


def example(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text())


def request(**changes: Any) -> dict[str, Any]:
    """CloudFormation's own Create example with this resource's properties (what the construct sends)."""
    event = example("create_request.json")
    event["ResourceProperties"] = properties(model_id="meta-llama/Llama-3.1-8B-Instruct", revision=SHA,
                                             secret_arn=ARN, bucket="nf-models", prefix=f"hub/m/{SHA}/")
    return {**event, **changes}


def test_the_publishers_create_request_parses_with_this_resources_properties() -> None:
    req = logic.parse_request(request())
    assert (req.kind, req.request_id, req.logical_id, req.response_url) == (
        "Create", "unique id for this create request", "name of resource in template",
        "pre-signed-url-for-create-response")
    assert (req.model_id, req.revision, req.secret_arn, req.s3_uri, req.run) == (
        "meta-llama/Llama-3.1-8B-Instruct", SHA, ARN, f"s3://nf-models/hub/m/{SHA}/", 1)


@pytest.mark.parametrize(("change", "message"), [
    ({"ResourceProperties": example("create_request.json")["ResourceProperties"]},
     "ResourceProperties.ModelId: got None; allowed: a non-empty string"),
    ({"RequestType": "Replace"}, "RequestType: got 'Replace'; allowed: Create, Update or Delete"),
    ({"NeuronFleetRun": 0}, "NeuronFleetRun: got 0; allowed: a run number from 1"),
])
def test_a_request_it_cannot_take_is_refused_naming_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(BadRequest, match=message.replace("(", r"\(").replace(")", r"\)")):
        logic.parse_request(request(**change))


@pytest.mark.parametrize(("prop", "value", "allowed"), [
    ("ModelId", "llama", "a Hugging Face Hub id"), ("Revision", "main", "a commit"),
    ("Prefix", "hub/m", "a key prefix ending in '/'"), ("SecretArn", "nf/hf-token", "a Secrets Manager secret ARN"),
    ("Bucket", "NF_Models", "an S3 bucket name")])
def test_each_property_is_checked(prop: str, value: str, allowed: str) -> None:
    event = request()
    event["ResourceProperties"][prop] = value
    with pytest.raises(BadRequest, match=f"ResourceProperties.{prop}: got '{value}'; allowed: {allowed}"):
        logic.parse_request(event)


def test_the_answers_have_the_fields_of_the_publishers_examples() -> None:
    req = logic.parse_request(request())
    ok = logic.response(req, "SUCCESS", data={"S3Uri": req.s3_uri})
    failed = logic.response(req, "FAILED", reason="x" * 5000)
    assert set(ok) == set(example("success_response.json"))
    assert set(failed) == set(example("failed_response.json"))
    assert ok["PhysicalResourceId"] == req.s3_uri and ok["RequestId"] == req.request_id
    assert failed["PhysicalResourceId"] == req.request_id  # a Create that failed knows no copy
    assert len(failed["Reason"]) == logic.REASON_LIMIT and len(json.dumps(failed)) <= 4096
    delete = logic.parse_request(request(RequestType="Delete", PhysicalResourceId="s3://nf-models/old/"))
    assert logic.response(delete, "SUCCESS")["PhysicalResourceId"] == "s3://nf-models/old/"


def fixture_entry() -> dict[str, Any]:
    """huggingface_hub's own tree entry (RepoFile's keyword arguments) with the type the listing dispatches on."""
    call = ast.parse((DATA / "repo_file_fixture.py.txt").read_text().strip()).body[0]
    assert isinstance(call, ast.Assign) and isinstance(call.value, ast.Call)
    entry = {str(k.arg): ast.literal_eval(k.value) for k in call.value.keywords if k.arg != "xetHash"}
    return {"type": "file", **entry}


def test_the_tree_listing_is_read_as_huggingface_hub_reads_it() -> None:
    entry = fixture_entry()
    assert logic.tree_files([entry, {"type": "directory", "path": "original", "oid": "x"}]) == [
        HubFile("model.safetensors", 42)]
    # an LFS file's real size is lfs.size, whatever the entry's own size says (a pointer's on some listings)
    assert logic.tree_files([{**entry, "size": 128}]) == [HubFile("model.safetensors", 42)]


@pytest.mark.parametrize(("entry", "message"), [
    ({"path": "a"}, "entry 0: got {'path': 'a'}; allowed: an object with a type"),
    ({"type": "file", "path": "../etc/passwd", "size": 1}, "entry 0: path '../etc/passwd'; allowed: a relative path"),
    ({"type": "file", "path": "a", "size": "1"}, "entry 0 (a): size '1'; allowed: a byte count"),
])
def test_a_listing_of_another_shape_is_refused(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(BadListing, match=message.replace("(", r"\(").replace(")", r"\)")):
        logic.tree_files([entry])


def test_the_copy_holds_what_a_server_loads() -> None:
    files = [HubFile(p, 1) for p in ("original/consolidated.00.pth", ".gitattributes", "config.json",
                                      "model-00001-of-00002.safetensors", "pytorch_model.bin", "tokenizer.json")]
    assert [f.path for f in logic.selected(files)] == ["config.json", "model-00001-of-00002.safetensors",
                                                        "tokenizer.json"]
    only_bin = [HubFile("pytorch_model.bin", 1), HubFile("config.json", 1)]
    assert [f.path for f in logic.selected(only_bin)] == ["config.json", "pytorch_model.bin"]


def test_parts_cover_the_file_within_s3s_limits() -> None:
    ps = logic.parts(150 * MiB)
    assert [(p.number, p.start, p.end) for p in ps] == [(1, 0, 64 * MiB - 1), (2, 64 * MiB, 128 * MiB - 1),
                                                        (3, 128 * MiB, 150 * MiB - 1)]
    with pytest.raises(ValueError, match="part_size: got 1048576; allowed: at least 5242880"):
        logic.parts(10, MiB)
    with pytest.raises(ValueError, match="allowed: at most 10000 parts"):
        logic.parts(10_001 * logic.MIN_PART_SIZE, logic.MIN_PART_SIZE)


def test_the_plan_resumes_what_an_earlier_run_left() -> None:
    big, small, done = HubFile("model.safetensors", 150 * MiB), HubFile("config.json", 10), HubFile("tok.json", 5)
    present = {"p/tok.json": 5, "p/config.json": 3}  # config.json at another size: copied again
    work = logic.plan([big, small, done], "p/", present, {"p/model.safetensors": Upload("u1", {1: "e1"})})
    assert [(w.key, w.single, [p.number for p in w.missing]) for w in work] == [
        ("p/model.safetensors", False, [2, 3]), ("p/config.json", True, [])]
    assert work[0].upload == Upload("u1", {1: "e1"})
    assert logic.progress([big, small, done], work) == (64 * MiB + 5, 150 * MiB + 15)


def test_time_and_secrets() -> None:
    assert logic.out_of_time(logic.STOP_MARGIN_MS - 1) and not logic.out_of_time(logic.STOP_MARGIN_MS)
    assert logic.scrub("bad token hf_abc in hf_abc", "hf_abc") == "bad token *** in ***"


# ------------------------------------------------------------------------------------------ the hub adapter


class FakeWeb:
    """Answers by URL; records each request's URL and headers. A redirect is an HTTPError with a Location, as
    urllib raises it when the opener follows none."""

    def __init__(self, routes: dict[str, tuple[int, bytes, dict[str, str]]]) -> None:
        self.routes = routes
        self.seen: list[tuple[str, dict[str, str]]] = []

    def __call__(self, req: urllib.request.Request) -> Any:
        self.seen.append((req.full_url, dict(req.header_items())))
        status, body, headers = self.routes[req.full_url]
        message = Message()
        for k, v in headers.items():
            message[k] = v
        if status >= 300:
            raise urllib.error.HTTPError(req.full_url, status, "x", message, io.BytesIO(body))
        answer = io.BytesIO(body)
        answer.headers = message  # type: ignore[attr-defined]
        return answer


HUB = "https://huggingface.co"
FILE = f"{HUB}/meta-llama/Llama-3.1-8B-Instruct/resolve/{SHA}/model-00001-of-00004.safetensors"
CDN = "https://cas-bridge.xethub.hf.co/xet-bridge-us/abc?X-Amz-Signature=s"


def test_the_token_goes_to_the_hub_only_never_to_the_storage_it_redirects_to() -> None:
    web = FakeWeb({FILE: (302, b"", {"Location": CDN}), CDN: (206, b"abcd", {})})
    assert Hub("hf_secret", open_=web).read("meta-llama/Llama-3.1-8B-Instruct", SHA, "model-00001-of-00004.safetensors",
                                            0, 3) == b"abcd"
    (hub_url, hub_headers), (cdn_url, cdn_headers) = web.seen
    assert (hub_url, hub_headers["Authorization"], hub_headers["Range"]) == (FILE, "Bearer hf_secret", "bytes=0-3")
    assert cdn_url == CDN and "Authorization" not in cdn_headers and cdn_headers["Range"] == "bytes=0-3"


def test_the_tree_follows_the_link_header_and_errors_say_what_to_do() -> None:
    first = f"{HUB}/api/models/o/m/tree/{SHA}?recursive=true"
    second = f"{HUB}/api/models/o/m/tree/{SHA}?recursive=true&cursor=2"
    entry = fixture_entry()
    web = FakeWeb({first: (200, json.dumps([entry]).encode(), {"Link": f'<{second}>; rel="next"'}),
                   second: (200, json.dumps([{**entry, "path": "b.safetensors"}]).encode(), {})})
    assert [e["path"] for e in Hub("t", open_=web).tree("o/m", SHA)] == ["model.safetensors", "b.safetensors"]
    refused = FakeWeb({first: (403, b"", {})})
    with pytest.raises(HubError, match="HTTP 403 the token has no access \\(accept the model's licence"):
        Hub("t", open_=refused).tree("o/m", SHA)
    short = FakeWeb({FILE: (206, b"ab", {})})
    with pytest.raises(HubError, match="bytes 0-3: got 2 bytes"):
        Hub("t", open_=short).read("meta-llama/Llama-3.1-8B-Instruct", SHA, "model-00001-of-00004.safetensors", 0, 3)

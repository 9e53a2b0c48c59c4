"""The kit's NeuronCore utilisation publisher (node/utilisation.py): neuron-monitor's documented report and
variations derived from it (tests/neuron_monitor_doc.py, tests/data/neuron_monitor/README.md), the SigV4 signer
against the AWS Signature Version 4 test suite and botocore's own signer, and sending: throttling, failures,
expired credentials."""

from __future__ import annotations

import datetime
import itertools
import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials
from botocore.loaders import Loader
from botocore.model import ServiceModel
from botocore.serialize import create_serializer

from neuronfleet.node import SCRIPTS, script_text, sigv4
from neuronfleet.node import utilisation as u
from tests import neuron_monitor_doc as doc

SIGV4 = Path(__file__).parents[1] / "data" / "sigv4"
INSTANCE = "i-0011223344556677a"  # the guide's instance_info.instance_id


def publish(lines: list[str], cores: int = 64, period: float = 60.0) -> tuple[list[dict], list[str]]:
    sent: list[dict] = []
    errors: list[str] = []
    clock = itertools.count(0, 30).__next__  # each report 30 s after the last
    run = u.run(lines, cores=cores, period=period, send=sent.extend, clock=lambda: float(clock()),
                on_error=errors.append)
    assert run.sent == len(sent) and not run.pending
    return sent, errors


# ------------------------------------------------------------------------------------------ reports


def test_the_documented_report_yields_a_sample_for_its_instance() -> None:
    report = doc.documented_report()
    s = u.sample(report, cores=1)  # the report's own hardware info says 16 devices x 4 cores
    assert s is not None and s.instance_id == INSTANCE
    assert u.host_cores(report, 1) == 64
    assert s.percent == pytest.approx((42.01 + 42.02) / 64)  # the two documented in-use cores, the rest idle
    assert s.errors == ()


def test_the_documented_report_published_under_the_kits_name_unit_and_dimension() -> None:
    sent, errors = publish(doc.lines(doc.documented_report(), doc.documented_report()))
    assert errors == []
    assert [d["Value"] for d in sent] == [round((42.01 + 42.02) / 64, 3)]
    assert {(d["MetricName"], d["Unit"]) for d in sent} == {(u.METRIC, u.UNIT)} == {("NeuronCoreUtilization", "Percent")}
    assert sent[0]["Dimensions"] == [{"Name": "InstanceId", "Value": INSTANCE}]


def test_a_busy_host_publishes_its_utilisation() -> None:
    sent, _ = publish(doc.lines(*[doc.busy(90.0)] * 3))
    assert [d["Value"] for d in sent] == [90.0, 90.0]  # one datapoint per 60 s, then the rest at the end


def test_a_host_with_no_neuron_runtime_publishes_zero_not_nothing() -> None:
    sent, _ = publish(doc.lines(doc.no_runtime(), doc.no_runtime()))
    assert sent and {d["Value"] for d in sent} == {0.0}


def test_errors_are_reported_and_the_good_reports_still_count() -> None:
    lines = [*doc.lines(doc.runtime_error()), "{not json", *doc.lines(doc.without_instance(), doc.busy(50.0))]
    sent, errors = publish(lines)
    assert [d["Value"] for d in sent] == [25.0]  # the erroring runtime counts 0, the busy one 50
    assert errors[0] == "runtime 0: Failed to connect to runtime"
    assert errors[1].startswith("line 2: not JSON")
    assert errors[2] == "report without instance_info.instance_id: skipped"


def test_a_report_under_neuron_1x_instance_data_is_not_taken_for_one() -> None:
    assert u.sample(doc.as_neuron_1x(), cores=64) is None


def test_cores_come_from_the_report_and_fall_back_to_the_flag() -> None:
    report = doc.documented_report()
    report["neuron_hardware_info"]["error"] = "Neuron driver not loaded"
    assert u.host_cores(report, 32) == 32
    del report["neuron_hardware_info"]
    assert u.host_cores(report, 128) == 128


# ------------------------------------------------------------------------------------ Signature V4


def _suite(name: str) -> tuple[str, str, dict[str, str], bytes]:
    """A test-suite .req file: method, URL, headers (repeated names joined as the suite's canonical form does)."""
    head, _, body = (SIGV4 / f"{name}.req").read_text().partition("\n\n")
    request_line, *header_lines = head.split("\n")
    method, path, _ = request_line.split(" ")
    headers: dict[str, str] = {}
    for h in header_lines:
        k, _, v = h.partition(":")
        headers[k] = v
    return method, f"https://{headers['Host']}{path}", headers, body.encode()


SUITE_CREDS = sigv4.Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")  # botocore test_sigv4.py


@pytest.mark.parametrize("name", ["get-vanilla", "post-x-www-form-urlencoded", "post-sts-header-before"])
def test_signer_matches_the_aws_sigv4_test_suite(name: str) -> None:
    method, url, headers, body = _suite(name)
    creq, _ = sigv4.canonical_request(method, url, headers, body)
    assert creq == (SIGV4 / f"{name}.creq").read_text()
    authz = sigv4.authorization(method, url, headers, body, SUITE_CREDS, "us-east-1", "service", headers["X-Amz-Date"])
    assert authz == (SIGV4 / f"{name}.authz").read_text()


def _botocore_signed(url: str, headers: Mapping[str, str], body: bytes, creds: sigv4.Credentials, region: str,
                     when: datetime.datetime, monkeypatch: pytest.MonkeyPatch) -> str:
    import botocore.auth
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: when.replace(tzinfo=None))
    request = AWSRequest(method="POST", url=url, data=body,
                         headers={k: v for k, v in headers.items() if k not in ("Authorization", "X-Amz-Date",
                                                                                "X-Amz-Security-Token", "Host")})
    SigV4Auth(BotoCredentials(creds.access_key, creds.secret_key, creds.token), "monitoring", region).add_auth(request)
    return str(request.headers["Authorization"])


def test_put_metric_data_is_signed_as_botocore_signs_it(monkeypatch) -> None:
    creds = sigv4.Credentials("ASIAEXAMPLE", "secretEXAMPLE", "session-token-EXAMPLE")
    when = datetime.datetime(2026, 11, 23, 12, 0, 0, tzinfo=datetime.UTC)
    sender = u.CloudWatchSender("NeuronFleet/Neuron", "us-east-2", clock=when.timestamp)
    headers, body = sender.request([u.datum(INSTANCE, [1.0], when.timestamp())], creds)
    assert sender.url == "https://monitoring.us-east-2.amazonaws.com/"
    assert headers["Authorization"] == _botocore_signed(sender.url, headers, body, creds, "us-east-2", when,
                                                        monkeypatch)


def test_the_body_is_what_botocores_json_serializer_writes_for_cloudwatch() -> None:
    model = Loader().load_service_model("cloudwatch", "service-2")
    assert "json" in model["metadata"]["protocols"] and model["metadata"]["targetPrefix"] + ".PutMetricData" == u.TARGET
    assert model["metadata"]["endpointPrefix"] == u.SERVICE
    op = ServiceModel(model, "cloudwatch").operation_model("PutMetricData")
    at = datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.UTC)
    ours = u.datum(INSTANCE, [42.0], at.timestamp())
    params = {"Namespace": "NeuronFleet/Neuron", "MetricData": [{**ours, "Timestamp": at}]}
    theirs = create_serializer("json").serialize_to_request(params, op)
    headers, body = u.CloudWatchSender("NeuronFleet/Neuron", "us-east-2").request(
        [ours], sigv4.Credentials("AKIDEXAMPLE", "secret"))
    assert json.loads(body) == json.loads(theirs["body"])
    assert {k: headers[k] for k in theirs["headers"]} == theirs["headers"]


# ----------------------------------------------------------------------------------------- sending


class FakeAws:
    """IMDSv2 and CloudWatch answers in order; records every request."""

    def __init__(self, cloudwatch: list[tuple[int, dict] | OSError], expirations: list[str] | None = None) -> None:
        self.cloudwatch = list(cloudwatch)
        self.expirations = list(expirations or ["2026-11-23T18:00:00Z"])
        self.requests: list[tuple[str, str, dict[str, str], bytes | None]] = []
        self.issued = 0

    def __call__(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, timeout: float
                 ) -> tuple[int, bytes]:
        self.requests.append((method, url, dict(headers), body))
        if url.endswith("/latest/api/token"):
            assert method == "PUT" and headers["X-aws-ec2-metadata-token-ttl-seconds"] == "21600"
            return 200, b"imds-token"
        if url.endswith("/security-credentials/"):
            assert headers["X-aws-ec2-metadata-token"] == "imds-token"
            return 200, b"neuronfleet-instance-role"
        if url.endswith("/security-credentials/neuronfleet-instance-role"):
            self.issued += 1
            expires = self.expirations[min(self.issued - 1, len(self.expirations) - 1)]
            return 200, json.dumps({"Code": "Success", "AccessKeyId": f"ASIA{self.issued}", "SecretAccessKey": "s",
                                    "Token": f"token-{self.issued}", "Expiration": expires}).encode()
        answer = self.cloudwatch.pop(0) if self.cloudwatch else (200, {})
        if isinstance(answer, OSError):
            raise answer
        return answer[0], json.dumps(answer[1]).encode()

    def puts(self) -> list[dict[str, str]]:
        return [h for m, url, h, _ in self.requests if url.startswith("https://monitoring.")]


NOW = datetime.datetime(2026, 11, 23, 12, 0, tzinfo=datetime.UTC).timestamp()


def sender(aws: FakeAws, clock: float = NOW, sleeps: list[float] | None = None) -> u.CloudWatchSender:
    return u.CloudWatchSender("NeuronFleet/Neuron", "us-east-2", http=aws, clock=lambda: clock,
                              sleep=(sleeps if sleeps is not None else []).append)


def test_credentials_come_from_imdsv2_and_sign_with_their_session_token() -> None:
    aws = FakeAws([(200, {})])
    sender(aws)([u.datum(INSTANCE, [1.0], NOW)])
    (put,) = aws.puts()
    assert put["X-Amz-Security-Token"] == "token-1"
    assert put["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=ASIA1/20261123/us-east-2/monitoring/")


def test_throttling_is_retried_with_backoff() -> None:
    sleeps: list[float] = []
    aws = FakeAws([(400, {"__type": "Throttling"}), (429, {}), (200, {})])
    sender(aws, sleeps=sleeps)([u.datum(INSTANCE, [1.0], NOW)])
    assert len(aws.puts()) == 3 and sleeps == [1, 2]


def test_a_window_that_cannot_be_sent_goes_with_the_next_one_and_nothing_crashes() -> None:
    aws = FakeAws([(400, {"__type": "Throttling"})] * 3 + [OSError("network is unreachable")] * 3 + [(200, {})])
    errors: list[str] = []
    send = sender(aws)
    lines = doc.lines(*[doc.busy(10.0)] * 2, *[doc.busy(20.0)] * 2, *[doc.busy(30.0)] * 2)  # a window each
    clock = itertools.count(0, 30).__next__
    run = u.run(lines, cores=64, period=60, send=send, clock=lambda: float(clock()), on_error=errors.append)
    assert run.sent == 3 and run.pending == [] and run.dropped == 0
    last = json.loads([b for m, url, h, b in aws.requests if url.startswith("https://monitoring.")][-1] or b"{}")
    assert [d["Value"] for d in last["MetricData"]] == [10.0, 20.0, 30.0]  # oldest first, none lost
    assert errors[0].startswith("PutMetricData: HTTP 400 Throttling: 1 datapoint(s) kept")
    assert errors[1].startswith("PutMetricData: network is unreachable: 2 datapoint(s) kept")


def test_the_queue_keeps_the_newest_and_says_what_it_dropped() -> None:
    errors: list[str] = []

    def down(_: list[dict]) -> None:
        raise u.SendError("PutMetricData: HTTP 503 ServiceUnavailable", retryable=True)

    publisher = u.Publisher(down, errors.append, max_pending=2)
    for i in range(4):
        publisher.publish(u.datum(INSTANCE, [float(i)], NOW + 60 * i))
    assert [d["Value"] for d in publisher.pending] == [2.0, 3.0] and publisher.dropped == 2
    assert "dropped 1 datapoint(s) older than the last 2 unsent" in errors


def test_expired_credentials_are_fetched_again() -> None:
    aws = FakeAws([(200, {}), (200, {})], expirations=["2026-11-23T12:10:00Z", "2026-11-23T18:00:00Z"])
    creds = sigv4.ImdsCredentials(http=aws, clock=lambda: NOW)
    assert creds.get().access_key == "ASIA1"
    creds.clock = lambda: NOW + 6 * 60  # within REFRESH_BEFORE_S of 12:10
    assert creds.get().access_key == "ASIA2" and aws.issued == 2
    assert creds.get().access_key == "ASIA2" and aws.issued == 2  # cached until near its own expiry


def test_rejected_credentials_are_refreshed_and_the_request_retried_once() -> None:
    aws = FakeAws([(400, {"__type": "com.amazon.coral.service#ExpiredTokenException"}), (200, {})])
    sender(aws)([u.datum(INSTANCE, [1.0], NOW)])
    assert [p["X-Amz-Security-Token"] for p in aws.puts()] == ["token-1", "token-2"]
    aws = FakeAws([(403, {"__type": "AccessDeniedException"})] * 2)
    with pytest.raises(u.SendError, match="HTTP 403 AccessDeniedException"):
        sender(aws)([u.datum(INSTANCE, [1.0], NOW)])
    assert len(aws.puts()) == 2  # one refresh, then it gives up (kept for the next period by the publisher)


def test_the_publisher_is_standard_library_only_and_never_shells_out() -> None:
    assert "utilisation.py" in SCRIPTS
    source = script_text("utilisation.py")
    assert "import boto3" not in source and "subprocess" not in source and '"aws"' not in source

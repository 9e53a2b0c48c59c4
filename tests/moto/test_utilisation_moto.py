"""The utilisation publisher over real HTTP: neuron-monitor's documented report -> SigV4-signed PutMetricData
(CloudWatch's JSON protocol, urllib) -> moto's CloudWatch server, read back with boto3; credentials from a local
IMDSv2 stand-in. Sockets are enabled for localhost only."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
import pytest
from moto.server import ThreadedMotoServer

from neuronfleet.node import utilisation as u
from tests import neuron_monitor_doc as doc

pytestmark = pytest.mark.enable_socket


class Imds(BaseHTTPRequestHandler):
    """IMDSv2: a token for a PUT, then the role and its credentials for that token only."""

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, body: str) -> None:
        self.send_response(status)
        self.end_headers()
        self.wfile.write(body.encode())

    def do_PUT(self) -> None:
        ok = self.path == "/latest/api/token" and self.headers["X-aws-ec2-metadata-token-ttl-seconds"]
        self._answer(200 if ok else 400, "tok")

    def do_GET(self) -> None:
        if self.headers["X-aws-ec2-metadata-token"] != "tok":
            return self._answer(401, "")
        if self.path == "/latest/meta-data/iam/security-credentials/":
            return self._answer(200, "role")
        expires = (datetime.now(UTC) + timedelta(hours=6)).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._answer(200, json.dumps({"Code": "Success", "AccessKeyId": "ASIAEXAMPLE", "SecretAccessKey": "s",
                                      "Token": "t", "Expiration": expires}))


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, str]]:
    moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    moto.start()
    imds = ThreadingHTTPServer(("127.0.0.1", 0), Imds)
    threading.Thread(target=imds.serve_forever, daemon=True).start()
    host, port = moto.get_host_and_port()
    try:
        yield f"http://{host}:{port}/", f"http://127.0.0.1:{imds.server_address[1]}"
    finally:
        imds.shutdown()
        moto.stop()


def test_the_documented_report_lands_in_cloudwatch(servers) -> None:
    cloudwatch_url, imds_url = servers
    now = datetime.now(UTC).timestamp()
    send = u.CloudWatchSender("NeuronFleet/Neuron", "us-east-2", url=cloudwatch_url,
                              credentials=u.ImdsCredentials(base=imds_url))
    errors: list[str] = []
    run = u.run(doc.lines(doc.documented_report(), doc.busy(90.0)), cores=64, period=3600, send=send,
                clock=lambda: now, on_error=errors.append)
    assert (run.sent, errors) == (1, [])
    cw = boto3.client("cloudwatch", region_name="us-east-2", endpoint_url=cloudwatch_url,
                      aws_access_key_id="testing", aws_secret_access_key="testing")
    stats = cw.get_metric_statistics(
        Namespace="NeuronFleet/Neuron", MetricName="NeuronCoreUtilization",
        Dimensions=[{"Name": "InstanceId", "Value": "i-0011223344556677a"}], StartTime=now - 600, EndTime=now + 600,
        Period=60, Statistics=["Average"], Unit="Percent")
    (point,) = stats["Datapoints"]
    assert point["Average"] == round(((42.01 + 42.02) / 64 + 90.0) / 2, 3)

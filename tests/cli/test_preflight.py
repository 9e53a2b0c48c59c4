"""``neuronfleet preflight``: each blocking condition, a check that cannot be made (throttled, denied) as a warning,
the adapter on botocore 1.44.5 shapes (Stubber, with aws-cli's own examples) and on moto where moto serves the call."""

from __future__ import annotations

import copy
import json

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from neuronfleet import load_fleet
from neuronfleet.cli.main import main
from neuronfleet.cli.output import BAD_INPUT, FINDINGS, OK, check_lines_text, exit_code_of
from neuronfleet.preflight import account as account_module
from neuronfleet.preflight.account import Account
from neuronfleet.preflight.checks import (
    Failed,
    ami_lines,
    image_lines,
    offering_lines,
    quota_lines,
    reservation_lines,
)
from neuronfleet.preflight.commands import caller_problem, lines_of
from neuronfleet.preflight.needs import FleetNeeds, InstanceNeed, ReservationNeed, needs_of
from neuronfleet.preflight.quotas import EC2_ON_DEMAND
from tests.conftest import ROOT
from tests.publisher_examples import cli_outputs, response_errors

PROD = ROOT / "config" / "prod.yaml"
QUOTAS_EXAMPLE = cli_outputs("service-quotas-list-service-quotas")[0]
"""aws-cli's list-service-quotas example (CloudFormation quotas), verbatim."""
RESERVATIONS_EXAMPLE = cli_outputs("ec2-describe-capacity-reservations")[0]
"""aws-cli's describe-capacity-reservations example, verbatim."""


def quotas(service: str, values: dict[str, float]) -> dict:
    """The publisher's ListServiceQuotas example with its entries renamed to the quotas asked for (name -> value)."""
    doc = copy.deepcopy(QUOTAS_EXAMPLE)
    template = doc["Quotas"][0]
    codes = {f.name: f.code for f in EC2_ON_DEMAND.values()}
    doc["Quotas"] = [{**template, "ServiceCode": service, "QuotaName": name, "Value": value,
                      "QuotaCode": codes.get(name, "L-00000000"),
                      "QuotaArn": f"arn:aws:servicequotas:us-east-2:123456789012:{service}/{codes.get(name, '')}"}
                     for name, value in values.items()]
    assert response_errors("service-quotas", "ListServiceQuotas", doc) == []
    return doc


def reservation(**changes) -> dict:
    """The publisher's first capacity reservation with the fields a test changes."""
    r = {**copy.deepcopy(RESERVATIONS_EXAMPLE["CapacityReservations"][0]), **changes}
    assert response_errors("ec2", "DescribeCapacityReservations", {"CapacityReservations": [r]}) == []
    return r


@pytest.fixture(scope="module")
def prod() -> FleetNeeds:
    return needs_of(load_fleet(PROD))


def statuses(lines) -> dict[str, str]:
    return {line.check: line.status for line in lines}


def test_the_publishers_quota_example_fits_botocores_shape_and_the_adapter_reads_it() -> None:
    assert response_errors("service-quotas", "ListServiceQuotas", QUOTAS_EXAMPLE) == []
    client = boto3.client("service-quotas", region_name="us-east-2", aws_access_key_id="x",
                          aws_secret_access_key="x")
    with Stubber(client) as stub:
        stub.add_response("list_service_quotas", QUOTAS_EXAMPLE, {"ServiceCode": "cloudformation"})
        got = Account("us-east-2", client=lambda *_: client).service_quotas("cloudformation")
    assert [(q["QuotaName"], q["Value"]) for q in got] == [("Output count in CloudFormation template", 60.0),
                                                           ("Stack count", 200.0)]


def test_throttling_and_access_denied_are_answers_not_exceptions() -> None:
    client = boto3.client("service-quotas", region_name="us-east-2", aws_access_key_id="x",
                          aws_secret_access_key="x")
    acct = Account("us-east-2", client=lambda *_: client)
    with Stubber(client) as stub:
        stub.add_client_error("list_service_quotas", "TooManyRequestsException", "Rate exceeded")
        stub.add_client_error("list_service_quotas", "AccessDeniedException", "not authorized")
        assert acct.service_quotas("ec2") == Failed("TooManyRequestsException", "Rate exceeded")
        assert acct.service_quotas("ec2") == Failed("AccessDeniedException", "not authorized")


def test_quotas_each_blocking_condition_and_the_fix(prod) -> None:
    ec2 = quotas("ec2", {"Running On-Demand P instances": 192, "Running On-Demand G and VT instances": 4096})["Quotas"]
    sm = quotas("sagemaker", {"ml.inf2.48xlarge for endpoint usage": 2, "ml.inf2.xlarge for endpoint usage": 6,
                              "ml.p5.48xlarge for endpoint usage": 2, "ml.p5en.48xlarge for endpoint usage": 8}
                )["Quotas"]
    lines = {line.check: line for line in quota_lines(prod, ec2, sm)}
    p = lines["quota Running On-Demand P instances (us-east-2)"]
    # the pool needs one p5 (192 vCPUs) to start and up to max_vcpus 1536: enough to start, not to grow
    assert (p.status, p.detail) == ("warning", "192 vCPUs (L-417A185B): enough to start (192), not for the GPU "
                                               "pool's maximum (1536)")
    assert p.fix == ("aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-417A185B "
                     "--desired-value 1536")
    assert lines["quota Running On-Demand G and VT instances (us-east-2)"].status == "ok"
    inf = lines["quota ml.inf2.48xlarge for endpoint usage (us-east-2)"]
    assert (inf.status, inf.detail) == ("blocking", "2 instances (L-00000000); the fleet needs 8 instances")
    ec2_low = quotas("ec2", {"Running On-Demand P instances": 96})["Quotas"]
    low = {line.check: line for line in quota_lines(prod, ec2_low, sm)}
    assert low["quota Running On-Demand P instances (us-east-2)"].status == "blocking"
    # a quota the account does not list under the kit's name: a warning with the console check, never ok
    missing = low["quota Running On-Demand G and VT instances (us-east-2)"]
    assert missing.status == "warning" and "Service Quotas console -> ec2" in missing.fix
    # denied / throttled: every quota line unchecked (never a pass), the fix for its cause
    denied = quota_lines(prod, Failed("AccessDeniedException", "no"), Failed("ThrottlingException", "slow"))
    assert {line.status for line in denied} == {"unchecked"}
    assert "allow servicequotas:ListServiceQuotas" in denied[0].fix
    assert "run preflight again in a minute" in denied[-1].fix and "allow" not in denied[-1].fix


def test_offerings_block_an_on_demand_cluster_in_an_az_without_its_type() -> None:
    needs = FleetNeeds(region="us-east-2", instances=[
        InstanceNeed("training cluster a", "trn1.32xlarge", 2, ("us-east-2a",), "on-demand"),
        InstanceNeed("training cluster b", "trn2.48xlarge", 4, ("us-east-2b",), "capacity-block"),
        InstanceNeed("GPU fallback pool", "p5.48xlarge", 8, ("us-east-2a", "us-east-2b"), "pool")])
    offered = {("trn1.32xlarge", "us-east-2c"), ("p5.48xlarge", "us-east-2b")}
    lines = {line.check: line for line in offering_lines(needs, offered)}
    a = lines["offering trn1.32xlarge for training cluster a"]
    assert (a.status, a.detail, a.fix) == ("blocking", "not offered in us-east-2a",
                                           "move it to an AZ that offers it (us-east-2c)")
    assert lines["offering trn2.48xlarge for training cluster b"].status == "warning"  # Capacity Block types
    assert lines["offering p5.48xlarge for GPU fallback pool"].status == "ok"
    assert {line.status for line in offering_lines(needs, Failed("RequestLimitExceeded"))} == {"unchecked"}


def test_reservations_each_blocking_condition(prod) -> None:
    finetune = next(n for n in prod.reservations if n.reservation_id)
    rid = finetune.reservation_id
    ok = reservation(CapacityReservationId=rid, InstanceType="trn2.48xlarge", AvailabilityZone="us-east-2b",
                     TotalInstanceCount=4, State="scheduled", ReservationType="capacity-block")
    group_arn = next(n.resource_group_arn for n in prod.reservations if n.resource_group_arn)
    members = {"cr-1": reservation(CapacityReservationId="cr-1", InstanceType="trn2u.48xlarge",
                                   AvailabilityZone="us-east-2b", TotalInstanceCount=4, State="active"),
               "cr-2": reservation(CapacityReservationId="cr-2", InstanceType="trn2u.48xlarge",
                                   AvailabilityZone="us-east-2b", TotalInstanceCount=4, State="active")}
    good = reservation_lines(prod, {rid: ok, **members}, {group_arn: ["cr-1", "cr-2"]})
    assert {line.status for line in good} == {"ok"}, good
    cases = {
        "not found": ({rid: Failed("InvalidCapacityReservationId.NotFound", "x")}, "not found in the account"),
        "other AZ": ({rid: {**ok, "AvailabilityZone": "us-east-2a"}}, "in us-east-2a; the cluster is in us-east-2b"),
        "expired": ({rid: {**ok, "State": "expired"}}, "state expired"),
        "other type": ({rid: {**ok, "InstanceType": "trn1.32xlarge"}}, "a Capacity Block of trn1.32xlarge"),
        "too few": ({rid: {**ok, "TotalInstanceCount": 2}}, "2 instances reserved; the cluster has 4"),
    }
    for name, (answers, detail) in cases.items():
        lines = reservation_lines(prod, {**answers, **members}, {group_arn: ["cr-1", "cr-2"]})
        blocking = [line for line in lines if line.status == "blocking"]
        assert len(blocking) == 1 and detail in blocking[0].detail, (name, lines)
    empty = reservation_lines(prod, {rid: ok}, {group_arn: []})
    assert [line.detail for line in empty if line.status == "blocking"] == ["the group holds no capacity reservation"]
    denied = reservation_lines(prod, {rid: Failed("UnauthorizedOperation")}, {group_arn: Failed("AccessDenied")})
    assert {line.status for line in denied} == {"unchecked"}


def test_images_and_amis_blocking_when_missing(prod) -> None:
    refs = [n.reference for n in prod.images]
    lines = image_lines(prod, {refs[-1]: Failed("ImageNotFound", "Requested image not found")})
    assert [line.status for line in lines if line.check.endswith(refs[-1])] == ["blocking"]
    assert any(line.status == "warning" and "not checked" in line.detail for line in lines)  # ECR Public
    recorded = [n.ami_id for n in prod.amis if n.ami_id]
    amis = ami_lines(prod, {}, {recorded[0]: "available", recorded[-1]: Failed("NotFound")})
    assert [line.status for line in amis][-1] == "blocking"


def test_the_adapter_against_moto_offerings_ami_parameter_and_ecr() -> None:
    with mock_aws():
        acct = Account("us-east-2", client=lambda s, r: boto3.client(s, region_name=r), dlc_account=lambda _r: "1" * 12)
        offered = acct.offerings(["p5.48xlarge", "trn1.32xlarge"])
        # moto 5.2.5's us-east-2 offerings (AWS's data as moto ships it): trn1.32xlarge only in us-east-2c
        assert offered == {("p5.48xlarge", f"us-east-2{z}") for z in "abc"} | {("trn1.32xlarge", "us-east-2c")}
        param = "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
        got = acct.parameter(param)
        assert isinstance(got, str) and got.startswith("ami-")
        assert acct.parameter("/no/such/parameter").not_found  # type: ignore[union-attr]
        ecr = boto3.client("ecr", region_name="us-east-2")
        ecr.create_repository(repositoryName="team/train")
        media = "application/vnd.docker.distribution.manifest.v2+json"  # aws-cli's batch-get-image example's
        ecr.put_image(repositoryName="team/train", imageTag="v1", imageManifestMediaType=media,
                      imageManifest=json.dumps({"schemaVersion": 2, "mediaType": media}))
        account_id = ecr.describe_repositories()["repositories"][0]["registryId"]
        assert acct.image(f"{account_id}.dkr.ecr.us-east-2.amazonaws.com/team/train:v1") is True
        missing = acct.image(f"{account_id}.dkr.ecr.us-east-2.amazonaws.com/team/train:v2")
        assert isinstance(missing, Failed) and missing.not_found
        assert acct.image("public.ecr.aws/neuron/x:1") is None
        assert acct.ami_state("ami-0123456789abcdef0") == Failed("InvalidAMIID.NotFound", acct.ami_state(
            "ami-0123456789abcdef0").message)  # type: ignore[union-attr]


def test_preflight_end_to_end_on_moto_exits_1_with_blocking_lines_and_no_traceback(monkeypatch, capsys) -> None:
    monkeypatch.setattr(account_module, "_dlc_account", lambda _r: "763104351884")
    with mock_aws():
        code = main(["preflight", "-c", str(PROD), "--json"])
    out = capsys.readouterr()
    doc = json.loads(out.out)
    assert code == FINDINGS and doc["blocking"] >= 1
    assert doc["caller"].startswith("arn:aws:") and doc["unchecked"] == sum(
        1 for line in doc["lines"] if line["status"] == "unchecked")
    checks = {line["check"]: line for line in doc["lines"]}
    # moto serves no Service Quotas listing and no capacity reservations: unchecked or not-found, never a crash
    p_quota = checks["quota Running On-Demand P instances (us-east-2)"]
    assert p_quota["status"] == "unchecked" and p_quota["detail"].startswith("could not check: error (NotImplemented")
    assert p_quota["fix"].startswith("check by hand: Service Quotas console")
    assert "Traceback" not in out.err and "reading Service Quotas" in out.err


def test_every_line_kind_has_a_fix_unless_ok(prod) -> None:
    lines = lines_of(prod, {"ec2_quotas": Failed("x"), "sagemaker_quotas": Failed("x"), "offerings": set(),
                            "reservations": {}, "groups": {}, "images": {}, "parameters": {}, "amis": {}})
    assert lines and all(line.fix for line in lines if line.status != "ok")
    assert ReservationNeed  # the needs types are public for other checkers
    assert main(["preflight", "--help"]) == OK


def test_on_demand_quotas_count_vcpus_as_the_publishers_example_says() -> None:
    (quota,) = cli_outputs("service-quotas-get-service-quota")
    assert response_errors("service-quotas", "GetServiceQuota", quota) == []
    q = quota["Quota"]
    assert q["QuotaName"].startswith("Running On-Demand ") and q["UsageMetric"]["MetricDimensions"]["Resource"] == "vCPU"
    # the kit's names follow the same pattern (their codes are third-party, unconfirmed: docs/cli.md)
    assert all(f.name.startswith("Running On-Demand ") and f.name.endswith(" instances") for f in EC2_ON_DEMAND.values())


def test_a_dlc_image_is_looked_up_in_the_regions_dlc_registry() -> None:
    # aws-cdk-lib's region facts (the kit's one home for the DLC account, neuronfleet.facts.images)
    assert account_module._dlc_account("us-east-2") == "763104351884"
    client = boto3.client("ecr", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        stub.add_response("batch_get_image", {"images": [], "failures": [
            {"imageId": {"imageTag": "1.0"}, "failureCode": "ImageNotFound", "failureReason": "Requested image not found"}]},
            {"registryId": "763104351884", "repositoryName": "pytorch-inference-neuronx", "imageIds": [{"imageTag": "1.0"}]})
        got = Account("us-east-2", client=lambda *_: client).image("pytorch-inference-neuronx:1.0")
    assert got == Failed("ImageNotFound", "Requested image not found") and got.not_found


def test_every_reservation_state_of_botocore_is_classified(prod) -> None:
    import botocore.session

    from neuronfleet.preflight.checks import RESERVATION_OK_STATES, RESERVATION_WAIT_STATES

    states = botocore.session.get_session().get_service_model("ec2").shape_for("CapacityReservationState").enum
    rid = next(n.reservation_id for n in prod.reservations if n.reservation_id)
    got = {}
    for state in states:
        r = reservation(CapacityReservationId=rid, InstanceType="trn2.48xlarge", AvailabilityZone="us-east-2b",
                        TotalInstanceCount=4, State=state)
        (line,) = [x for x in reservation_lines(prod, {rid: r}, {}) if rid in x.check]
        got[state] = line.status
    assert {s for s, v in got.items() if v == "ok"} == set(RESERVATION_OK_STATES)
    assert {s for s, v in got.items() if v == "warning"} == set(RESERVATION_WAIT_STATES)
    assert {s for s, v in got.items() if v == "blocking"} == set(states) - set(RESERVATION_OK_STATES) - set(
        RESERVATION_WAIT_STATES) and "expired" in states


def test_an_ssm_parameter_that_does_not_resolve_blocks() -> None:
    from neuronfleet.preflight.needs import AmiNeed

    name = "/aws/service/ecs/optimized-ami/amazon-linux-2023/neuron/recommended/image_id"
    needs = FleetNeeds(region="us-east-2", amis=[AmiNeed("training cluster a", parameter=name)])
    (line,) = ami_lines(needs, {name: Failed("ParameterNotFound", "")}, {})
    assert (line.status, line.detail) == ("blocking", "no such SSM parameter in the region")
    (line,) = ami_lines(needs, {name: Failed("ThrottlingException", "Rate exceeded")}, {})
    assert line.status == "unchecked" and "ssm:GetParameter" not in line.fix and "again" in line.fix  # throttled
    (line,) = ami_lines(needs, {name: Failed("AccessDeniedException", "not authorized")}, {})
    assert line.status == "unchecked" and "allow ssm:GetParameter" in line.fix
    (line,) = ami_lines(needs, {name: "ami-0123456789abcdef0"}, {})
    assert (line.status, line.detail) == ("ok", "resolves to ami-0123456789abcdef0")


NO_CREDENTIALS = {"AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
                  "AWS_EC2_METADATA_DISABLED": "true"}


def test_without_credentials_preflight_stops_with_one_line_and_exit_2(monkeypatch, capsys) -> None:
    """The walkthrough's defect: 21 'could not check (NoCredentialsError)' warnings and exit 0, so
    `preflight && cdk deploy` passed having checked nothing. The caller is established first (STS)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in NO_CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    assert main(["preflight", "-c", str(PROD)]) == BAD_INPUT
    out = capsys.readouterr()
    assert out.out == "" and out.err.strip().splitlines() == [
        "neuronfleet: preflight: AWS credentials: got none usable (NoCredentialsError: Unable to locate "
        "credentials); allowed: credentials the AWS SDK finds (aws sso login, AWS_PROFILE, or AWS_ACCESS_KEY_ID + "
        "AWS_SECRET_ACCESS_KEY); check them with aws sts get-caller-identity, then run preflight again"]
    assert main(["preflight", "-c", str(PROD), "--json"]) == BAD_INPUT
    doc = json.loads(capsys.readouterr().out)
    assert doc["problems"][0]["path"] == "AWS credentials"


def test_an_unknown_region_is_refused_before_any_call(capsys) -> None:
    assert main(["preflight", "-c", str(PROD), "--region", "us-east-9"]) == BAD_INPUT
    assert "--region: got 'us-east-9'; allowed: an AWS region" in capsys.readouterr().err


def test_the_caller_on_botocores_sts_shape_and_a_refused_token() -> None:
    (identity,) = cli_outputs("sts-get-caller-identity")  # aws-cli's own example, verbatim
    assert response_errors("sts", "GetCallerIdentity", identity) == []
    client = boto3.client("sts", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    acct = Account("us-east-2", client=lambda *_: client)
    with Stubber(client) as stub:
        stub.add_response("get_caller_identity", identity, {})
        stub.add_client_error("get_caller_identity", "ExpiredToken", "The security token included in the request is "
                                                                     "expired", http_status_code=403)
        assert acct.caller() == identity["Arn"]
        expired = acct.caller()
    assert isinstance(expired, Failed) and expired.cause == "credentials"
    problem = caller_problem(expired, "us-east-2")
    assert problem.path == "AWS credentials" and "aws sts get-caller-identity" in problem.allowed


@pytest.mark.enable_socket
def test_an_unreachable_endpoint_is_a_network_cause_not_a_permission() -> None:
    """A real botocore EndpointConnectionError (nothing listens on port 9), not a made-up code."""
    from botocore.config import Config

    client = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x",
                          endpoint_url="http://127.0.0.1:9",
                          config=Config(retries={"mode": "standard", "max_attempts": 1}, connect_timeout=2))
    got = Account("us-east-2", client=lambda *_: client).offerings(["trn1.32xlarge"])
    assert isinstance(got, Failed) and (got.code, got.cause) == ("EndpointConnectionError", "network")
    needs = FleetNeeds(region="us-east-2", instances=[
        InstanceNeed("training cluster a", "trn1.32xlarge", 2, ("us-east-2a",), "on-demand")])
    (line,) = offering_lines(needs, got)
    assert line.status == "unchecked" and line.detail.startswith("could not check: network (EndpointConnectionError")
    assert "allow" not in line.fix and "network" in line.fix
    assert caller_problem(got, "us-east-2").path == "AWS STS endpoint in us-east-2"


def test_each_cause_has_its_own_fix_and_the_tables_are_botocores() -> None:
    import botocore.exceptions as exc

    from neuronfleet.preflight.checks import botocore_error_names

    THROTTLING_CODES, NETWORK_ERRORS, CREDENTIAL_EXCEPTIONS = botocore_error_names()

    # botocore 1.44.5's own lists: standard retry mode's throttling codes, its connection and credential errors
    assert {"ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException"} <= THROTTLING_CODES
    assert {"EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ProxyConnectionError"} <= \
        NETWORK_ERRORS
    assert {"NoCredentialsError", "PartialCredentialsError", "SSOTokenLoadError", "UnauthorizedSSOTokenError",
            "TokenRetrievalError"} <= CREDENTIAL_EXCEPTIONS
    assert not issubclass(exc.NoCredentialsError, exc.ConnectionError)
    causes = {code: Failed(code).cause for code in (
        "NoCredentialsError", "ExpiredTokenException", "AuthFailure", "AccessDeniedException", "UnauthorizedOperation",
        "ThrottlingException", "EndpointConnectionError", "InternalError", "ImageNotFound")}
    assert causes == {"NoCredentialsError": "credentials", "ExpiredTokenException": "credentials",
                      "AuthFailure": "credentials", "AccessDeniedException": "access denied",
                      "UnauthorizedOperation": "access denied", "ThrottlingException": "throttled",
                      "EndpointConnectionError": "network", "InternalError": "error", "ImageNotFound": "not found"}


def test_exit_0_only_when_every_check_ran(prod) -> None:
    answers = {"ec2_quotas": Failed("AccessDeniedException"), "sagemaker_quotas": [], "offerings": set(),
               "reservations": {}, "groups": {}, "images": {}, "parameters": {}, "amis": {},
               "caller": "arn:aws:iam::123456789012:user/DevAdmin"}
    lines = lines_of(prod, answers)
    unchecked = [line for line in lines if line.status == "unchecked"]
    assert unchecked and all("to arn:aws:iam::123456789012:user/DevAdmin" in line.fix for line in unchecked)
    assert exit_code_of(unchecked) == FINDINGS
    assert "NOT CHECKED" in check_lines_text(unchecked).splitlines()[-1]


def test_preflight_help_needs_no_botocore() -> None:
    """botocore is not a dependency of the library (only of the test extra): the error tables load on first use."""
    import subprocess
    import sys

    probe = ("import sys; sys.modules['botocore'] = None; sys.modules['boto3'] = None\n"
             "from neuronfleet.cli.main import main\n"
             "assert main(['preflight', '--help']) == 0\n"
             "from neuronfleet.preflight.checks import Failed\n"
             "assert Failed('ImageNotFound').cause == 'not found'\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]

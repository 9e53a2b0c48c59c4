"""``neuronfleet verify``: one check per row of docs/checks.md, each parser on the AWS CLI's own example answer of its
operation (tests/data/aws_cli, verbatim; checked against botocore's output shape first) and on variations of it for
each outcome; the adapter makes read-only calls only; the command's exit codes."""

from __future__ import annotations

import ast
import copy
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from neuronfleet.cli.main import main
from neuronfleet.preflight.checks import Failed
from neuronfleet.verify import CHECKS
from neuronfleet.verify.commands import run_checks
from neuronfleet.verify.outcomes import Finding, exit_code, holds, unchecked
from neuronfleet.verify.reads import READ_ONLY_PREFIXES, decode_console
from neuronfleet.verify.registry import Check, Context
from neuronfleet.verify.training import (
    SETTLE,
    compute_environments_valid,
    fetch_lines,
    instances_in_block,
    node_scripts_fetched,
    utilisation_published,
)
from tests.conftest import ROOT
from tests.publisher_examples import AWS_CLI, output_blocks, response

DOC = ROOT / "docs" / "checks.md"


def doc_ids() -> list[str]:
    """The first cell of every row of docs/checks.md's tables whose header starts with ``Check``."""
    ids, in_table = [], False
    for line in DOC.read_text().splitlines():
        if line.startswith("| Check |"):
            in_table = True
        elif not line.startswith("|"):
            in_table = False
        elif in_table and not line.startswith("|---"):
            cell = line.strip("|").split(" | ")[0].strip()
            found = re.fullmatch(r"`([a-z0-9-]+)`", cell)
            assert found, f"docs/checks.md: a row without a check id: {line[:80]}"
            ids.append(found.group(1))
    return ids


def test_one_check_per_row_of_the_document_and_one_row_per_check() -> None:
    ids = doc_ids()
    assert len(ids) == 59  # the rows of both tables today: a row added without a check fails here
    assert len(set(ids)) == len(ids) == len(CHECKS)
    assert sorted(ids) == sorted(c.id for c in CHECKS), "docs/checks.md's rows and verify's checks"


def test_every_row_names_the_command_its_check_lists() -> None:
    """The command a check lists for the user is the row's own (the first words of it, as the doc writes them)."""
    rows = {i: line for i, line in zip(doc_ids(), [ln for ln in DOC.read_text().splitlines()
                                                     if re.match(r"^\| `[a-z0-9-]+` \|", ln)], strict=True)}
    assert len(rows) == len(CHECKS)
    for check in CHECKS:
        words = re.sub(r"[`\\]", "", check.by_hand).split()[:3]
        assert " ".join(words) in re.sub(r"[`\\]", "", rows[check.id]), (check.id, words)


def test_a_check_is_either_read_only_or_says_why_not() -> None:
    with pytest.raises(ValueError, match="give either run"):
        Check("x-y", "fact", "cmd")
    with pytest.raises(ValueError, match="give either run"):
        Check("x-y", "fact", "cmd", run=lambda c: holds("ok"), manual="why")
    with pytest.raises(ValueError, match=r"Check\.id: got 'X y'"):
        Check("X y", "fact", "cmd", manual="why")
    assert sum(1 for c in CHECKS if c.run) >= 5


def test_a_finding_names_what_to_do_unless_it_holds() -> None:
    with pytest.raises(ValueError, match=r"Finding\.fix: got nothing for a 'broken' finding"):
        Finding("broken", "seen")
    with pytest.raises(ValueError, match=r"Finding\.outcome: got 'ok'"):
        Finding("ok", "seen")  # type: ignore[arg-type]
    assert exit_code([holds("a"), Finding("not yet", "b", "later")]) == 0
    assert exit_code([holds("a"), unchecked("b", "why")]) == 1
    assert exit_code([Finding("broken", "b", "fix")]) == 1


# ------------------------------------------------------------------------------ the publishers' examples


def example(name: str, service: str, operation: str, index: int = 0) -> Any:
    """The ``index``-th JSON output of the AWS CLI's example page, checked against botocore's shape, as boto3 gives
    it (the batch page indents with tabs)."""
    blocks = output_blocks((AWS_CLI / f"{name}.rst").read_text().expandtabs(8))
    return response(service, operation, json.loads(blocks[index]))


def ec2_instances() -> list[dict[str, Any]]:
    page = example("ec2-describe-instances", "ec2", "DescribeInstances")
    instances = [i for r in page["Reservations"] for i in r["Instances"]]
    assert [i["InstanceId"] for i in instances] == ["i-1234567890abcdef0"]
    return instances


NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)


def launched(instance: dict[str, Any], ago: timedelta) -> dict[str, Any]:
    return {**instance, "LaunchTime": NOW - ago}


def test_the_examples_instance_runs_outside_any_block_and_a_block_instance_holds() -> None:
    (instance,) = ec2_instances()
    assert instance.get("CapacityReservationId") is None  # the example: an On-Demand instance, preference "open"
    found = instances_in_block([instance])
    assert found.outcome == "broken" and "i-1234567890abcdef0" in found.seen and "On-Demand" in found.fix
    in_block = {**copy.deepcopy(instance), "CapacityReservationId": "cr-0123456789abcdef0",
                "CapacityBlockId": "cb-0123456789abcdef0", "InstanceLifecycle": "capacity-block"}
    assert instances_in_block([in_block]) == holds("1 instances run in Capacity Block cb-0123456789abcdef0")
    assert instances_in_block([in_block, instance]).outcome == "broken"
    assert instances_in_block([]).outcome == "not yet"
    # a reservation that is not a block (an ODCR the instance fell into): not the block's
    odcr = {**copy.deepcopy(instance), "CapacityReservationId": "cr-0123456789abcdef0"}
    assert instances_in_block([odcr]).outcome == "broken"


def test_the_examples_valid_compute_environment_holds_and_an_invalid_one_is_broken() -> None:
    page = example("batch-describe-compute-environments", "batch", "DescribeComputeEnvironments")
    environments = page["computeEnvironments"]
    assert compute_environments_valid(environments) == holds("1 compute environments VALID (P2OnDemand)")
    invalid = [{**environments[0], "status": "INVALID",
                "statusReason": "CLIENT_ERROR - The security group and launch template network interfaces"}]
    found = compute_environments_valid([*environments, *invalid])
    assert found.outcome == "broken" and "INVALID: CLIENT_ERROR - The security group" in found.seen
    assert compute_environments_valid([{**environments[0], "status": "CREATING"}]).outcome == "not yet"
    assert compute_environments_valid([]).outcome == "not yet"


def test_the_examples_metrics_hold_no_utilisation_and_the_kits_series_does() -> None:
    metrics = example("cloudwatch-list-metrics", "cloudwatch", "ListMetrics")["Metrics"]
    assert {m["Namespace"] for m in metrics} == {"AWS/SNS"}
    (instance,) = ec2_instances()
    old = launched(instance, SETTLE + timedelta(minutes=1))
    args = {"namespace": "NeuronFleet/Neuron", "metric": "NeuronCoreUtilization"}
    found = utilisation_published(metrics, [old], NOW, **args)
    assert found.outcome == "broken" and "silent-instance" in found.fix
    ours = [*metrics, {"Namespace": "NeuronFleet/Neuron", "MetricName": "NeuronCoreUtilization",
                       "Dimensions": [{"Name": "InstanceId", "Value": "i-1234567890abcdef0"}]}]
    assert utilisation_published(ours, [old], NOW, **args).outcome == "holds"
    young = launched(instance, SETTLE - timedelta(minutes=1))
    assert utilisation_published(metrics, [young], NOW, **args).outcome == "not yet"
    assert utilisation_published(metrics, [], NOW, **args).outcome == "not yet"
    # another namespace's series of the same name is not the kit's
    other = [{**ours[-1], "Namespace": "Other"}]
    assert utilisation_published(other, [old], NOW, **args).outcome == "broken"
    # an EKS node of a DRA group runs no publisher by design: counted apart, never broken
    dra = {**old, "InstanceId": "i-0dra", "Tags": [*old.get("Tags", []), {"Key": "neuronfleet:neuron-devices",
                                                                        "Value": "dra"}]}
    found = utilisation_published(ours, [old, dra], NOW, **args)
    assert found.outcome == "holds" and "1 DRA node(s) not measured" in found.seen
    found = utilisation_published(metrics, [dra], NOW, **args)
    assert found.outcome == "not yet" and "1 DRA node(s) not measured" in found.seen
    plugin = {**dra, "Tags": [{"Key": "neuronfleet:neuron-devices", "Value": "device-plugin"}]}
    assert utilisation_published(metrics, [plugin], NOW, **args).outcome == "broken"


def console_example() -> str:
    """The AWS CLI's example of ``get-console-output --latest --output text`` (its second output)."""
    (text,) = output_blocks((AWS_CLI / "ec2-get-console-output.rst").read_text())[1:]
    assert text.startswith("i-1234567890abcdef0 [    0.000000] Command line:")
    return text


SUCCESS = ("neuronfleet fetch: https://b.s3.us-east-2.amazonaws.com/node/scripts.tar -> /opt/neuronfleet: "
           "health_gate.py, launch.py, sigv4.py, utilisation.py")
REFUSED = "neuronfleet fetch: GET https://b.s3.us-east-2.amazonaws.com/node/scripts.tar HTTP 403 SignatureDoesNotMatch"


def test_the_fetchers_lines_are_found_in_the_examples_console_output() -> None:
    plain = console_example()
    assert fetch_lines(plain) == []
    lines = plain.splitlines()
    with_ours = "\n".join([*lines[:5], f"[   21.100000] cloud-init[1234]: {SUCCESS}", *lines[5:]])
    assert fetch_lines(with_ours) == []  # cloud-init's prefix: the fetcher's line is not at the start
    with_ours = "\n".join([*lines[:5], SUCCESS, *lines[5:]])
    assert fetch_lines(with_ours) == [SUCCESS]


def test_node_fetch_and_user_data_outcomes_on_the_examples_console() -> None:
    (instance,) = ec2_instances()
    old = launched(instance, SETTLE + timedelta(minutes=5))
    plain = console_example()
    iid = "i-1234567890abcdef0"
    fetched = {iid: plain + "\n" + SUCCESS}
    refused = {iid: plain + "\n" + REFUSED}
    assert node_scripts_fetched(fetched, [old], NOW, part_ran=False).outcome == "holds"
    assert node_scripts_fetched(fetched, [old], NOW, part_ran=True).outcome == "holds"
    found = node_scripts_fetched(refused, [old], NOW, part_ran=False)
    assert found.outcome == "broken" and "SignatureDoesNotMatch" in found.seen
    assert node_scripts_fetched(refused, [old], NOW, part_ran=True).outcome == "holds"  # the part ran; it failed
    silent = {iid: plain}
    assert node_scripts_fetched(silent, [old], NOW, part_ran=True).outcome == "broken"
    assert node_scripts_fetched(silent, [old], NOW, part_ran=False).outcome == "not yet"
    assert node_scripts_fetched({}, [old], NOW, part_ran=False).outcome == "not yet"
    young = launched(instance, timedelta(minutes=2))
    assert node_scripts_fetched(fetched, [young], NOW, part_ran=False).outcome == "not yet"


def test_the_console_is_decoded_as_ec2_sends_it() -> None:
    import base64

    text = console_example()
    assert decode_console(base64.b64encode(text.encode()).decode()) == text
    assert decode_console("not base64: plain text") == "not base64: plain text"


# ------------------------------------------------------------------------------ the adapter and the command


def test_the_adapter_makes_read_only_calls_only() -> None:
    source = (ROOT / "constructs" / "neuronfleet" / "verify" / "reads.py").read_text()
    calls = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            inner = node.func.value
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "client":
                calls.add(node.func.attr)  # self.client("ec2").<operation>(...)
            if node.func.attr == "get_paginator":
                calls.add(ast.literal_eval(node.args[0]))
    assert {"describe_instances", "get_console_output", "list_metrics"} <= calls
    calls.discard("get_paginator")
    assert [c for c in calls if not c.startswith(READ_ONLY_PREFIXES)] == []


class Stub:
    """The reads verify's checks ask: a Failed answers every read; else nothing is found (empty lists), and consoles
    come from a table."""

    def __init__(self, answers: dict[str, Any] | Failed) -> None:
        self.answers = answers

    def console_output(self, instance_id: str) -> Any:
        return self.answers if isinstance(self.answers, Failed) else self.answers["console"][instance_id]

    def __getattr__(self, name: str) -> Any:
        answers = self.answers
        return lambda *args, **kwargs: answers if isinstance(answers, Failed) else answers.get(name, [])


def fleet(name: str = "prod") -> Any:
    from neuronfleet import load_fleet

    return load_fleet(ROOT / "config" / f"{name}.yaml")


def test_a_denied_read_is_unchecked_naming_the_permission_and_the_others_still_run() -> None:
    denied = Failed("UnauthorizedOperation", "You are not authorized to perform this operation.")
    found, skipped = run_checks(CHECKS, Context(fleet=fleet(), reads=Stub(denied), now=NOW))
    by_id = {c.id: f for c, f in found}
    assert by_id["batch-compute-environment"].outcome == "unchecked"
    assert "allow batch:DescribeComputeEnvironments to the caller" in by_id["batch-compute-environment"].fix
    assert len(by_id) >= 30 and all(f.outcome == "unchecked" for f in by_id.values())
    for check, finding in found:  # every read-only check names its permission; none failed as a bug
        assert "the check failed" not in finding.seen, (check.id, finding.seen)
        if check.run is not None:
            assert f"allow {check.permission} to the caller" in finding.fix, check.id
    assert len(found) + len(skipped) == len(CHECKS)


def test_a_check_that_fails_unexpectedly_is_unchecked_and_the_others_run() -> None:
    def boom(context: Context) -> Finding:
        raise KeyError("LaunchTime")

    checks = (Check("boom", "x", "cmd", run=boom), *CHECKS[:2])
    found, _ = run_checks(checks, Context(fleet=fleet(), reads=Stub({}), now=NOW))
    assert found[0][1] == unchecked("the check failed: KeyError: 'LaunchTime'",
                                    "a neuronfleet bug: report it with this line (NEURONFLEET_DEBUG=1 is no help here)")
    assert len(found) >= 2


def test_checks_that_do_not_apply_to_the_fleet_are_not_run() -> None:
    dev = fleet("dev")
    blocks = [c for c in dev.training_clusters if c.capacity.type == "capacity-block"]
    found, skipped = run_checks(CHECKS, Context(fleet=dev, reads=Stub({}), now=NOW))
    skipped_ids = {c.id for c, _ in skipped}
    assert ("batch-capacity-block" in skipped_ids) == (not blocks)
    assert {c.id for c, _ in found} | skipped_ids == {c.id for c in CHECKS}


def eks_ultraserver_on_the_device_plugin(tmp_path: Path) -> Any:
    """config/eks.yaml with its UltraServer node group on the device plugin instead of DRA: the one fleet a placement
    queue needs (NeuronEksCluster places such a group's Jobs on whole UltraServers), which no example fleet has."""
    import yaml

    from neuronfleet import load_fleet

    doc = yaml.safe_load((ROOT / "config" / "eks.yaml").read_text())
    (ultra,) = [g for g in doc["training_clusters"][0]["eks"]["node_groups"] if g.get("dra")]
    del ultra["dra"], ultra["device_plugin"]
    path = tmp_path / "eks-device-plugin.yaml"
    path.write_text(yaml.safe_dump(doc))
    return load_fleet(path)


def test_every_check_applies_to_some_example_fleet_and_smoke_runs_only_its_own(tmp_path: Path) -> None:
    fleets = {p.stem: fleet(p.stem) for p in sorted((ROOT / "config").glob("*.yaml"))}
    # a feature no example fleet has, with the fleet that has it: the check applies there and nowhere else
    only_elsewhere = {"ultraserver-placement": eks_ultraserver_on_the_device_plugin(tmp_path)}
    never = [c.id for c in CHECKS if all(c.not_applying(f) for f in fleets.values())]
    assert never == sorted(only_elsewhere)
    assert all(not c.not_applying(only_elsewhere[c.id]) for c in CHECKS if c.id in only_elsewhere)
    smoke = {c.id for c in CHECKS if not c.not_applying(fleets["smoke"])}
    # smoke: one Batch node on demand, one endpoint with a hot GPU variant and its failover, the cost monitors
    assert {"batch-compute-environment", "node-fetch", "utilisation-metric", "failover-timing",
            "scalable-target-right", "execution-role-source-arn"} <= smoke
    assert not smoke & {"batch-capacity-block", "capacity-block-fee", "eks-pins", "pool-rbac", "invocations-shape",
                        "shadow-sampling", "standing-alarm-rollback", "mnp-interface-card", "gpu-move-submit",
                        "data-exports-delivery", "hub-copy"}


def test_list_json_names_every_check_without_credentials(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["checks"]
    assert sorted(c["id"] for c in listed) == sorted(doc_ids())
    assert {c["id"] for c in listed if c["read_only"]} == {c.id for c in CHECKS if c.run}
    assert all(c["permission"] for c in listed if c["read_only"])  # what the caller needs, before a run


def test_an_unknown_check_is_refused_naming_the_known_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--list", "--check", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--check" in err and "'nope'" in err and "batch-capacity-block" in err


def test_without_credentials_verify_exits_2_in_one_line(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import boto3

    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)  # a session an earlier test made keeps its credentials
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert main(["verify", "-c", str(ROOT / "config" / "dev.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "AWS credentials" in err

"""``neuronfleet capacity search|buy|extend|status|list`` against botocore's Stubber (moto has no Capacity Block
purchase): the table, sorting, each policy refusal, confirmation, a purchase tagged and grouped, a retried buy and
extension bought once, status exit codes, bad input named."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber

from neuronfleet.capacity import cli as capacity_cli
from neuronfleet.cli.main import main
from neuronfleet_contract.capacity_lifecycle import FEE_TAG, PURCHASE_TAG
from neuronfleet_contract.tags import FLEET_TAG
from tests.capacity_fixtures import NOW, client, extension, extension_offering, offering, reservation

ROOT = Path(__file__).resolve().parents[2]
PROD_WITHOUT_POLICY = (ROOT / "config" / "prod.yaml").read_text().split("\ncapacity_policy:")[0] + "\n"
"""config/prod.yaml without its capacity_policy section (the tests give their own)."""
GROUP = "arn:aws:resource-groups:us-east-2:333333333333:group/nf-prod-trn2u-blocks"
POLICY = """
capacity_policy:
  max_upfront_fee_usd: 20000
  max_usd_per_instance_hour: 45
  start_after: 2026-11-23T00:00:00Z
  start_before: 2026-12-07T00:00:00Z
  allow_extension: true
  extension_budget_usd: 5000
"""


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    path = tmp_path / "prod.yaml"
    path.write_text(PROD_WITHOUT_POLICY + POLICY)
    return path


@pytest.fixture
def aws(monkeypatch) -> dict[str, Any]:
    ec2, rg, sts, iam = client("ec2"), client("resource-groups"), client("sts"), client("iam")
    stubs = {"ec2": Stubber(ec2), "rg": Stubber(rg), "sts": Stubber(sts), "iam": Stubber(iam)}
    monkeypatch.setattr(capacity_cli, "clients", lambda region: (ec2, ec2, rg))
    monkeypatch.setattr(capacity_cli, "identity_clients", lambda region: (sts, iam))
    monkeypatch.setattr(capacity_cli, "now", lambda: NOW)
    monkeypatch.setattr("neuronfleet_runtime.capacity_block_calls.time.sleep", lambda s: None)
    for s in stubs.values():
        s.activate()
    yield stubs
    for s in stubs.values():
        s.assert_no_pending_responses()
        s.deactivate()


ACCOUNT = "333333333333"
"""config/prod.yaml's account."""


def whoami(aws: dict[str, Stubber], *, account: str = ACCOUNT, aliases: list[str] | None = None,
           alias_error: str | None = None) -> None:
    """STS GetCallerIdentity and IAM ListAccountAliases, as the purchase asks before buying."""
    aws["sts"].add_response("get_caller_identity", {
        "UserId": "AROAEXAMPLE:ml-platform", "Account": account,
        "Arn": f"arn:aws:sts::{account}:assumed-role/ml-platform/alice"}, {})
    if alias_error:
        aws["iam"].add_client_error("list_account_aliases", service_error_code=alias_error, http_status_code=403)
    else:
        aws["iam"].add_response("list_account_aliases", {"AccountAliases": ["nf-prod-account"] if aliases is None
                                                         else aliases, "IsTruncated": False}, {})


YES = ["--yes", "--max-usd", "20000"]


def offers(ec2: Stubber, *docs: dict[str, Any], ultra: bool = True) -> None:
    args: dict[str, Any] = {"CapacityDurationHours": 48, "InstanceType": "trn2u.48xlarge",
                            "UltraserverType": "u-trn2x64", "UltraserverCount": 2} if ultra else \
        {"CapacityDurationHours": 48, "InstanceType": "trn2.48xlarge", "InstanceCount": 4}
    ec2.add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": list(docs)}, args)


def ultra(oid: str, **kw: Any) -> dict[str, Any]:
    return offering(oid, instance_type="trn2u.48xlarge", count=8, ultraserver=("u-trn2x64", 2), **kw)


def test_search_prints_a_sorted_table_with_the_policys_verdict(fleet, aws, capsys):
    offers(aws["ec2"], ultra("cb-dear", fee="19200.00"), ultra("cb-cheap", fee="15360.00"),
           ultra("cb-far", fee="7680.00", az="us-east-2a"))
    assert main(["capacity", "search", "-c", str(fleet), "--cluster", "pretrain", "--hours", "48"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["OFFERING", "INSTANCE", "TYPE", "AZ", "START", "(UTC)", "HOURS", "INSTANCES",
                              "ULTRASERVERS", "UPFRONT", "FEE", "$/INSTANCE-H", "POLICY"]
    assert [line.split()[0] for line in out[2:5]] == ["cb-far", "cb-cheap", "cb-dear"]   # cheapest per instance-hour
    assert out[2].endswith("availability_zones") and out[3].endswith("ok")
    assert "2 x u-trn2x64" in out[3] and "$15,360.00" in out[3] and " 40.00 " in out[3]
    assert out[4].endswith("max_usd_per_instance_hour") and out[5].startswith("POLICY: ok = within")


def test_search_sorts_by_start_and_answers_json(fleet, aws, capsys):
    offers(aws["ec2"], ultra("cb-late", start=NOW + timedelta(days=5)), ultra("cb-soon", start=NOW + timedelta(days=1)))
    assert main(["capacity", "search", "-c", str(fleet), "--cluster", "pretrain", "--hours", "48", "--sort", "start",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [o["offering_id"] for o in doc["offers"]] == ["cb-soon", "cb-late"]
    assert doc["offers"][0]["refusals"] == [] and doc["offers"][0]["usd_per_instance_hour"] == "10.0000"


@pytest.mark.parametrize(("doc", "rule"), [
    (offering("cb-x", fee="25000.00", hours=48, count=4), "max_upfront_fee_usd"),
    (offering("cb-x", fee="9600.00", count=4), "max_usd_per_instance_hour"),  # $50 per instance-hour
    (offering("cb-x", az="us-east-2c"), "availability_zones"),
    (offering("cb-x", start=NOW + timedelta(days=20)), "start_before"),
])
def test_buy_refuses_an_offer_outside_the_policy_naming_the_rule(fleet, aws, capsys, doc, rule):
    offers(aws["ec2"], doc, ultra=False)
    assert main(["capacity", "buy", "-c", str(fleet), "--cluster", "finetune", "--hours", "48", "--offering", "cb-x",
                 *YES]) == 1
    out = capsys.readouterr().out
    assert out.startswith("refused by the fleet's capacity_policy") and f"  - {rule}: the offer's" in out


def _purchase(ec2: Stubber, oid: str, reservations: list[dict[str, Any]], fee: str) -> None:
    ec2.add_response("describe_capacity_reservations", {"CapacityReservations": []},
                     {"Filters": [{"Name": f"tag:{PURCHASE_TAG}", "Values": [oid]}]})
    ec2.add_response("purchase_capacity_block", {"CapacityReservations": reservations}, {
        "CapacityBlockOfferingId": oid, "InstancePlatform": "Linux/UNIX",
        "TagSpecifications": [{"ResourceType": "capacity-reservation", "Tags": [
            {"Key": PURCHASE_TAG, "Value": oid}, {"Key": FLEET_TAG, "Value": "nf-prod"},
            {"Key": FEE_TAG, "Value": fee}]}]})


def test_buy_tags_an_ultraserver_purchase_and_adds_it_to_the_clusters_group(fleet, aws, capsys):
    offers(aws["ec2"], ultra("cb-ok", fee="15360.00"))
    bought = [reservation("cr-u1", instance_type="trn2u.48xlarge"), reservation("cr-u2", instance_type="trn2u.48xlarge")]
    _purchase(aws["ec2"], "cb-ok", bought, "15360.00")
    aws["rg"].add_response("list_group_resources", {"Resources": []}, {"Group": GROUP})
    aws["rg"].add_response("group_resources", {"Succeeded": [r["CapacityReservationArn"] for r in bought]},
                           {"Group": GROUP, "ResourceArns": [r["CapacityReservationArn"] for r in bought]})
    whoami(aws)
    assert main(["capacity", "buy", "-c", str(fleet), "--cluster", "pretrain", "--hours", "48", "--offering",
                 "cb-ok", *YES]) == 0
    captured = capsys.readouterr()
    assert "bought: cr-u1, cr-u2" in captured.out and f"in resource group {GROUP}" in captured.out
    assert "account: 333333333333 (alias: nf-prod-account)" in captured.err and "region:  us-east-2" in captured.err
    assert "total:   $15,360.00 USD, paid up front, no refund" in captured.err


def test_buy_shows_whose_money_and_buys_nothing_unless_the_account_or_price_is_typed_back(fleet, aws, capsys,
                                                                                           monkeypatch):
    """Finding 2: the command never said which account the credentials belong to, and a y/N was all it asked."""
    offers(aws["ec2"], ultra("cb-ok", fee="15360.00"))
    whoami(aws)
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("y\n"))
    assert main(["capacity", "buy", "-c", str(fleet), "--cluster", "pretrain", "--hours", "48", "--offering",
                 "cb-ok"]) == 0
    captured = capsys.readouterr()
    assert "Buy Capacity Block cb-ok: 8 x trn2u.48xlarge (2 x u-trn2x64)" in captured.err
    assert "account: 333333333333 (alias: nf-prod-account)" in captured.err
    assert "as:      arn:aws:sts::333333333333:assumed-role/ml-platform/alice" in captured.err
    assert "Type the account id (333333333333) or the exact price (15360.00) to buy" in captured.err
    assert captured.out.strip() == "not bought: not confirmed (typed 'y'; expected 333333333333 or 15360.00)"


@pytest.mark.parametrize("typed", ["333333333333", "3840.00"])
def test_typing_the_account_id_or_the_price_back_buys(fleet, aws, capsys, monkeypatch, typed):
    offers(aws["ec2"], offering("cb-ok", fee="3840.00"), ultra=False)
    whoami(aws, aliases=[])
    _purchase(aws["ec2"], "cb-ok", [reservation("cr-1")], "3840.00")
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(typed + "\n"))
    assert main(["capacity", "buy", "-c", str(fleet), "--cluster", "finetune", "--hours", "48", "--offering",
                 "cb-ok"]) == 0
    captured = capsys.readouterr()
    assert "bought: cr-1" in captured.out and "(alias: none set)" in captured.err


def test_a_denied_alias_read_is_said_and_does_not_stop_the_purchase(fleet, aws, capsys):
    offers(aws["ec2"], offering("cb-ok"), ultra=False)
    whoami(aws, alias_error="AccessDenied")
    _purchase(aws["ec2"], "cb-ok", [reservation("cr-1")], "3840.00")
    assert main(["capacity", "buy", "-c", str(fleet), "--cluster", "finetune", "--hours", "48", "--offering",
                 "cb-ok", *YES]) == 0
    assert "(alias: unknown: iam:ListAccountAliases refused (AccessDenied))" in capsys.readouterr().err


def test_credentials_of_another_account_are_refused_before_anything_is_asked(fleet, aws, capsys):
    offers(aws["ec2"], offering("cb-ok"), ultra=False)
    whoami(aws, account="999999999999")
    assert main(["capacity", "buy", "-c", str(fleet), "--cluster", "finetune", "--hours", "48", "--offering",
                 "cb-ok", *YES]) == 2
    err = capsys.readouterr().err
    assert "AWS credentials: got 'account 999999999999'; allowed: credentials of the fleet file's account " \
           "333333333333 (these are arn:aws:sts::999999999999:assumed-role/ml-platform/alice)" in err


def test_yes_needs_max_usd_and_refuses_a_higher_price(fleet, aws, capsys):
    args = ["capacity", "buy", "-c", str(fleet), "--cluster", "finetune", "--hours", "48", "--offering", "cb-ok"]
    assert main([*args, "--yes"]) == 2   # nothing asked of AWS (the Stubbers hold no answer)
    assert "--yes: got 'without --max-usd'; allowed: --yes together with --max-usd AMOUNT" in capsys.readouterr().err
    offers(aws["ec2"], offering("cb-ok", fee="3840.00"), ultra=False)
    whoami(aws)
    assert main([*args, "--yes", "--max-usd", "3839.99"]) == 1   # no purchase answer queued: none made
    assert "not bought: the price $3,840.00 USD exceeds --max-usd $3,839.99" in capsys.readouterr().out


def test_a_retried_buy_finds_the_first_purchase_and_buys_nothing(fleet, aws, capsys):
    offers(aws["ec2"], offering("cb-ok"), ultra=False)
    aws["ec2"].add_response("describe_capacity_reservations", {"CapacityReservations": [
        reservation("cr-1", tags={PURCHASE_TAG: "cb-ok", FLEET_TAG: "nf-prod"})]},
        {"Filters": [{"Name": f"tag:{PURCHASE_TAG}", "Values": ["cb-ok"]}]})
    whoami(aws)
    assert main(["capacity", "buy", "-c", str(fleet), "--cluster", "finetune", "--hours", "48", "--offering",
                 "cb-ok", *YES]) == 0
    assert "already bought (found by its tag): cr-1" in capsys.readouterr().out


def test_buy_without_a_policy_or_with_an_unknown_offering_is_bad_input(tmp_path, fleet, aws, capsys):
    bare = tmp_path / "bare.yaml"
    bare.write_text(PROD_WITHOUT_POLICY)
    assert main(["capacity", "buy", "-c", str(bare), "--cluster", "finetune", "--hours", "48", "--offering",
                 "cb-ok", *YES]) == 2
    assert "capacity_policy: got nothing" in capsys.readouterr().err
    offers(aws["ec2"], offering("cb-ok"), ultra=False)
    assert main(["capacity", "buy", "-c", str(fleet), "--cluster", "finetune", "--hours", "48", "--offering",
                 "cb-nope", *YES]) == 2
    assert "--offering: got 'cb-nope'; allowed: an offering the same search returns now: cb-ok" in \
        capsys.readouterr().err
    assert main(["capacity", "search", "-c", str(fleet), "--cluster", "pretrain", "--hours", "36"]) == 2
    assert "--hours: got 36" in capsys.readouterr().err
    assert main(["capacity", "search", "-c", str(fleet), "--cluster", "pretrain", "--count", "6",
                 "--hours", "48"]) == 2
    assert "--count: got 6; allowed: a multiple of 4" in capsys.readouterr().err


def _block(ec2: Stubber, end_in: timedelta, history: list[dict[str, Any]] | None,
           tags: dict[str, str] | None = None) -> Any:
    start, end = NOW - timedelta(days=2), NOW + end_in
    ec2.add_response("describe_capacity_reservations", {"CapacityReservations": [
        reservation("cr-1", start=start, end=end, state="active",
                    tags={FLEET_TAG: "nf-prod"} if tags is None else tags)]}, {"CapacityReservationIds": ["cr-1"]})
    if history is not None:
        ec2.add_response("describe_capacity_block_extension_history", {"CapacityBlockExtensions": history},
                         {"CapacityReservationIds": ["cr-1"]})
    return start, end


def test_extend_buys_the_cheapest_allowed_extension_once(fleet, aws, capsys):
    start, end = _block(aws["ec2"], timedelta(hours=5), [])
    aws["ec2"].add_response("describe_capacity_block_extension_offerings", {"CapacityBlockExtensionOfferings": [
        extension_offering("cbe-dear", block_start=start, block_end=end, fee="2400.00"),
        extension_offering("cbe-cheap", block_start=start, block_end=end, fee="1920.00")]},
        {"CapacityReservationId": "cr-1", "CapacityBlockExtensionDurationHours": 24})
    aws["ec2"].add_response("describe_capacity_block_extension_history", {"CapacityBlockExtensions": [
        extension("cr-1", "cbe-cheap", start=end)]}, {"CapacityReservationIds": ["cr-1"]})
    whoami(aws)
    assert main(["capacity", "extend", "-c", str(fleet), "--reservation", "cr-1", *YES]) == 0
    captured = capsys.readouterr()
    assert "already extended (in its history): cbe-cheap" in captured.out
    assert "Extend cr-1 (nf-prod) by extension cbe-cheap: 24 h" in captured.err and "$1,920.00 USD" in captured.err


def test_extend_acts_on_the_fleets_reservations_unless_told_otherwise(fleet, aws, capsys):
    """Finding 2: `extend` accepted any reservation of the account."""
    _block(aws["ec2"], timedelta(hours=5), None, tags={FLEET_TAG: "nf-other"})
    assert main(["capacity", "extend", "-c", str(fleet), "--reservation", "cr-1", *YES]) == 2
    err = capsys.readouterr().err
    assert "--reservation: got 'cr-1'; allowed: a reservation of fleet nf-prod: tagged neuronfleet:fleet=nf-prod " \
           "(its tag: nf-other) or named in the fleet file (reservation_id: cr-0123456789abcdef0); " \
           "--any-reservation to extend another" in err
    start, end = _block(aws["ec2"], timedelta(hours=5), [], tags={})
    aws["ec2"].add_response("describe_capacity_block_extension_offerings", {"CapacityBlockExtensionOfferings": [
        extension_offering("cbe-1", block_start=start, block_end=end)]},
        {"CapacityReservationId": "cr-1", "CapacityBlockExtensionDurationHours": 24})
    aws["ec2"].add_response("describe_capacity_block_extension_history", {"CapacityBlockExtensions": [
        extension("cr-1", "cbe-1", start=end)]}, {"CapacityReservationIds": ["cr-1"]})
    whoami(aws)
    assert main(["capacity", "extend", "-c", str(fleet), "--reservation", "cr-1", "--any-reservation", *YES]) == 0
    assert "Extend cr-1 (not the fleet's)" in capsys.readouterr().err


def test_extend_refuses_outside_the_window_naming_the_rule(fleet, aws, capsys):
    start, end = _block(aws["ec2"], timedelta(minutes=50), [])
    aws["ec2"].add_response("describe_capacity_block_extension_offerings", {"CapacityBlockExtensionOfferings": [
        extension_offering("cbe-1", block_start=start, block_end=end)]},
        {"CapacityReservationId": "cr-1", "CapacityBlockExtensionDurationHours": 24})
    assert main(["capacity", "extend", "-c", str(fleet), "--reservation", "cr-1", *YES]) == 1
    assert "extension window: the offer's 50 min before the end; allowed: between 56 days and 1 hour" in \
        capsys.readouterr().out


def test_extend_offering_refuses_an_offer_the_policy_refuses_and_buys_nothing(fleet, aws, capsys):
    """Issue 37's mutant: `--offering` bought an offer the policy refuses. The cheap offer is allowed, the named one
    is not (over the $5000 per-block budget): refused naming the rule, nothing asked, nothing bought (the Stubbers
    have no identity or purchase answer queued)."""
    start, end = _block(aws["ec2"], timedelta(hours=5), [])
    aws["ec2"].add_response("describe_capacity_block_extension_offerings", {"CapacityBlockExtensionOfferings": [
        extension_offering("cbe-cheap", block_start=start, block_end=end, fee="1920.00"),
        extension_offering("cbe-dear", block_start=start, block_end=end, fee="5200.00", hours=24 * 7)]},
        {"CapacityReservationId": "cr-1", "CapacityBlockExtensionDurationHours": 24})
    assert main(["capacity", "extend", "-c", str(fleet), "--reservation", "cr-1", "--offering", "cbe-dear",
                 *YES]) == 1
    out = capsys.readouterr().out
    assert "no extension of cr-1 bought (2 offer(s))" in out
    assert "extension_budget_usd: the offer's fee $5200.00 ($5200.00 with this block's earlier extensions); " \
           "allowed: at most $5000 per block" in out


def test_extend_whose_answer_is_lost_is_not_bought_again_while_ec2_shows_nothing(fleet, aws, capsys):
    """The purchase reached AWS and its answer was lost; every source still shows the old end for as long as the
    command may wait: it buys nothing more and says what to check (exit 1)."""
    from botocore.exceptions import ReadTimeoutError

    start, end = _block(aws["ec2"], timedelta(hours=5), [])
    aws["ec2"].add_response("describe_capacity_block_extension_offerings", {"CapacityBlockExtensionOfferings": [
        extension_offering("cbe-1", block_start=start, block_end=end)]},
        {"CapacityReservationId": "cr-1", "CapacityBlockExtensionDurationHours": 24})
    whoami(aws)

    def nothing_shows() -> None:
        aws["ec2"].add_response("describe_capacity_block_extension_history", {"CapacityBlockExtensions": []},
                                {"CapacityReservationIds": ["cr-1"]})
        _block(aws["ec2"], timedelta(hours=5), None)
        aws["ec2"].add_response("describe_capacity_blocks", {"CapacityBlocks": [
            {"CapacityBlockId": "cb-block-1", "AvailabilityZone": "us-east-2b", "CapacityReservationIds": ["cr-1"],
             "StartDate": start, "EndDate": end, "State": "active"}]}, {"CapacityBlockIds": ["cb-block-1"]})

    nothing_shows()
    aws["ec2"].add_response("purchase_capacity_block_extension", {"CapacityBlockExtensions": [
        extension("cr-1", "cbe-1", start=end)]}, None)
    ec2 = aws["ec2"].client
    real = ec2.purchase_capacity_block_extension
    bought: list[str] = []

    def lost(**kwargs):
        bought.append(kwargs["CapacityBlockExtensionOfferingId"])
        real(**kwargs)
        raise ReadTimeoutError(endpoint_url="https://ec2.us-east-2.amazonaws.com")

    ec2.purchase_capacity_block_extension = lost
    for _ in range(8):   # looks at 0, 2, 6, ... 254 s; the clock (tests: not moving) never passes the window
        nothing_shows()
    assert main(["capacity", "extend", "-c", str(fleet), "--reservation", "cr-1", *YES]) == 1
    err = capsys.readouterr().err
    assert bought == ["cbe-1"] and "no second attempt before" in err
    assert "describe-capacity-block-extension-history --capacity-reservation-ids cr-1" in err


def _fleet_blocks(aws: dict[str, Stubber]) -> None:
    """The fleet's blocks: cb-block-1 by its fleet tag; cb-pasted holds finetune's reservation (pasted into the fleet
    file); the pretrain group's member cr-u1 is cb-block-1's."""
    aws["ec2"].add_response("describe_capacity_blocks", {"CapacityBlocks": [
        {"CapacityBlockId": "cb-block-1", "UltraserverType": "u-trn2x64", "AvailabilityZone": "us-east-2b",
         "CapacityReservationIds": ["cr-u1"], "StartDate": NOW, "EndDate": NOW + timedelta(days=2),
         "State": "active"}]}, {"Filters": [{"Name": f"tag:{FLEET_TAG}", "Values": ["nf-prod"]}]})
    u1 = reservation("cr-u1", instance_type="trn2u.48xlarge", block_id="cb-block-1")
    aws["rg"].add_response("list_group_resources", {"Resources": [{"Identifier": {
        "ResourceArn": u1["CapacityReservationArn"], "ResourceType": "AWS::EC2::CapacityReservation"}}]},
        {"Group": GROUP})
    aws["ec2"].add_response("describe_capacity_reservations", {"CapacityReservations": [
        reservation("cr-0123456789abcdef0", block_id="cb-pasted"), u1]},
        {"CapacityReservationIds": ["cr-0123456789abcdef0", "cr-u1"]})
    aws["ec2"].add_response("describe_capacity_blocks", {"CapacityBlocks": [
        {"CapacityBlockId": "cb-pasted", "AvailabilityZone": "us-east-2b", "CapacityReservationIds":
         ["cr-0123456789abcdef0"], "StartDate": NOW - timedelta(days=1), "EndDate": NOW + timedelta(days=1),
         "State": "active"}]}, {"CapacityBlockIds": ["cb-pasted"]})


def test_list_shows_the_fleets_blocks_tagged_or_named_and_when_their_instances_stop(fleet, aws, capsys):
    _fleet_blocks(aws)
    assert main(["capacity", "list", "-c", str(fleet)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[1:]] == ["cb-pasted", "cb-block-1"]   # by start
    assert "2026-11-25 12:00" in out[2] and "2026-11-25 11:00" in out[2]          # UltraServer: stops 60 min before
    assert "2026-11-24 12:00" in out[1] and "2026-11-24 11:30" in out[1]          # instance block: 30 min


def test_status_exits_1_on_an_impaired_interconnect(fleet, aws, capsys):
    _fleet_blocks(aws)
    aws["ec2"].add_response("describe_capacity_block_status", {"CapacityBlockStatuses": [
        {"CapacityBlockId": "cb-block-1", "InterconnectStatus": "impaired", "TotalCapacity": 8,
         "TotalAvailableCapacity": 6, "TotalUnavailableCapacity": 2}]}, {"CapacityBlockIds": ["cb-pasted", "cb-block-1"]})
    assert main(["capacity", "status", "-c", str(fleet)]) == 1
    assert "cb-block-1: interconnect impaired, 6 of 8 available, 2 unavailable" in capsys.readouterr().out


def test_an_aws_refusal_is_one_line_and_exit_1(fleet, aws, capsys):
    aws["ec2"].add_client_error("describe_capacity_block_offerings", service_error_code="UnauthorizedOperation",
                                service_message="You are not authorized", http_status_code=403)
    assert main(["capacity", "search", "-c", str(fleet), "--cluster", "pretrain", "--hours", "48"]) == 1
    err = capsys.readouterr().err
    assert "neuronfleet capacity: AWS: An error occurred (UnauthorizedOperation)" in err and "Traceback" not in err


def test_a_group_add_that_fails_is_said_and_a_retried_buy_completes_it_without_buying_again(fleet, aws, capsys):
    bought = [reservation("cr-u1", instance_type="trn2u.48xlarge",
                          tags={PURCHASE_TAG: "cb-ok", FLEET_TAG: "nf-prod", FEE_TAG: "15360.00"})]
    arn = bought[0]["CapacityReservationArn"]
    offers(aws["ec2"], ultra("cb-ok", fee="15360.00"))
    _purchase(aws["ec2"], "cb-ok", bought, "15360.00")
    aws["rg"].add_response("list_group_resources", {"Resources": []}, {"Group": GROUP})
    aws["rg"].add_response("group_resources", {"Failed": [{"ResourceArn": arn, "ErrorCode": "InternalError",
                                                          "ErrorMessage": "try again"}]},
                           {"Group": GROUP, "ResourceArns": [arn]})
    args = ["capacity", "buy", "-c", str(fleet), "--cluster", "pretrain", "--hours", "48", "--offering", "cb-ok",
            *YES]
    whoami(aws)
    assert main(args) == 1
    assert "NOT all added to the resource group: " + arn + ": InternalError try again" in capsys.readouterr().out
    offers(aws["ec2"], ultra("cb-ok", fee="15360.00"))            # the retry: found by its tag, then grouped
    aws["ec2"].add_response("describe_capacity_reservations", {"CapacityReservations": bought},
                            {"Filters": [{"Name": f"tag:{PURCHASE_TAG}", "Values": ["cb-ok"]}]})
    aws["rg"].add_response("list_group_resources", {"Resources": []}, {"Group": GROUP})
    aws["rg"].add_response("group_resources", {"Succeeded": [arn]}, {"Group": GROUP, "ResourceArns": [arn]})
    whoami(aws)
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "already bought (found by its tag): cr-u1" in out and f"in resource group {GROUP}" in out


def test_an_instance_block_joins_the_group_its_cluster_targets(tmp_path, aws, capsys):
    group = "arn:aws:resource-groups:us-east-2:333333333333:group/nf-prod-trn2-blocks"
    path = tmp_path / "grouped.yaml"
    path.write_text((PROD_WITHOUT_POLICY + POLICY).replace("reservation_id: cr-0123456789abcdef0",
                                                           f"resource_group_arn: {group}"))
    offers(aws["ec2"], offering("cb-ok"), ultra=False)
    bought = [reservation("cr-1")]
    _purchase(aws["ec2"], "cb-ok", bought, "3840.00")
    aws["rg"].add_response("list_group_resources", {"Resources": []}, {"Group": group})
    aws["rg"].add_response("group_resources", {"Succeeded": [bought[0]["CapacityReservationArn"]]},
                           {"Group": group, "ResourceArns": [bought[0]["CapacityReservationArn"]]})
    whoami(aws)
    assert main(["capacity", "buy", "-c", str(path), "--cluster", "finetune", "--hours", "48", "--offering", "cb-ok",
                 *YES]) == 0
    assert f"in resource group {group}" in capsys.readouterr().out

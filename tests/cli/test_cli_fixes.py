"""Defects a first user met (the walkthrough of 2026-11-23), each pinned: the help's own
examples are accepted, a fix prints what a user can paste, numbers read the right way round."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal

import click
import pytest

from neuronfleet import CATALOG
from neuronfleet.cli.main import main
from neuronfleet.cli.output import Moment

ISO = re.compile(r"\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?)?(?:Z|[+-]\d\d:\d\d)?")


def test_capacity_search_accepts_the_start_times_its_help_shows(capsys) -> None:
    assert main(["capacity", "search", "--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    examples = ISO.findall(help_text)
    assert "2026-12-01T00:00" in examples and len(examples) >= 3, help_text
    from neuronfleet.capacity.cli import search

    for example in examples:
        ctx = search.make_context("search", ["-c", "x.yaml", "--hours", "24", "--start-after", example,
                                             "--end-before", example])
        assert ctx.params["start_after"].tzinfo is UTC, example
    assert "(a zone, or UTC when none is given)" in help_text


@pytest.mark.parametrize(("text", "expected"), [
    ("2026-12-01T00:00", datetime(2026, 12, 1, tzinfo=UTC)),
    ("2026-12-01", datetime(2026, 12, 1, tzinfo=UTC)),
    ("2026-12-01T00:00:30", datetime(2026, 12, 1, 0, 0, 30, tzinfo=UTC)),
    ("2026-12-01 06:00", datetime(2026, 12, 1, 6, tzinfo=UTC)),
    ("2026-12-01T00:00:00Z", datetime(2026, 12, 1, tzinfo=UTC)),
    ("2026-12-01T09:00+09:00", datetime(2026, 12, 1, tzinfo=UTC)),
])
def test_a_moment_is_iso_8601_with_or_without_seconds_or_a_zone(text, expected) -> None:
    assert Moment().convert(text, None, None) == expected


def test_a_bad_moment_names_the_value_and_what_is_allowed() -> None:
    with pytest.raises(click.BadParameter) as info:
        Moment().convert("next tuesday", None, None)
    assert "got 'next tuesday'; allowed: an ISO 8601 date or time, e.g. 2026-12-01" in str(info.value)
    assert "(no zone: UTC)" in str(info.value)


def _login_example() -> str:
    """aws-cli's get-login-password example piped to docker login (copied verbatim, tests/data/aws_cli), one line."""
    from tests.conftest import ROOT

    text = (ROOT / "tests" / "data" / "aws_cli" / "ecr-get-login-password.rst").read_text()
    block = text[text.index("    aws ecr get-login-password \\"):text.index("For more information")]
    return " ".join(block.replace("\\", " ").split())


def test_a_dlc_images_check_by_hand_names_its_registry_and_logs_docker_in() -> None:
    """Pasted as printed, `docker manifest inspect huggingface-vllm-...:tag` asked Docker Hub: the fix now carries the
    region's DLC registry host and the login line aws-cli's example gives."""
    import boto3
    from botocore.stub import Stubber

    from neuronfleet import load_fleet
    from neuronfleet.preflight.account import Account
    from neuronfleet.preflight.checks import image_check_by_hand, image_lines
    from neuronfleet.preflight.needs import needs_of
    from tests.conftest import ROOT

    needs = needs_of(load_fleet(ROOT / "config" / "prod.yaml"))
    dlc = next(n.reference for n in needs.images if "/" not in n.reference.split(":", 1)[0])
    host = "763104351884.dkr.ecr.us-east-2.amazonaws.com"  # aws-cdk-lib's DLC account of us-east-2
    login = _login_example().replace("<aws_account_id>.dkr.ecr.<region>.amazonaws.com", host).replace(
        "<region>", "us-east-2")
    assert login.startswith("aws ecr get-login-password --region us-east-2 | docker login --username AWS")
    assert image_check_by_hand(dlc, "us-east-2", "763104351884") == f"{login} && docker manifest inspect {host}/{dlc}"
    client = boto3.client("ecr", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(client) as stub:
        stub.add_client_error("batch_get_image", "AccessDeniedException", "not authorized to perform ecr:BatchGetImage")
        got = Account("us-east-2", client=lambda *_: client, dlc_account=lambda _r: "763104351884").image(dlc)
    (line,) = [x for x in image_lines(needs, {dlc: got}, "763104351884") if x.check.endswith(dlc)]
    assert line.status == "unchecked" and line.fix.endswith(f"docker manifest inspect {host}/{dlc}")
    assert f"--password-stdin {host} " in line.fix and "allow ecr:BatchGetImage" in line.fix
    # a private ECR image keeps its own registry; ECR Public needs no login
    own = "111122223333.dkr.ecr.eu-west-1.amazonaws.com/team/train:v1"
    assert image_check_by_hand(own, "us-east-2").startswith(
        "aws ecr get-login-password --region eu-west-1 | docker login --username AWS --password-stdin "
        "111122223333.dkr.ecr.eu-west-1.amazonaws.com && docker manifest inspect " + own)
    public = "public.ecr.aws/neuron/x:1"
    assert image_check_by_hand(public, "us-east-2") == f"docker manifest inspect {public}"


def _estimate(tmp_path, capsys, rows: str, *args: str) -> str:
    path = tmp_path / "spend.csv"
    path.write_text("instance_type,amount_usd,hours,workload\n" + rows)
    assert main(["estimate", str(path), *args]) == 0
    return str(capsys.readouterr().out)


def test_an_estimate_that_costs_more_says_so_and_by_how_much(tmp_path, capsys) -> None:
    """Was 'saves $-17.87, -1.14%'. p5.48xlarge -> trn2.48xlarge at the catalog's prices; --ratio 2 (Neuron instances
    per GPU instance, the fleet file's unit) doubles the Neuron hours, so the move costs more."""
    from neuronfleet.facts.prices import price_table

    table = price_table(CATALOG, "us-east-2", {})
    trn2, p5 = (Decimal(str(table[t]["usd_per_hour"])) for t in ("trn2.48xlarge", "p5.48xlarge"))
    out = _estimate(tmp_path, capsys, "p5.48xlarge,5504.00,100,training\n", "--ratio", "2")
    neuron = 100 * 2 * trn2
    more = neuron - Decimal("5504.00")
    assert more > 0
    (total,) = [line for line in out.splitlines() if line.startswith("total of the declared lines:")]
    assert "saves" not in total and "$-" not in total
    even = p5 / trn2  # the GPU hourly price over the Neuron one: Neuron instances per GPU instance
    assert total.endswith(f"(costs ${more:.2f} more, {more * 100 / Decimal('5504.00'):.2f}% more: break-even at "
                          f"{even:.2f} Neuron instances per GPU instance for every declared line; fewer would save)")
    saving = _estimate(tmp_path, capsys, "p5.48xlarge,5504.00,100,training\n")
    (total,) = [line for line in saving.splitlines() if line.startswith("total of the declared lines:")]
    assert f"(saves ${Decimal('5504.00') - 100 * trn2:.2f}, " in total and f"break-even at {even:.2f} Neuron" in total


def test_an_empty_export_claims_no_throughput_assumption(tmp_path, capsys) -> None:
    out = _estimate(tmp_path, capsys, "")
    assert "no GPU line could be estimated" in out and "--ratio" not in out and "assumption" not in out


def test_a_type_outside_the_catalog_is_said_to_be_missing_from_it_not_a_price(tmp_path, capsys) -> None:
    out = _estimate(tmp_path, capsys, "ml.g4dn.xlarge,36.29,24,inference\n")
    assert "g4dn.xlarge: accelerator memory unknown (not in the instance catalog)" in out
    assert "--price" not in out
    assert "a price does not help" in out and "g5.xlarge" in out and "docs/catalog.md" in out


def test_validate_names_the_choices_of_a_missing_choice_field_and_what_region_allows(tmp_path, capsys) -> None:
    path = tmp_path / "only-name.yaml"
    path.write_text("name: x\n")
    assert main(["validate", "-c", str(path)]) == 2
    err = capsys.readouterr().err
    assert "phase: got nothing (the field is required); allowed: 'evaluation', 'pilot' or 'production'" in err
    assert "region: got nothing (the field is required); allowed: an AWS region, e.g. " in err
    assert "allowed: a value" not in err and "allowed: text" not in err


def test_every_choice_field_of_every_settings_class_lists_its_choices() -> None:
    """Fixed once, where a missing field's allowed text is written (settings._base.describe): every Literal field."""
    import typing

    from pydantic import BaseModel

    from neuronfleet.fleetfile.schema import Fleet
    from neuronfleet.settings._base import Settings, _unwrap, choices_text, describe

    def models(cls: type) -> list[type[BaseModel]]:
        out = [cls] if issubclass(cls, BaseModel) else []
        return out + [m for sub in cls.__subclasses__() for m in models(sub)]

    seen = 0
    for model in {*models(Settings), Fleet}:
        for name, info in model.model_fields.items():
            ann = _unwrap(info.annotation)
            if typing.get_origin(ann) is typing.Literal:
                assert describe(model, (name,)) == choices_text(typing.get_args(ann)), (model, name)
                seen += 1
    assert seen >= 10
    assert choices_text(["evaluation", "pilot", "production"]) == "'evaluation', 'pilot' or 'production'"


def test_a_typod_key_is_answered_with_the_key_it_resembles(tmp_path, capsys) -> None:
    from tests.conftest import ROOT

    path = tmp_path / "typo.yaml"
    text = (ROOT / "config" / "dev.yaml").read_text()
    assert "\n    count: 1\n" in text
    path.write_text(text.replace("\n    count: 1\n", "\n    cuont: 4\n"))
    assert main(["validate", "-c", str(path)]) == 2
    err = capsys.readouterr().err
    assert "training_clusters[0].cuont: got 4; allowed: no key 'cuont' here (did you mean 'count'?); known keys: " \
        in err
    far = tmp_path / "far.yaml"
    far.write_text(text.replace("\n    count: 1\n", "\n    count: 1\n    zzzzzz: 4\n"))
    assert main(["validate", "-c", str(far)]) == 2
    assert "no key 'zzzzzz' here; known keys" in capsys.readouterr().err  # nothing close: no guess


def test_a_key_suggestion_needs_a_close_key() -> None:
    from neuronfleet.core.rules import close_matches

    keys = ["availability_zones", "training_az", "cidr", "nat_gateways"]
    assert close_matches("vpc_id", keys, n=1, cutoff=0.75) == ""  # difflib's 0.6 would say 'cidr'
    assert close_matches("nat_gateway", keys, n=1, cutoff=0.75) == "nat_gateways"


@pytest.mark.parametrize(("content", "line"), [
    ("{}", "{path}: schema: got nothing (the field is required); allowed: 'neuronfleet.judge.verdict/1', the schema "
           "of the judge's verdict records (latest.json)"),
    ('{"schema": "neuronfleet.judge.verdict/1"}', "{path}: endpoint: got nothing (the field is required); allowed: a "
                                                  "verdict record as the judge writes it"),
    ("[1]", "{path}: got a JSON list; allowed: a verdict record"),
    ("{x", "{path}: got no JSON (Expecting property name enclosed in double quotes, line 1); allowed: a verdict"),
    (b"\xff", "{path}: got bytes that are not UTF-8 text; allowed: a verdict record"),
])
def test_a_bad_verdict_record_is_one_error_not_one_wrapped_in_another(tmp_path, capsys, content, line) -> None:
    """Was: `neuronfleet: neuronfleet judge verdict: v.json: got 'schema: got None; allowed: ...'; allowed: ...`."""
    path = tmp_path / "v.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    assert main(["judge", "verdict", str(path)]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert err.startswith("neuronfleet: judge verdict: " + line.format(path=path)), err
    assert err.count("neuronfleet") == 2 and err.count("got ") == 1 and err.count("allowed:") == 1  # 'neuronfleet.judge'

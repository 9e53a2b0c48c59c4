"""Capacity Block fees belong to the fleet whose clusters target the block (tests/unit/test_block_attribution.py):
the prod fleet's collector is given the fleet's reservation groups and may list their members."""

from __future__ import annotations

import json

from neuronfleet_contract.environment import prefixed_strings


def test_the_prod_collector_knows_the_pretrain_group_and_may_list_it(synth_fleet) -> None:
    prod = synth_fleet("prod")
    cost = prod.template_json("cost")["Resources"]
    (env,) = [r["Properties"]["Environment"]["Variables"] for r in cost.values()
              if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["Handler"] == "cost.collector.handler"]
    groups = {c.capacity.resource_group_arn for c in prod.fleet.training_clusters if c.capacity.resource_group_arn}
    assert groups and set(prefixed_strings(json.loads(env["FLEET_RESERVATION_GROUPS"]))) == groups
    statements = [s for r in cost.values() if r["Type"] == "AWS::IAM::Policy"
                  for s in r["Properties"]["PolicyDocument"]["Statement"]]
    (listing,) = [s for s in statements if s["Action"] == "resource-groups:ListGroupResources"]
    assert sorted([listing["Resource"]] if isinstance(listing["Resource"], str) else listing["Resource"]) == \
        sorted(groups)

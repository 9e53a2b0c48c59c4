"""Batch transform spend (issue 43): the cost rows and the Athena query count a transform job's instance-hours as
``sagemaker-transform`` (inference) under either usage type the kit cannot yet tell apart: ``Tsform:`` (third-party
quotes of SageMaker's billing) and ``Transform:`` (the kit's earlier guess); docs/checks.md transform-usage-type."""

from __future__ import annotations

import re

import pytest

from neuronfleet.lambdas.cost.logic.rows import WORKLOAD, usage_of
from neuronfleet_contract.cur import QUERIES


@pytest.mark.parametrize("usage_type", ["USE2-Tsform:ml.inf2.xlarge", "USE2-Transform:ml.inf2.xlarge",
                                        "Tsform:ml.inf2.xlarge"])
def test_a_transform_jobs_hours_are_inference_spend_by_type(usage_type: str) -> None:
    assert usage_of(usage_type) == ("sagemaker-transform", "ml.inf2.xlarge")
    assert WORKLOAD["sagemaker-transform"] == "inference"


def test_the_athena_query_reads_both_usage_types_as_transform() -> None:
    sql = QUERIES["spend_by_fleet_family_kind_day"]

    def kind(usage_type: str) -> str:
        """The query's CASE on line_item_usage_type, read in order (SQL LIKE: % is any run of characters)."""
        for cond, value in re.findall(r"WHEN (.+?)\s+THEN '([a-z-]+)'", sql, re.S):
            likes = re.findall(r"line_item_usage_type LIKE '([^']+)'", cond)
            if likes and any(re.fullmatch(re.escape(p).replace("%", ".*"), usage_type) for p in likes):
                return value
        return "ec2"

    assert kind("USE2-Tsform:ml.inf2.xlarge") == kind("USE2-Transform:ml.trn1.2xlarge") == "sagemaker-transform"
    assert kind("USE2-Host:ml.inf2.xlarge") == "sagemaker-hosting"

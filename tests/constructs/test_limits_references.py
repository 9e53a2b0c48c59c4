"""CloudFormationLimits sizes a reference by what it refers to, across the stacks of an app (tests/unit/
test_reference_sizes.py pins the sizes)."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_the_plugin_sizes_imports_across_the_stacks_of_an_app(tmp_path: Path) -> None:
    """An app whose second stack's function imports 15 topic ARNs from the first: CloudFormationLimits refuses it
    (at 64 characters per reference it passed)."""
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_sns as sns

    from neuronfleet import CloudFormationLimits

    app = cdk.App(outdir=str(tmp_path))
    limits = CloudFormationLimits(app)
    alerts = cdk.Stack(app, "Alerts")
    topics = [sns.Topic(alerts, f"T{i:02d}") for i in range(15)]
    work = cdk.Stack(app, "Work")
    lambda_.Function(work, "Fn", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                     code=lambda_.Code.from_inline("def handler(e, c): pass"),
                     environment={f"T{i:02d}": t.topic_arn for i, t in enumerate(topics)})
    refused = r"ValidationFailed: ERROR Work\.Fn\w+: got '4,635 bytes of environment'.*T00 \(306\)"
    with pytest.raises(RuntimeError, match=refused):
        app.synth()
    (problem,) = limits.problems
    assert problem.rule == "lambda-environment-size" and problem.path.startswith("Work.Fn")

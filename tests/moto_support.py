"""moto as it is (DESIGN.md): its gaps handled honestly, in one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import botocore.session
from moto.sagemaker import models as sagemaker_models


def botocore_variant_instance_types() -> frozenset[str]:
    """Every ProductionVariantInstanceType in botocore's SageMaker service model (AWS's own list)."""
    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("ProductionVariantInstanceType").enum)


@contextmanager
def sagemaker_instance_types_from_botocore() -> Iterator[None]:
    """moto's endpoint-config instance-type list lags AWS (it rejects ml.inf2.*). Accept exactly the types in
    botocore's service model as well; anything else still gets moto's own validation error."""
    original = sagemaker_models.FakeEndpointConfig.validate_instance_type
    valid = botocore_variant_instance_types()

    def validate(self: sagemaker_models.FakeEndpointConfig, instance_type: str) -> None:
        if instance_type not in valid:
            original(self, instance_type)

    sagemaker_models.FakeEndpointConfig.validate_instance_type = validate  # type: ignore[method-assign]
    try:
        yield
    finally:
        sagemaker_models.FakeEndpointConfig.validate_instance_type = original  # type: ignore[method-assign]

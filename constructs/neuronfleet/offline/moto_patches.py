"""The moto process the kit deploys into, and the two places where moto's SageMaker is patched.

Each patch is scoped by a context manager and restored afterwards; neither loosens a check: unknown instance
types still fail, and names are taken exactly from the template, as CloudFormation takes them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

DEFAULT_REGION = "us-east-1"
"""Where an environment-agnostic stack goes when neither ``region`` nor AWS_DEFAULT_REGION says otherwise."""

_FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                     "AWS_SESSION_TOKEN": "testing"}
# variables that would send boto3 elsewhere (a real profile, a real endpoint) while moto is active
_UNSET = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")


def moto_default_account() -> str:
    """The account moto serves when nothing chooses another: MOTO_ACCOUNT_ID, else moto's default."""
    from moto.core import DEFAULT_ACCOUNT_ID

    return os.environ.get("MOTO_ACCOUNT_ID") or str(DEFAULT_ACCOUNT_ID)


@contextmanager
def offline_aws(*, account: str | None = None, region: str | None = None) -> Iterator[None]:
    """An embedded moto (``moto.mock_aws()``) serving ``account`` in ``region``, as the kit uses it.

    Sets MOTO_ACCOUNT_ID (default: moto's default account), AWS_DEFAULT_REGION (default: us-east-1) and fake
    credentials, unsets the variables that could reach a real account (AWS_PROFILE, AWS_ENDPOINT_URL, ...),
    and accepts botocore's SageMaker instance types (``sagemaker_instance_types_from_botocore``). Everything
    is restored on exit; moto's state is dropped. The environment is process-wide: one at a time.

        with offline_aws(account="111111111111", region="us-east-2"):
            result = deploy_assembly("cdk.out")
    """
    from moto import mock_aws

    env = {**_FAKE_CREDENTIALS, "MOTO_ACCOUNT_ID": account or moto_default_account(),
           "AWS_DEFAULT_REGION": region or DEFAULT_REGION}
    saved = {k: os.environ.get(k) for k in (*env, *_UNSET)}
    os.environ.update(env)
    for key in _UNSET:
        os.environ.pop(key, None)
    try:
        with ExitStack() as stack:
            stack.enter_context(mock_aws())
            stack.enter_context(sagemaker_instance_types_from_botocore())
            yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def moto_active() -> bool:
    """True inside ``moto.mock_aws()`` (boto3 calls go to moto, not to AWS)."""
    from moto.core.models import MockAWS

    return bool(getattr(MockAWS, "_mocks_active", True))


def moto_supported_types() -> frozenset[str]:
    """The resource types moto's CloudFormation creates; it skips every other type."""
    from moto.cloudformation.parsing import get_model_map

    return frozenset(get_model_map())


def botocore_variant_instance_types() -> frozenset[str]:
    """Every ProductionVariantInstanceType in botocore's SageMaker service model (AWS's own list)."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("ProductionVariantInstanceType").enum)


@contextmanager
def sagemaker_instance_types_from_botocore(on_extended: Callable[[str], None] | None = None) -> Iterator[None]:
    """moto's endpoint-config instance-type list lags AWS (it rejects ml.inf2.*). Accept exactly the types
    in botocore's service model as well; anything else still gets moto's own validation error.

    ``on_extended`` is called with each type that only botocore's list let through. Nests: an inner patch
    still sees moto's own validation."""
    from moto.sagemaker import models

    current = models.FakeEndpointConfig.validate_instance_type
    own: Callable[[Any, str], None] = getattr(current, "moto_own", current)
    valid = botocore_variant_instance_types()

    def validate(self: Any, instance_type: str) -> None:
        try:
            own(self, instance_type)
        except Exception:
            if instance_type not in valid:
                raise
            if on_extended is not None:
                on_extended(instance_type)

    validate.moto_own = own  # type: ignore[attr-defined]
    models.FakeEndpointConfig.validate_instance_type = validate  # type: ignore[method-assign]
    try:
        yield
    finally:
        models.FakeEndpointConfig.validate_instance_type = current  # type: ignore[method-assign]


SAGEMAKER_NAME_PROPERTIES = {"AWS::SageMaker::Endpoint": "EndpointName",
                             "AWS::SageMaker::EndpointConfig": "EndpointConfigName",
                             "AWS::SageMaker::Model": "ModelName"}
"""The name property CloudFormation creates each SageMaker resource with (moto ignores it)."""


@contextmanager
def sagemaker_names_from_template() -> Iterator[None]:
    """moto's CloudFormation names SageMaker endpoints, endpoint configs and models ``<stack>-<logical id>-<random>``
    even when the template names them (its ``cloudformation_name_type`` is empty), so an endpoint's name differs
    from the stack output and from every alarm, dashboard and function setting that uses it. Tell moto the name
    property CloudFormation uses; without one in the template, moto still generates a name, as CloudFormation does."""
    from moto.sagemaker import models

    classes: dict[str, Any] = {"AWS::SageMaker::Endpoint": models.FakeEndpoint,
                                "AWS::SageMaker::EndpointConfig": models.FakeEndpointConfig,
                                "AWS::SageMaker::Model": models.Model}
    saved = {kind: cls.__dict__["cloudformation_name_type"] for kind, cls in classes.items()}
    for kind, cls in classes.items():
        cls.cloudformation_name_type = staticmethod(lambda name=SAGEMAKER_NAME_PROPERTIES[kind]: name)
    try:
        yield
    finally:
        for kind, cls in classes.items():
            cls.cloudformation_name_type = saved[kind]

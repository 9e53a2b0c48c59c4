"""Deploy a synthesised cloud assembly into moto: the offline half of the test kit.

Needs the ``test`` extra (moto, boto3)::

    from neuronfleet.offline import deploy_assembly, offline_aws

    with offline_aws(account="111111111111", region="us-east-2"):   # moto serving the fleet's account
        result = deploy_assembly("cdk.out")                           # every stack, dependencies first
        assert result.ok, [(s.name, s.reason) for s in result.stacks]

Any assembly deploys: a stack synthesised for an environment goes into its own account and region; an
environment-agnostic one into ``deploy_assembly(account=..., region=...)``, else moto's account and
AWS_DEFAULT_REGION, else us-east-1 (``DEFAULT_REGION``). A stack for an account moto is not serving is
refused with a ValueError that says what to pass. Each ``StackResult`` names its account and region.

moto is taken as it is (docs/DESIGN.md) and every gap is stood in for explicitly and reported once in the
result: CDK's bootstrap version parameter and asset buckets are created and the assets uploaded; public
SSM AMI parameters moto lacks are set to one of moto's AMIs; moto's lagging SageMaker instance-type list
is extended with exactly botocore's; SageMaker resources get the template's names (moto would generate
its own); and ``Fn::GetAtt`` on a type moto skips becomes a placeholder (template tests cover those
resources). Warnings and moto's log messages raised meanwhile are in ``result.warnings``, not printed.
"""

from neuronfleet.offline.deploy import BOOTSTRAP_VERSION, DeployResult, StackResult, deploy_assembly
from neuronfleet.offline.moto_patches import (
    DEFAULT_REGION,
    botocore_variant_instance_types,
    moto_default_account,
    moto_supported_types,
    offline_aws,
    sagemaker_instance_types_from_botocore,
    sagemaker_names_from_template,
)
from neuronfleet.offline.server import SERVER_GAPS, MotoServer, moto_server

__all__ = [
    "BOOTSTRAP_VERSION",
    "DEFAULT_REGION",
    "SERVER_GAPS",
    "DeployResult",
    "MotoServer",
    "StackResult",
    "botocore_variant_instance_types",
    "deploy_assembly",
    "moto_default_account",
    "moto_server",
    "moto_supported_types",
    "offline_aws",
    "sagemaker_instance_types_from_botocore",
    "sagemaker_names_from_template",
]

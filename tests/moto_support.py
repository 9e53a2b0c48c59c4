"""moto as it is (DESIGN.md): the gap handling lives in the library (neuronfleet.offline), shared with the demo."""

from __future__ import annotations

from neuronfleet.offline import botocore_variant_instance_types, offline_aws, sagemaker_instance_types_from_botocore

__all__ = ["botocore_variant_instance_types", "offline_aws", "sagemaker_instance_types_from_botocore"]

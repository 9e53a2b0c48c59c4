"""Thin AWS adapters of the cost functions (Cost Explorer, Athena, CloudWatch, SageMaker, S3)."""

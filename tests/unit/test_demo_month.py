"""scripts/demo.py's batch step (issue 43), without a demo run: one batch run is one line."""

from __future__ import annotations

from scripts.demo import batch_run_line


def test_one_line_per_batch_run() -> None:
    job = {"TransformJobName": "nightly-summaries-0a1b2c3d4e5f6a7b", "TransformJobStatus": "Completed",
           "ModelName": "NightlySummariesModel-abc", "TransformResources": {"InstanceType": "ml.inf2.xlarge",
                                                                             "InstanceCount": 1},
           "TransformInput": {"DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                                              "S3Uri": "s3://b/batch/nightly-summaries/input/"}}},
           "TransformOutput": {"S3OutputPath": "s3://b/batch/nightly-summaries/output/"}}
    assert batch_run_line(job) == (
        "batch run nightly-summaries-0a1b2c3d4e5f6a7b: Completed on 1 x ml.inf2.xlarge, model NightlySummariesModel-abc, "
        "s3://b/batch/nightly-summaries/input/ -> s3://b/batch/nightly-summaries/output/")

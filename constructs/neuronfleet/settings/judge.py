"""Settings of an endpoint's pilot judge (``neuronfleet.judge.PilotJudge``): the team's prompt set, the tolerances
(defaults and their sources: ``neuronfleet_contract.judge``) and when it runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, ClassVar

from pydantic import AfterValidator, Field

from neuronfleet_contract.judge import (
    MAX_ERROR_RATE,
    MAX_LATENCY_P99_RATIO,
    MAX_NEW_TOKENS,
    MAX_TASK_SCORE_DROP,
    MIN_EMBEDDING_COSINE,
    MIN_TOKEN_AGREEMENT,
    Tolerances,
)

from ..core import rules
from ..core.problems import Problem
from ._base import Int, Number, Settings

MAX_JUDGE_NEW_TOKENS = 4096
"""neuronfleet's bound on tokens generated per prompt by the judge (a run's calls must fit Lambda's time)."""


class JudgeTolerances(Settings):
    """When the judge says go (each default's source: neuronfleet_contract.judge)."""

    what: ClassVar[str] = "tolerances"
    min_token_agreement: Number = Field(default=MIN_TOKEN_AGREEMENT, ge=0, le=1)
    min_embedding_cosine: Number = Field(default=MIN_EMBEDDING_COSINE, ge=-1, le=1)
    max_task_score_drop: Number = Field(default=MAX_TASK_SCORE_DROP, ge=0, le=1)
    max_latency_p99_ratio: Number = Field(default=MAX_LATENCY_P99_RATIO, gt=0)
    max_error_rate: Number = Field(default=MAX_ERROR_RATE, ge=0, le=1)

    def contract(self) -> Tolerances:
        return Tolerances(**self.model_dump())


class PilotJudgeSettings(Settings):
    """The judge of one endpoint: it sends each prompt of ``prompts`` (JSON Lines in S3, the team's own) to the Neuron
    and the GPU variant and writes a go / no-go verdict (record and metric)."""

    what: ClassVar[str] = "judge"
    prompts: Annotated[str, AfterValidator(rules.s3_uri)]
    """``s3://bucket/key.jsonl``: one ``{"prompt": "...", "reference": "..."}`` a line (reference optional)."""
    prompts_account: Annotated[str, AfterValidator(rules.account_id)] | None = None
    """The account that owns the prompt set's bucket (12 digits; default: the stack's account): the judge reads it only
    while it belongs to it (``s3:ResourceAccount``; docs/security.md, "Bucket reads")."""
    tolerances: JudgeTolerances = JudgeTolerances()
    schedule: Annotated[str, AfterValidator(rules.schedule_expression)] | None = "rate(1 hour)"
    """When a batch runs (EventBridge); each batch takes up the run where the last stopped. None: invoke it yourself."""
    max_new_tokens: Int = Field(default=MAX_NEW_TOKENS, ge=1, le=MAX_JUDGE_NEW_TOKENS)

    def _problems(self) -> Iterator[Problem]:
        key = self.key
        if not key or key.endswith("/"):
            yield Problem("prompts", self.prompts, "the S3 URI of one object (s3://bucket/prompts.jsonl), not a bucket "
                          "or prefix")

    @property
    def bucket(self) -> str:
        return self.prompts.removeprefix("s3://").partition("/")[0]

    @property
    def key(self) -> str:
        return self.prompts.removeprefix("s3://").partition("/")[2]

"""`ENV=pilot make demo`: the pilot judge runs as deployed, on fixtures.

The deployed judge function's own configuration (read from moto's Lambda, as the function reads it), the deployed
records bucket and CloudWatch in moto, the team's prompt set put into its bucket, and a stand-in of the endpoint's two
variants that answers from the serving containers' published example shape (tests/data/judge/openai_completion.json:
OpenAI's completion example, which vLLM's server answers in), the text and tokens changed per prompt. SYNTHETIC: no
model answered; the verdict says so.
"""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = json.loads((ROOT / "tests" / "data" / "judge" / "openai_completion.json").read_text())

PROMPTS = [
    ("What is the capital of France?", "Paris", "The capital of France is Paris, its largest city."),
    ("How many legs does a spider have?", "eight", "A spider has eight legs, two more than an insect."),
    ("What is 12 times 12?", "144", "12 times 12 is 144, which is also written as twelve squared."),
    ("Name the largest planet in the solar system.", "Jupiter", "The largest planet in the solar system is Jupiter."),
    ("Translate 'thank you' into French.", "merci", "'Thank you' in French is 'merci', or 'merci beaucoup'."),
    ("What gas do plants take in for photosynthesis?", "carbon dioxide",
     "Plants take in carbon dioxide for photosynthesis and give off oxygen."),
]
NEURON_DRIFT = {"What is 12 times 12?": "12 times 12 is 144, which is also written as 12 squared."}
"""Where the fixture's Neuron answer differs from the GPU's: one token (a BF16 near-tie), still the right answer."""
LATENCY_MS = {"neuron": 410.0, "gpu": 380.0}
"""The stand-in's answer times per variant (synthetic)."""


def _tokens(text: str) -> list[str]:
    return [t if i == 0 else f" {t}" for i, t in enumerate(text.split(" "))]


def _answer(text: str) -> bytes:
    doc = copy.deepcopy(EXAMPLE)
    tokens = _tokens(text)
    doc["choices"][0]["text"] = "".join(tokens)
    doc["choices"][0]["logprobs"] = {"tokens": tokens}
    doc["usage"]["completion_tokens"] = len(tokens)
    return json.dumps(doc).encode()


class FixtureEndpoint:
    """InvokeEndpoint of both variants, answering from the fixtures; its clock advances by each variant's latency."""

    def __init__(self) -> None:
        self.now = 0.0
        gpu = {p: _answer(a) for p, _, a in PROMPTS}
        self.answers = {"gpu": gpu, "neuron": gpu | {p: _answer(a) for p, a in NEURON_DRIFT.items()}}

    def clock(self) -> float:
        return self.now

    def invoke_endpoint(self, **kw: Any) -> dict[str, Any]:
        variant = kw["TargetVariant"]
        self.now += LATENCY_MS[variant] / 1000
        return {"Body": io.BytesIO(self.answers[variant][json.loads(kw["Body"])["prompt"]])}


def judge_on_fixtures(server: Any) -> list[Any]:
    """Run each deployed judge once on the fixtures; its verdicts (as the report reads them)."""
    from neuronfleet.lambdas.judge.adapters import Store, Variants, VerdictMetrics
    from neuronfleet.lambdas.judge.handler import run
    from neuronfleet_contract.judge import JudgeConfig, Verdict, latest_key

    out = []
    s3, cloudwatch = server.client("s3"), server.client("cloudwatch")
    for fn in server.client("lambda").list_functions()["Functions"]:
        if fn["Handler"] != "judge.handler.handler":
            continue
        settings = JudgeConfig.from_environment(fn["Environment"]["Variables"])
        try:
            s3.head_bucket(Bucket=settings.prompts_bucket)
        except Exception:  # the team's own bucket: not deployed by the kit
            s3.create_bucket(Bucket=settings.prompts_bucket,
                             CreateBucketConfiguration={"LocationConstraint": server.region})
        prompt_set = "\n".join(json.dumps({"prompt": p, "reference": r}) for p, r, _ in PROMPTS)
        s3.put_object(Bucket=settings.prompts_bucket, Key=settings.prompts_key, Body=prompt_set.encode())
        stand_in = FixtureEndpoint()
        result = run({"run_id": "demo-fixtures"}, settings=settings,
                     variants=Variants(stand_in, settings.endpoint_name, clock=stand_in.clock), endpoint=None,
                     store=Store(s3), metrics=VerdictMetrics(cloudwatch, settings.namespace),
                     remaining_ms=lambda: 900_000, synthetic=True)
        if result["status"] != "done":
            raise RuntimeError(f"the judge of {settings.endpoint_name} did not finish: {result}")
        body = s3.get_object(Bucket=settings.records_bucket,
                             Key=latest_key(settings.records_prefix, settings.endpoint_name))["Body"].read()
        out.append(Verdict.from_json(json.loads(body)))
    return out

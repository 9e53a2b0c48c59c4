"""Evaluation-phase estimate: what GPU spend would cost on Trainium/Inferentia, without Node.js.

    neuronfleet estimate gpu-spend.json --workload inference   # aws ce get-cost-and-usage ... --group-by ...USAGE_TYPE
    neuronfleet estimate cur2-export.csv.gz --workload-tag workload   # a CUR 2.0 (Data Exports) CSV with resource tags
    neuronfleet estimate --csv gpu-spend.csv [--fleet config/prod.yaml] [--price TYPE=USD] [--ratio N]
    neuronfleet estimate --cost-explorer             # one paginated Cost Explorer query ($0.01 a page)

(``neuronfleet-estimate`` is the same command under its old name.) The exports are read by
:mod:`neuronfleet.cost.exports`; each GPU row's workload is its usage type's (SageMaker), its export's tag or column,
or declared (``--workload``), else unknown with both Neuron targets shown and left out of the totals; inference maps
to Inferentia, training to Trainium, sized by the model when given (``--model-gib``, ``--params``/``--dtype``),
else memory-matched (``neuronfleet.lambdas.cost.logic.evaluation``). ``--ratio`` is Neuron instances per GPU
instance (default 1, said so); each line gives its saving and break-even in the same unit. Prices are the catalog's
(each with its source and date), with a fleet file's ``prices:`` and ``--price`` overrides. The same logic runs in
the weekly migration report. Nothing here imports aws-cdk-lib.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from ..facts.catalog import CATALOG, AcceleratorFamily, InstanceCatalog
from ..facts.prices import price_table
from ..lambdas.cost.logic.rows import CostRow, parse_page

__all__ = ["accelerators_of", "main", "price_table", "rows_from_cost_explorer"]


def accelerators_of(catalog: InstanceCatalog) -> dict[str, tuple[str, int]]:
    """Instance type -> (family, accelerator memory GiB): what the evaluation estimate maps GPU work by."""
    return {s.instance_type: (s.family.value, s.accelerator_memory_gib) for s in catalog}


def rows_from_cost_explorer(days: int = 30) -> list[CostRow]:
    """The last ``days`` days of accelerator spend from Cost Explorer, with the caller's credentials."""
    import boto3

    from ..lambdas.cost.adapters.cost_explorer import CostExplorer

    end = datetime.now(UTC).date()
    ce = CostExplorer(boto3.client("ce", region_name="us-east-1"))
    gpu_types = [t for s in CATALOG if s.family is AcceleratorFamily.GPU for t in (s.instance_type, f"ml.{s.instance_type}")]
    rows: list[CostRow] = []
    for page in ce.pages(end - timedelta(days=days), end, gpu_types):
        rows += parse_page(page)[0]
    print(f"Cost Explorer requests made: {ce.requests} (${ce.requests * 0.01:.2f})", file=sys.stderr)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """``neuronfleet-estimate [ARGS]``: ``neuronfleet estimate [ARGS]`` under its old name."""
    from ..cli.main import main as cli

    return cli(["estimate", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())

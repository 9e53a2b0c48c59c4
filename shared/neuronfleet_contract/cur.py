"""The collector's Athena queries over a CUR 2.0 export: the CurAnalytics construct saves them as named queries and
the collector (``neuronfleet.lambdas.cost.adapters.athena.AthenaSpend``) runs them, so both render the same text.
The sources of their columns and rules are in that module's docstring.
"""

from __future__ import annotations

import re
from datetime import date

FLEET_TAG_COLUMN = "user_neuronfleet_fleet"
"""The CUR map key of the ``neuronfleet:fleet`` cost allocation tag. CUR turns tag keys into column-safe names
(``user_`` prefix, ``:`` to ``_``); check your export's schema and set ``fleet_tag_key`` if it differs."""

_BLOCK_FEE = "COALESCE(line_item_usage_type, '') LIKE '%CapacityBlockFee:%'"
"""A Capacity Block fee line (or its refund): read on line_item_unblended_cost for both bases (rows.FEE_METRIC)."""

_AMORTIZED = f"""CASE WHEN {_BLOCK_FEE} THEN line_item_unblended_cost
      WHEN line_item_line_item_type = 'SavingsPlanCoveredUsage' THEN savings_plan_savings_plan_effective_cost
      WHEN line_item_line_item_type = 'SavingsPlanNegation' THEN 0
      WHEN line_item_line_item_type = 'DiscountedUsage' THEN reservation_effective_cost
      ELSE COALESCE(line_item_net_unblended_cost, line_item_unblended_cost) END"""

_USAGE_FILTER = f"""line_item_product_code IN ('AmazonEC2', 'AmazonSageMaker')
  AND (line_item_line_item_type IN ('Usage', 'DiscountedUsage', 'SavingsPlanCoveredUsage', 'SavingsPlanNegation', 'Fee')
       OR (line_item_line_item_type = 'Refund' AND {_BLOCK_FEE}))
  AND regexp_like(split_part(line_item_usage_type, ':', 2), '^(ml\\.)?(trn|inf|p|g)[0-9]+[a-z]*\\.')"""

QUERIES: dict[str, str] = {
    "spend_by_fleet_usage_type_day": f"""-- neuronfleet: accelerator spend per day, usage type and fleet (collector rows)
SELECT CAST(line_item_usage_start_date AS DATE) AS day,
       line_item_usage_type AS usage_type,
       COALESCE(element_at(resource_tags, '{{fleet_tag_key}}'), '') AS fleet,
       SUM({_AMORTIZED}) AS net_amortized_cost,
       SUM(line_item_unblended_cost) AS unblended_cost,
       SUM(CASE WHEN line_item_line_item_type = 'SavingsPlanNegation' THEN 0 ELSE line_item_usage_amount END)
           AS usage_quantity
FROM {{table}}
WHERE line_item_usage_start_date >= DATE '{{start}}' AND line_item_usage_start_date < DATE '{{end}}'
  AND {_USAGE_FILTER}
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3""",
    "adjustments_by_fleet_day": f"""-- neuronfleet: credits, refunds and taxes per day and fleet, kept apart
SELECT CAST(line_item_usage_start_date AS DATE) AS day,
       line_item_line_item_type AS record_type,
       COALESCE(element_at(resource_tags, '{{fleet_tag_key}}'), '') AS fleet,
       SUM(line_item_unblended_cost) AS net_amortized_cost,
       SUM(line_item_unblended_cost) AS unblended_cost,
       0 AS usage_quantity
FROM {{table}}
WHERE line_item_usage_start_date >= DATE '{{start}}' AND line_item_usage_start_date < DATE '{{end}}'
  AND line_item_line_item_type IN ('Credit', 'Refund', 'Tax')
  AND NOT (line_item_line_item_type = 'Refund' AND {_BLOCK_FEE})
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3""",
    "spend_by_fleet_family_kind_day": f"""-- neuronfleet: spend per day, fleet, accelerator family and kind (ad hoc)
SELECT CAST(line_item_usage_start_date AS DATE) AS day,
       COALESCE(element_at(resource_tags, '{{fleet_tag_key}}'), '') AS fleet,
       CASE WHEN regexp_like(split_part(line_item_usage_type, ':', 2), '^(ml\\.)?trn') THEN 'trainium'
            WHEN regexp_like(split_part(line_item_usage_type, ':', 2), '^(ml\\.)?inf') THEN 'inferentia'
            ELSE 'gpu' END AS family,
       CASE WHEN line_item_usage_type LIKE '%CapacityBlockFee:%' THEN 'capacity-block'
            WHEN line_item_usage_type LIKE '%Host:ml.%' OR line_item_usage_type LIKE '%AsyncInf:ml.%'
                THEN 'sagemaker-hosting'
            WHEN line_item_usage_type LIKE '%Train:ml.%' THEN 'sagemaker-training'
            WHEN line_item_usage_type LIKE '%Processing%:ml.%' THEN 'sagemaker-processing'
            WHEN line_item_usage_type LIKE '%Transform:ml.%' OR line_item_usage_type LIKE '%Tsform:ml.%'
                THEN 'sagemaker-transform'
            ELSE 'ec2' END AS kind,
       SUM({_AMORTIZED}) AS net_amortized_cost,
       SUM(line_item_unblended_cost) AS unblended_cost
FROM {{table}}
WHERE line_item_usage_start_date >= DATE '{{start}}' AND line_item_usage_start_date < DATE '{{end}}'
  AND {_USAGE_FILTER}
GROUP BY 1, 2, 3, 4
ORDER BY 1, 2, 3, 4""",
}
"""Named queries of the Athena workgroup; placeholders ``{table}``, ``{start}``, ``{end}``, ``{fleet_tag_key}``."""

_SAFE = re.compile(r"^[A-Za-z0-9_.\"]+$")


def render(name: str, *, table: str, start: date, end: date, fleet_tag_key: str = FLEET_TAG_COLUMN) -> str:
    """The query ``name`` for ``table`` over [start, end). Identifiers are checked, never quoted blindly."""
    if not _SAFE.match(table):
        raise ValueError(f"table: got {table!r}; allowed: database.table of letters, digits and underscores")
    if not re.fullmatch(r"[A-Za-z0-9_:./-]+", fleet_tag_key):
        raise ValueError(f"fleet_tag_key: got {fleet_tag_key!r}; allowed: a CUR tag key")
    return QUERIES[name].format(table=table, start=start.isoformat(), end=end.isoformat(), fleet_tag_key=fleet_tag_key)

#!/usr/bin/env python3
"""Security scanners on every example fleet (config/*.yaml): cdk-nag's packs and checkov (issue 36; docs/security.md,
"Scanners: checkov and cdk-nag packs").

    .venv/bin/python scripts/scan.py                      # every fleet, every pack, checkov if found
    .venv/bin/python scripts/scan.py --fleet dev --list   # one fleet, each finding listed
    make scan                                             # the same as the first line

cdk-nag (the project's pinned 3.x, requirements-dev.txt) runs as CDK policy-validation plugins: AwsSolutions, NIST
800-53 rev 5, HIPAA Security and PCI DSS 3.2.1, each on the construct tree, so the kit's acknowledgements
(``Validations.of(...).acknowledge``, each with its reason) count as acknowledged, not as findings. The tests gate on
AwsSolutions alone (tests/cdk_support.py new_app); the other three packs are run here, by hand, because each synth
takes a minute on two cores.

checkov is not a project dependency (it pulls in a hundred packages): install it apart, e.g.
``python3 -m venv /tmp/scan-venv && /tmp/scan-venv/bin/pip install checkov==3.3.30``, and name it with ``--checkov``
(default: ``checkov`` on PATH, else /tmp/scan-venv/bin/checkov). It reads the synthesised templates; a resource's
``Metadata.checkov.skip`` (id and comment) acknowledges a check there.

Prints one table of counts per fleet and pack (findings = violating resources; acknowledged = suppressed by a
reason) and writes them, with every finding, to ``<out>/scan.json``. Exit code 1 when any pack or checkov has an
unacknowledged finding.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PACKS = ("AwsSolutions", "NIST.800.53.R5", "HIPAA.Security", "PCI.DSS.321")
"""cdk-nag's rule-id prefixes of the four packs scanned (cdk_nag 3.x: AwsSolutionsChecks, NIST80053R5Checks,
HIPAASecurityChecks, PCIDSS321Checks)."""
CHECKOV_VERSION = "3.3.30"
"""The checkov release the counts in docs/security.md were measured with."""
FALLBACK_CHECKOV = Path("/tmp/scan-venv/bin/checkov")


def fleets() -> list[str]:
    return sorted(p.stem for p in (ROOT / "config").glob("*.yaml"))


def synth(name: str, outdir: Path) -> dict[str, Any]:
    """Synthesise config/NAME.yaml into ``outdir`` with the four packs as validation plugins; the validation report."""
    import aws_cdk as cdk
    from cdk_nag import AwsSolutionsChecks, HIPAASecurityChecks, NIST80053R5Checks, PCIDSS321Checks

    from neuronfleet import load_fleet
    from stacks import build_fleet

    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    if outdir.exists():
        shutil.rmtree(outdir)
    app = cdk.App(context=context, outdir=str(outdir))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True), NIST80053R5Checks(app, verbose=True),
                                        HIPAASecurityChecks(app, verbose=True), PCIDSS321Checks(app, verbose=True))
    build_fleet(app, load_fleet(ROOT / "config" / f"{name}.yaml"))
    try:
        app.synth()
    except RuntimeError as e:  # a pack's unacknowledged finding fails synth; the report is written first
        if "Validation failed" not in str(e) and "ValidationFailed" not in str(e):
            raise
    return json.loads((outdir / "validation-report.json").read_text())


def nag_findings(report: dict[str, Any]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(findings, acknowledged): one row per rule and violating construct (its path)."""
    found: list[dict[str, str]] = []
    acknowledged: list[dict[str, str]] = []
    for plugin in report["pluginReports"]:
        for kind, rows in (("violations", found), ("suppressedViolations", acknowledged)):
            for v in plugin.get(kind, []):
                for r in v.get("violatingConstructs", []):
                    rows.append({"rule": v["ruleName"], "resource": r["constructPath"],
                                 "reason": v.get("reason", "") or v.get("suppressionReason", ""),
                                 "description": v.get("description", "")[:200]})
    return found, acknowledged


def pack_of(rule: str) -> str:
    return next((p for p in PACKS if rule.startswith(p)), rule.split("-")[0])


def checkov_path(given: str | None) -> str | None:
    if given:
        return given
    return shutil.which("checkov") or (str(FALLBACK_CHECKOV) if FALLBACK_CHECKOV.exists() else None)


def run_checkov(checkov: str, outdir: Path) -> tuple[list[dict[str, str]], list[dict[str, str]], str]:
    """(failed, skipped, version) of checkov's CloudFormation checks on the assembly's templates (not ``--quiet``:
    it leaves the skipped checks, the kit's acknowledgements, out of the results)."""
    version = subprocess.run([checkov, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    templates = sorted(str(p) for p in outdir.glob("*.template.json"))
    done = subprocess.run([checkov, "--framework", "cloudformation", "--output", "json", "--compact",
                           "--skip-download", *(a for t in templates for a in ("--file", t))],
                          capture_output=True, text=True, env={**os.environ, "BC_SKIP_MAPPING": "TRUE"})
    parsed = json.loads(done.stdout or "[]")
    results = [r for block in (parsed if isinstance(parsed, list) else [parsed]) for r in [block.get("results", {})]]
    failed = [{"rule": c["check_id"], "resource": f"{Path(c['file_path']).name}:{c['resource']}",
               "description": c.get("check_name", "")} for r in results for c in r.get("failed_checks", [])]
    skipped = [{"rule": c["check_id"], "resource": f"{Path(c['file_path']).name}:{c['resource']}",
                "reason": (c.get("check_result") or {}).get("suppress_comment", "")}
               for r in results for c in r.get("skipped_checks", [])]
    return failed, skipped, version


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fleet", action="append", choices=fleets(), help="only this fleet (repeatable)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "scan", help="where the assemblies go")
    parser.add_argument("--checkov", help="the checkov command (default: on PATH, else /tmp/scan-venv/bin/checkov)")
    parser.add_argument("--no-checkov", action="store_true", help="cdk-nag's packs only")
    parser.add_argument("--list", action="store_true", help="list every finding, not only the counts")
    args = parser.parse_args(argv)
    checkov = None if args.no_checkov else checkov_path(args.checkov)
    if not args.no_checkov and checkov is None:
        print("checkov: not found (give --checkov PATH or --no-checkov); see this script's docstring", file=sys.stderr)
        return 2
    summary: dict[str, Any] = {"packs": PACKS, "fleets": {}}
    for name in args.fleet or fleets():
        outdir = args.out / name
        found, acknowledged = nag_findings(synth(name, outdir))
        entry: dict[str, Any] = {"nag": {"findings": found, "acknowledged": acknowledged}}
        if checkov:
            failed, skipped, version = run_checkov(checkov, outdir)
            entry["checkov"] = {"version": version, "failed": failed, "skipped": skipped}
        summary["fleets"][name] = entry
        counts = Counter(pack_of(f["rule"]) for f in found)
        # cdk-nag 3 leaves acknowledged findings out of its report: only cdk's own plugins list theirs
        line = ", ".join(f"{p} {counts[p]}" for p in PACKS)
        if checkov:
            line += f", checkov {len(entry['checkov']['failed'])} ({len(entry['checkov']['skipped'])} skipped)"
        print(f"{name}: {line}", flush=True)
        if args.list:
            for f in found + (entry.get("checkov", {}).get("failed", [])):
                print(f"  {f['rule']} {f['resource']} {f['description']}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "scan.json").write_text(json.dumps(summary, indent=1))
    bad = any(e["nag"]["findings"] or e.get("checkov", {}).get("failed") for e in summary["fleets"].values())
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

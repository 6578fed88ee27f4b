"""Drive the lab through its CLI (`iolab run`, `iolab results`), as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

IOLAB = [sys.executable, "-m", "iolab"]


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (fio job texts) as literal blocks, so the plan stays readable."""


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.Node:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


def one_variant_plan(
    plan: Path, variant: str, repeat: int, out_dir: Path, overrides: dict[str, Any] | None = None
) -> Path:
    """A copy of `plan` with only `variant` and `repeat` blocks; everything else as written
    except the top-level mappings in `overrides`, merged key by key (e.g. vars, prepare)."""
    doc = yaml.safe_load(plan.read_text())
    for key, value in (overrides or {}).items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key] = {**doc[key], **value}
        else:
            doc[key] = value
    variants = doc.get("variants") or {}
    if variant not in variants:
        raise SystemExit(f"{plan}: no variant {variant!r} (has {', '.join(variants)})")
    doc["variants"] = {variant: variants[variant]}
    doc["repeat"] = repeat
    doc.pop("baseline", None)
    out = out_dir / f"{plan.stem}-{variant}-x{repeat}.yaml"
    out.write_text(yaml.dump(doc, Dumper=_Dumper, sort_keys=False))
    return out


def iolab(db: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*IOLAB, "--db", str(db), *args], capture_output=True, text=True, check=check
    )


def run_ids(db: Path, label: str) -> list[int]:
    if not db.exists():
        return []
    out = iolab(db, "results", "--label", label, "--json").stdout
    return sorted(int(r["id"]) for r in json.loads(out))


def samples(db: Path, run_id: int) -> list[dict[str, Any]]:
    proc = iolab(db, "results", "--run", str(run_id), "--json")
    out: list[dict[str, Any]] = json.loads(proc.stdout)
    return out


def run_plan(db: Path, plan: Path, label: str, *extra: str) -> int:
    """`iolab run -q PLAN`; the new run's id.  A failing run raises with iolab's own line."""
    before = set(run_ids(db, label))
    proc = iolab(db, "run", "-q", "--label", label, *extra, str(plan), check=False)
    if proc.returncode != 0:
        raise SystemExit(f"iolab run failed ({proc.returncode}): {proc.stderr.strip()}")
    new = sorted(set(run_ids(db, label)) - before)
    if len(new) != 1:
        raise SystemExit(f"expected one new run labelled {label!r}, found {new}")
    return new[0]

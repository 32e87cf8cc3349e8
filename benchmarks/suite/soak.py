"""``make soak``: the gateway under open-loop load at 70 % of its measured capacity for 20
minutes (textgate/bench/soak.py says what is measured and what fails it).

    python benchmarks/suite/soak.py --bundle artifacts/spam [--bundle artifacts/sentiment] \
        [--minutes 20] [--load 0.7] [--warmup-minutes 3] [--out benchmarks/results/soak.json]

The mail it sends: tests/data/email (ordinary messages) and the hostile corpus
(tests/data/hostile/generate.py). Exit status 1 when a bound is broken or an event is lost.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

from textgate.bench import soak
from textgate.config import Config
from textgate.repository import build

ROOT = Path(__file__).resolve().parents[2]


def mail_dir(out: Path) -> Path:
    """Ordinary test mail and the hostile corpus as ``.eml`` files in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for p in sorted((ROOT / "tests" / "data" / "email").glob("*.eml")):
        shutil.copyfile(p, out / p.name)
    spec = importlib.util.spec_from_file_location(
        "hostile_generate", ROOT / "tests" / "data" / "hostile" / "generate.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, raw in module.cases().items():
        (out / f"hostile-{name}.eml").write_bytes(raw)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bundle", type=Path, action="append", required=True)
    ap.add_argument("--minutes", type=float, default=20.0)
    ap.add_argument("--load", type=float, default=0.7)
    ap.add_argument("--warmup-minutes", type=float, default=3.0)
    ap.add_argument("--window-s", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "soak.json")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="textgate-soak-build-"))
    try:
        built = build(args.bundle, work / "repo", Config().repository)
        plan = soak.Plan(
            locustfile=ROOT / "benchmarks" / "locustfile.py",
            mail_dir=mail_dir(work / "mail"),
            tasks=tuple(t.task for t in built.spec.tasks),
            minutes=args.minutes,
            load=args.load,
            bounds=soak.Bounds(warmup_s=args.warmup_minutes * 60, window_s=args.window_s),
        )
        report = soak.run(built.repository, plan, args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({k: v for k, v in report.items() if k != "windows"}, indent=2))
    print(f"report: {args.out} and {args.out.with_suffix('.png')}")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())

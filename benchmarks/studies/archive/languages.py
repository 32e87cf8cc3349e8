"""Which language identifier the gateway uses (issue 43 §3), chosen by measurement: accuracy on
short mail texts, the English/other decision an ``ok_languages: [en]`` site acts on, speed,
load time and size on disk, for each candidate that is installed.

    python benchmarks/studies/archive/languages.py \
        [--set benchmarks/studies/archive/languages.jsonl] \
        [--out benchmarks/results/languages.json]

The set (docs/mail.md, "Languages", says how it was built and labelled) holds the first 300
characters of the model text of real corpus messages, each labelled by reading. Items
labelled ``mixed`` or ``und`` are left out of accuracy. Each candidate is also scored on the
first 100 characters. Candidates: py3langid (the one served), pycld2, langdetect and lingua;
the last three are not dependencies of textgate (``pip install`` them to compare).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.metadata
import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textgate.bench.report import write_json
from textgate.signals import language

ROOT = Path(__file__).resolve().parents[3]
SKIP = ("mixed", "und")

Detector = Callable[[str], str]


def _py3langid() -> Detector:
    return lambda text: language.detect(text).code


def _py3langid_raw() -> Detector:
    return lambda text: language.detect(text, min_confidence=0.0).code


def _cld2() -> Detector:
    pycld2 = importlib.import_module("pycld2")

    def detect(text: str) -> str:
        try:
            ok, _, found = pycld2.detect(text)
        except pycld2.error:
            return "und"
        return str(found[0][1]) if ok and found[0][1] != "un" else "und"

    return detect


def _langdetect() -> Detector:
    ld = importlib.import_module("langdetect")
    ld.DetectorFactory.seed = 0  # it samples; unseeded it answers differently each run

    def detect(text: str) -> str:
        try:
            return str(ld.detect(text)).split("-")[0]
        except ld.LangDetectException:
            return "und"

    return detect


def _lingua() -> Detector:
    lingua = importlib.import_module("lingua")
    detector = lingua.LanguageDetectorBuilder.from_all_languages().build()

    def detect(text: str) -> str:
        found = detector.detect_language_of(text)
        return found.iso_code_639_1.name.lower() if found is not None else "und"

    return detect


CANDIDATES: dict[str, tuple[str, Callable[[], Detector]]] = {
    "py3langid": ("py3langid", _py3langid),
    "py3langid (no confidence floor)": ("py3langid", _py3langid_raw),
    "pycld2": ("pycld2", _cld2),
    "langdetect": ("langdetect", _langdetect),
    "lingua": ("lingua-language-detector", _lingua),
}


def package_mb(dist: str) -> float:
    files = importlib.metadata.distribution(dist).files or []
    paths = [Path(f.locate()) for f in files]
    return round(sum(p.stat().st_size for p in paths if p.is_file()) / 1e6, 1)


def half(item: dict[str, Any]) -> str:
    """``design`` or ``report``: a fixed half of the set by the file's hash. Library and
    thresholds are chosen on the design half; the report half is read once, after."""
    return "design" if hashlib.sha256(item["file"].encode()).digest()[0] % 2 else "report"


def score(detect: Detector, items: list[dict[str, Any]], chars: int) -> dict[str, Any]:
    """Accuracy (all judged, the non-English ones: the issue's target, the sure ones), and
    what ``ok_languages: [en]`` would do: English acted on (called another language, not
    ``und``), another language let through (called English or ``und``)."""
    judged = [x for x in items if x["lang"] not in SKIP]
    t = time.process_time()
    said = [language.same_language(detect(x["text"][:chars])) for x in judged]
    cpu = time.process_time() - t
    pairs = list(zip(said, judged, strict=True))

    def acc(keep: Callable[[dict[str, Any]], bool], weighted: bool = False) -> float:
        kept = [(s, x, x["weight"] if weighted else 1.0) for s, x in pairs if keep(x)]
        right = sum(w for s, x, w in kept if s == x["lang"])
        return round(right / max(1e-9, sum(w for _, _, w in kept)), 4)

    en = [s for s, x in pairs if x["lang"] == "en"]
    other = [s for s, x in pairs if x["lang"] != "en"]
    wrong = Counter(f"{x['lang']}->{s}" for s, x in pairs if s != x["lang"])
    return {
        "n": len(judged),
        "accuracy": acc(lambda x: True),
        "accuracy_non_english": acc(lambda x: x["lang"] != "en"),
        "accuracy_sure": acc(lambda x: x["sure"]),
        # each item stands for its stratum's share of the corpus (weight): the accuracy on
        # the corpus's non-English mail, not on a set over-sampled where detectors disagree
        "accuracy_non_english_corpus": acc(lambda x: x["lang"] != "en", weighted=True),
        "undetermined": round(sum(s == language.UND for s in said) / len(said), 4),
        "english_acted_on": round(
            sum(s not in ("en", language.UND) for s in en) / max(1, len(en)), 4
        ),
        "english_acted_on_corpus": round(
            1 - acc(lambda x: x["lang"] == "en", weighted=True) - _weighted_und(pairs),
            4,
        ),
        "other_let_through": round(
            sum(s in ("en", language.UND) for s in other) / max(1, len(other)), 4
        ),
        "us_per_text": round(cpu / len(judged) * 1e6, 1),
        "confusions": dict(wrong.most_common(12)),
    }


def _weighted_und(pairs: list[tuple[str, dict[str, Any]]]) -> float:
    """The corpus-weighted share of English items answered ``und`` (not acted on)."""
    en = [(s, x["weight"]) for s, x in pairs if x["lang"] == "en"]
    return sum(w for s, w in en if s == language.UND) / max(1e-9, sum(w for _, w in en))


def run(items: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (dist, make) in CANDIDATES.items():
        try:
            t = time.perf_counter()
            detect = make()
            detect("warm up the model: a first call loads it")
            load_s = time.perf_counter() - t
        except ImportError:
            out[name] = {"installed": False}
            continue
        out[name] = {
            "installed": True,
            "version": importlib.metadata.version(dist),
            "package_mb": package_mb(dist),
            "load_s": round(load_s, 2),
            "chars_300": score(detect, items, 300),
            "chars_100": score(detect, items, 100),
        }
    return out


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, r in report["candidates"].items() if r.get("installed")]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for chars, shift in (("chars_300", -0.2), ("chars_100", 0.2)):
        vals = [report["candidates"][n][chars]["accuracy"] for n in names]
        ax.bar([i + shift for i in range(len(names))], vals, width=0.4, label=chars[6:] + " chars")
    ax.axhline(0.95, color="grey", linestyle="--", linewidth=1, label="target 0.95")
    ax.set_xticks(range(len(names)), names)
    ax.set_ylim(0.5, 1.0)
    ax.set_ylabel("accuracy")
    ax.set_title(f"Language of short mail texts (n={report['n_judged']})")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=Path, default=Path(__file__).with_name("languages.jsonl"))
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "languages.json")
    ap.add_argument("--half", choices=("design", "report", "all"), default="design")
    args = ap.parse_args(argv)
    items = [json.loads(line) for line in args.set.read_text(encoding="utf-8").splitlines()]
    items = [x for x in items if args.half == "all" or half(x) == args.half]
    report = {
        "set": str(args.set.relative_to(ROOT)) if args.set.is_relative_to(ROOT) else str(args.set),
        "half": args.half,
        "n": len(items),
        "n_judged": sum(x["lang"] not in SKIP for x in items),
        "labels": dict(Counter(x["lang"] for x in items).most_common()),
        "candidates": run(items),
    }
    write_json(report, args.out)
    plot(report, args.out.with_suffix(".png"))
    print(json.dumps({n: r.get("chars_300", r) for n, r in report["candidates"].items()}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

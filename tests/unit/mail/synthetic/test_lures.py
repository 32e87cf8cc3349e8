from __future__ import annotations

import re
from email import message_from_bytes, policy
from pathlib import Path

from textgate.mail.synthetic import lures, modern

DESIGN_CHECKS = Path(__file__).parents[4] / "benchmarks" / "studies" / "email" / "design_checks"


# seeded, counted, real RFC 822, training only: tests/unit/mail/synthetic/test_registry.py
# that it reaches the model: test_registry.py::test_generated_mail_reaches_the_model
def test_every_lure_is_generated_and_links_never_point_at_the_brand() -> None:
    raws = [i.raw for i in lures.items(len(lures.LURES) * 10)]
    subjects = {message_from_bytes(r)["Subject"] for r in raws}
    assert len(subjects) >= 2 * len(lures.LURES)
    for raw in raws:
        brand = str(message_from_bytes(raw)["From"]).split(" <")[0]
        own = f"{''.join(c for c in brand.lower() if c.isalnum())}.com"  # paypal.com, ups.com
        for host in re.findall(r"https?://([^/\s\"]+)", raw.decode()):
            assert host != own and not host.endswith(f".{own}"), (brand, host)


def test_html_lures_link_from_words_as_the_generated_ham_does() -> None:
    def html(items: list[bytes]) -> list[str]:
        parts = [message_from_bytes(r, policy=policy.default).get_body() for r in items]
        return [str(p.get_content()) for p in parts if p and p.get_content_subtype() == "html"]

    bait, ham = html([i.raw for i in lures.items(40)]), html([i.raw for i in modern.items(40)])
    assert len(bait) >= 10 and len(ham) >= 10
    for side in (bait, ham):  # the same HTML shape on both sides: format carries no label
        linked = [h for h in side if "http" in h]
        assert linked and all('<a href="http' in h for h in linked)


def test_no_brand_of_the_design_checks_is_imitated() -> None:
    # the hand-written design checks test the genre, not a memorised sender (their kinds were
    # read when the lures were written: a check of the design, not a blind test)
    phish = DESIGN_CHECKS.glob("phish/*.eml")
    senders = [message_from_bytes(f.read_bytes())["From"] for f in phish]
    brands = {str(s).split()[0].lower() for s in senders}
    assert {"dhl", "netflix", "microsoft", "docusign", "irs", "coinbase"} <= brands
    text = b"".join(i.raw for i in lures.items()).decode().lower()
    for brand in brands:
        assert not re.search(rf"\b{re.escape(brand)}\b", text), brand

"""Structure signals of an e-mail, beside its text: which named rules fired, and how the
combiner weighs them against the text models' scores.

| module | what it holds |
|---|---|
| `parts` | the MIME leaves as the symbols need them (type, file names, HTML prefixes) |
| `links` | registrable domains, link hosts, the link symbols of the HTML |
| `symbols` | `Symbol`, `SYMBOLS`, `ORDER` (feature order), `DIRECTIONS` (signs), `from_message` |
| `wire` | the frame that carries a message's symbols to Triton beside its text |
| `combiner` | the weights over scores and symbols (numpy; imported by its module path) |

Every module but `combiner` uses the standard library alone and imports no other textgate
module, so the normalizer (training and serving alike) and the gateway read symbols one
way. Importing the package does not import numpy; ``from textgate.signals import
combiner`` does.
"""

from textgate.signals.symbols import DIRECTIONS, ORDER, SYMBOLS, Symbol, from_message

__all__ = ["DIRECTIONS", "ORDER", "SYMBOLS", "Symbol", "from_message"]

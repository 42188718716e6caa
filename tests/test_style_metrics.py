"""tools/style_metrics.py measures the lecture the way the lecture issues define it."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "style_metrics", ROOT / "tools" / "style_metrics.py"
)
style_metrics = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(style_metrics)

CHAPTER = """---
jupytext: {}
---
# A chapter

The model runs one forward pass over the prompt and two passes over the data.
Its error is {glue:text}`err:.3f`, about 0.25 of ridge's, and $x = 0.5$ is math.

```{dropdown} Details
The goal is a pass, the claim a miss.
```

The first verdict is {glue:text}`first_verdict`.

## What this chapter checked

The goal, the mark and the verdict live here.
"""


def test_the_lecture_ends_at_the_checked_section():
    text = style_metrics.lecture(CHAPTER)
    assert "What this chapter checked" not in text
    assert text.endswith("{glue:text}`first_verdict`.\n\n")
    assert style_metrics.lecture("no section") == "no section"


def test_ledger_words_count_typed_and_glued_verdicts_not_the_fields_words():
    m = style_metrics.measure(style_metrics.lecture(CHAPTER))
    # "verdict" typed once and carried once by a glued verdict; the dropdown is skipped,
    # "forward pass" and "passes over the data" are not ledger words
    assert m["ledger"] == 2


def test_computed_numbers_count_glued_numbers_and_typed_decimals_outside_math():
    m = style_metrics.measure(style_metrics.lecture(CHAPTER))
    assert m["words"] > 0
    # one glued number (err:.3f) and one typed decimal (0.25); 0.5 sits in math
    assert m["computed/1000"] == round(1000 * 2 / m["words"], 1)


def test_the_fields_pass_and_mark_are_not_ledger_words():
    field = (
        "One forward pass; 100 passes of SGD; few passes learn less; the dotted line "
        "marks k = d; the vertical line marks where it crosses."
    )
    assert style_metrics.ledger_words(field) == []
    ledger = "The goal is a pass. It misses its mark. The claim passes; a pass, a pass."
    assert [m.group(1).lower() for m in style_metrics.ledger_words(ledger)] == [
        "goal", "pass", "misses", "mark", "claim", "passes", "pass", "pass"
    ]  # fmt: skip

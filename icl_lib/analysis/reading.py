"""Which examples of its context a model reads, in words: one rule for the book.

The input is a profile of *relative influence*: for each example ``j = 1..N`` of a
prompt, how much replacing it moves the model's prediction, divided by what a
reference learner whose examples are exchangeable moves (least squares in chapter 1,
ridge in chapter 3; 1 means "as much as the reference's average example"). Two
questions are asked of it, each with one threshold:

* an example is *ignored* when its relative influence is below ``ignored_below``
  (one half: chapter 1's definition);
* the examples read are weighed *about alike* when the largest relative influence
  among them is at most ``alike_within`` times the smallest (1.25). Otherwise the
  profile weighs *the first ones most* when its most-read example lies in the first
  third of the examples read and its least-read one in the last third, *the last ones
  most* in the reverse case, and *unevenly* otherwise.

:func:`describe_reading` returns the ignored positions, the pattern and the phrase
("reads all 20 examples and weighs the first ones most"), so that a chapter glues
words that follow the numbers. Chapters 1 and 3.
"""

from __future__ import annotations

import numpy as np

from .._checks import check_real

IGNORED_BELOW = 0.5  # chapter 1's definition of an ignored example
ALIKE_WITHIN = 1.25  # largest over smallest influence of examples weighed alike
PATTERNS = ("alike", "first", "last", "uneven")


def _listed(positions) -> str:
    items = [str(p) for p in positions]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def describe_reading(
    relative,
    *,
    ignored_below: float = IGNORED_BELOW,
    alike_within: float = ALIKE_WITHIN,
) -> dict:
    """Describe a relative-influence profile by the book's one rule (module doc):
    ``{"n_examples": N, "ignored": positions counted from 1, "spread": the largest over
    the smallest influence of the examples read (NaN when fewer than two are read),
    "pattern": one of PATTERNS, "phrase": e.g. "reads all 20 examples and weighs the
    first ones most"}``.

    Args:
        relative: ``(N,)`` relative influence of examples 1..N (non-negative, finite),
            a sequence, array or tensor.
        ignored_below: the influence below which an example is ignored.
        alike_within: the largest ratio of influences still "about alike" (> 1).
    """
    if hasattr(relative, "detach"):
        relative = relative.detach().cpu().numpy()
    try:
        profile = np.asarray(relative, dtype=float)
    except (TypeError, ValueError) as error:
        raise TypeError(
            "relative: expected numbers, one per example, got "
            f"{type(relative).__name__}"
        ) from error
    if profile.ndim != 1 or profile.size == 0:
        raise ValueError(
            f"relative: expected a 1-D profile of at least one example, got shape "
            f"{profile.shape}"
        )
    if not np.isfinite(profile).all() or (profile < 0).any():
        raise ValueError(
            "relative: expected finite, non-negative influences, got "
            f"{profile[~np.isfinite(profile) | (profile < 0)][:3].tolist()}"
        )
    ignored_below = check_real("ignored_below", ignored_below, minimum=0.0)
    alike_within = check_real("alike_within", alike_within, minimum=1.0, strict=True)
    n = profile.size
    ignored = tuple(int(j) + 1 for j in np.nonzero(profile < ignored_below)[0])
    read = profile[profile >= ignored_below]
    if read.size < 2:
        spread, pattern = float("nan"), "alike"
    else:
        spread = float(read.max() / read.min()) if read.min() > 0 else float("inf")
        # which third of the examples read holds the most- and the least-read one
        thirds = [3 * int(np.argmax(read)) // read.size]
        thirds.append(3 * int(np.argmin(read)) // read.size)
        if spread <= alike_within:
            pattern = "alike"
        elif thirds == [0, 2]:
            pattern = "first"
        elif thirds == [2, 0]:
            pattern = "last"
        else:
            pattern = "uneven"
    if not ignored:
        reads = f"reads all {n} examples"
        them = "them"
    elif len(ignored) == n:
        reads, them = f"ignores all {n} of its examples", ""
    else:
        where = "position" if len(ignored) == 1 else "positions"
        reads = (
            f"ignores {len(ignored)} of its {n} examples ({where} {_listed(ignored)})"
        )
        them = "the others"
    if not them or read.size < 2:
        phrase = reads
    else:
        weighs = {
            "alike": f"weighs {them} about alike",
            "first": f"weighs the first of {them} most"
            if ignored
            else "weighs the first ones most",
            "last": f"weighs the last of {them} most"
            if ignored
            else "weighs the last ones most",
            "uneven": f"weighs {them} unevenly",
        }[pattern]
        phrase = f"{reads} and {weighs}"
    return {
        "n_examples": n,
        "ignored": ignored,
        "spread": spread,
        "pattern": pattern,
        "phrase": phrase,
    }

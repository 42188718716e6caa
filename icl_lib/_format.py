"""Numbers as a reader reads them: no ``3.6e-15``, no ``-0.00``.

Shared by :mod:`icl_lib.notebook` (glued numbers) and :mod:`icl_lib.claims` (the
ledger's tables), which must not import each other's dependencies.
"""

from __future__ import annotations

import math

SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(exponent: int) -> str:
    """``10⁻¹⁵`` for ``-15``."""
    return "10" + str(exponent).translate(SUPERSCRIPTS)


def scientific(x: float, digits: int = 2) -> str:
    """``x`` to ``digits`` significant digits, in plain decimals from 0.001 to 10⁴ and
    as ``3.6 × 10⁻¹⁵`` outside; zero is ``0`` (never ``-0``)."""
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e4:
        return f"{x:.{digits}g}"
    exponent = math.floor(math.log10(abs(x)))
    mantissa = round(x / 10**exponent, digits - 1)
    if abs(mantissa) >= 10:  # 9.96e-5 to two digits is 1.0 x 10^-4
        mantissa, exponent = mantissa / 10, exponent + 1
    if digits == 1 and abs(mantissa) == 1:  # 10⁻¹⁴, not 1 × 10⁻¹⁴
        return ("-" if mantissa < 0 else "") + power_of_ten(exponent)
    return f"{mantissa:.{digits - 1}f} × {power_of_ten(exponent)}"

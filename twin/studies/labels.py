"""Names, units and human-readable numbers for every output the reports and plots show.

One function, :func:`describe`, answers "what is this variable and in which unit": it
reads the output table (``twin.outputs``, where each output and KPI is declared once),
else the Dataset's
``units`` / ``long_name`` attributes, else the KPI tables (``twin.results.KPI_UNITS``,
``twin.studies.metrics.STUDY_KPI_UNITS``). :func:`human` writes a value the way a planner
reads it ("56.6 T tokens", "9.82 GWh", "2.41 MW", "97.7 %"); :func:`axis_label` gives a
plot label without empty brackets (never ``gpus_powered []``).
"""

from __future__ import annotations

import math

import numpy as np

#: units that carry no dimension: no brackets in labels
DIMENSIONLESS = ("", "1", "count", "-")

_UNIT_TEXT = {"degC": "°C", "C": "°C", "1": "", "count": "", "GPU": "GPUs"}


def _table_entry(name: str):
    """(long_name, units) from the output table ``twin.outputs`` (variables, derived
    series and KPIs, each declared once), or None for a name it does not declare."""
    try:
        from twin import outputs
    except ImportError:   # an older tree without the output table
        return None
    for table in (getattr(outputs, "OUTPUT_BY_NAME", {}), getattr(outputs, "KPI_BY_NAME", {})):
        entry = table.get(name)
        if entry is not None:
            return str(entry.long_name), str(entry.units)
    return None


def describe(name: str, ds=None) -> tuple[str, str]:
    """(long name, units) of an output variable or KPI ``name``.

    Order: the output table, the attributes of ``ds[name]``, the KPI tables; a name found
    nowhere is returned as its own long name with no unit."""
    entry = _table_entry(name)
    if entry is not None:
        return entry
    if ds is not None and name in getattr(ds, "variables", {}):
        attrs = ds[name].attrs
        if "long_name" in attrs or "units" in attrs:
            return str(attrs.get("long_name", name)), str(attrs.get("units", ""))
    from twin.results import KPI_UNITS
    from twin.studies.metrics import STUDY_KPI_UNITS
    for table in (KPI_UNITS, STUDY_KPI_UNITS):
        if name in table:
            units, long_name = table[name]
            return long_name, units
    try:
        from twin.sweep import DERIVED_SERIES
    except ImportError:  # the sweep package may move; its derived series are optional here
        DERIVED_SERIES = {}
    if name in DERIVED_SERIES:
        units, long_name = DERIVED_SERIES[name]
        return long_name, units
    return name.replace("_", " "), ""


def display_unit(name: str, units: str) -> str:
    """The unit a planner reads: fractions become %, degC becomes °C, '1' and counts vanish."""
    if name.endswith("_fraction") and units in ("1", ""):
        return "%"
    return _UNIT_TEXT.get(units, units)


def sentence_start(text: str) -> str:
    """``text`` with its first letter capitalised, unless its first word is an identifier
    (``tokens_total ...``): "Tokens_total" is neither the identifier nor a word."""
    first = text.split(" ", 1)[0]
    return text if "_" in first else text[:1].upper() + text[1:]


def axis_label(name: str, ds=None, unit: str | None = None) -> str:
    """Plot label ``long name [unit]``; no brackets for a dimensionless quantity.
    ``unit`` overrides the displayed unit (when the plot rescales, e.g. W shown in kW)."""
    long_name, units = describe(name, ds)
    shown = display_unit(name, units) if unit is None else unit
    text = sentence_start(long_name)
    return f"{text} [{shown}]" if shown and shown not in DIMENSIONLESS else text


#: units of quantities that cannot be negative: totals of tokens, GPU-, node- and rack-hours,
#: energy, money, CO2, counts, durations, and ratios of such totals (``"1"``: PUE, shares,
#: load fractions); kW and kW/s are not here (a capacity margin is negative when short),
#: nor temperatures or their margins
NON_NEGATIVE_UNITS = frozenset({"tokens", "tokens/day", "GPU-h", "node-h", "rack-h", "count", "GPU", "h",
                                "min", "s", "days", "MWh", "kWh", "Wh", "GWh", "kWh/h", "USD", "t CO2",
                                "USD/1e9 tokens", "1"})


def physical_bounds(name: str, units: str) -> tuple[float, float]:
    """(lowest, highest) value the quantity ``name`` in ``units`` can physically take, from
    its unit and name (the output table's units, :func:`describe`): a share (``*_fraction``
    or ``utilization*`` in units "1", not a load or use fraction, which exceed 1 when over a
    limit) lies in [0, 1]; a quantity in :data:`NON_NEGATIVE_UNITS` is >= 0; anything else
    is unbounded. Used to clip the intervals a report prints, never the data."""
    lower = 0.0 if units in NON_NEGATIVE_UNITS else -math.inf
    share = (units in ("1", "") and (name.endswith("_fraction") or name.startswith("utilization"))
             and "load" not in name and "_use_" not in name)
    return (0.0, 1.0) if share else (lower, math.inf)


def interval_text(iv, units: str = "", name: str = "") -> str:
    """``mean [low, high]`` of a :class:`twin.studies.stats.Interval` in human units, the
    bounds clipped to :func:`physical_bounds` and a clipped bound marked ``*``; the mean alone
    with "(n = 2: no interval)" when the interval is not meaningful (too few values)."""
    text = human(iv.mean, units, name)
    if iv.method == "none":
        return text
    if not iv.meaningful:
        return f"{text} (n = {iv.n}: no interval)"
    c = iv.clip(*physical_bounds(name, units))
    low = human(c.low, units, name) + ("*" if c.low_clipped else "")
    high = human(c.high, units, name) + ("*" if c.high_clipped else "")
    return f"{text} [{low}, {high}]"


# --------------------------------------------------------------------------- numbers
_PREFIX = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k"))


def _sig(v: float, digits: int = 3) -> str:
    """``v`` with ``digits`` significant digits, no exponent, thousands separators."""
    if v == 0:
        return "0"
    mag = int(math.floor(math.log10(abs(v))))
    decimals = max(0, digits - 1 - mag)
    text = f"{v:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def human(value, units: str = "", name: str = "", digits: int = 3) -> str:
    """A value as a planner reads it, with its unit: ``human(5.663e13, "tokens")`` ->
    "56.6 T tokens"; ``human(9821, "MWh")`` -> "9.82 GWh"; ``human(2410, "kW")`` ->
    "2.41 MW"; ``human(0.977, "1", "goodput_fraction")`` -> "97.7 %"; ``human(18.6,
    "degC")`` -> "18.6 °C"; ``human(9.84e6, "GPU-h")`` -> "9.84 M GPU-h"."""
    if value is None:
        return "n/a"
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not np.isfinite(v):
        return "n/a"
    v = v + 0.0
    a = abs(v)
    if v == 0 and units not in ("degC", "C"):
        return f"0 {display_unit(name, units)}".strip()
    if name.endswith("_fraction") and units in ("1", ""):
        return f"{_sig(100 * v, digits)} %"
    if units in ("W", "kW", "MW"):
        w = v * {"W": 1.0, "kW": 1e3, "MW": 1e6}[units]
        for scale, u in ((1e9, "GW"), (1e6, "MW"), (1e3, "kW")):
            if abs(w) >= scale:
                return f"{_sig(w / scale, digits)} {u}"
        return f"{_sig(w, digits)} W"
    if units in ("Wh", "kWh", "MWh", "GWh"):
        wh = v * {"Wh": 1.0, "kWh": 1e3, "MWh": 1e6, "GWh": 1e9}[units]
        for scale, u in ((1e12, "TWh"), (1e9, "GWh"), (1e6, "MWh"), (1e3, "kWh")):
            if abs(wh) >= scale:
                return f"{_sig(wh / scale, digits)} {u}"
        return f"{_sig(wh, digits)} Wh"
    if units == "USD":
        for scale, u in ((1e9, " B"), (1e6, " M"), (1e3, " k")):
            if a >= scale:
                return f"${_sig(v / scale, digits)}{u}"
        return f"${_sig(v, digits)}"
    if units == "s" and a >= 60:
        return human(v / 3600.0, "h", name, digits) if a >= 3600 else f"{_sig(v / 60.0, digits)} min"
    if units in ("count", "GPU", "") and float(v).is_integer() and a < 1e6:
        text = f"{v:,.0f}"
        unit = display_unit(name, units)
        return f"{text} {unit}".strip()
    unit = display_unit(name, units)
    if units in ("degC", "C"):
        return f"{v:.1f} °C"
    if units == "%":
        return f"{_sig(v, digits)} %"
    if a >= 1e4:
        for scale, p in _PREFIX:
            if a >= scale:
                return f"{_sig(v / scale, digits)} {p} {unit}".strip()
    return f"{_sig(v, digits)} {unit}".strip()


def human_kpi(name: str, value, ds=None) -> str:
    """:func:`human` of a KPI by name (its unit from :func:`describe`)."""
    return human(value, describe(name, ds)[1], name)

"""Outdoor weather from typical-year files (TMY3 or EnergyPlus EPW), wet-bulb temperature,
and design conditions.

A typical meteorological year is 8,760 hourly records chosen month by month from a long
record to represent the climate of a station (NREL TMY3: Wilcox & Marion, NREL/TP-581-43156,
2008; EPW: the EnergyPlus weather format, "Auxiliary Programs", ch. 2). The cooling plant
needs the dry bulb (air-cooled condensers, dry coolers) and the wet bulb (cooling towers,
evaporative economizers); both come from here, the sine of :func:`twin.power.facility.
outdoor_temp_c` stays as the fallback when a scenario names no file.

The readers check what they read and raise :class:`WeatherFileError` naming the file and
the line (1-based, as an editor shows it) of the first problem: a missing header column, a
short row, a value that is not a number or is outside its physical range, EPW missing-value
codes, or a year that is not 8,760 hours.

Files shipped with the twin (``twin/catalog/weather/``, see the README there):
``723170TYA.CSV`` - Greensboro Piedmont Triad International, NC (TMY3, NREL NSRDB 1991-2005),
as distributed with pvlib-python's test data.
"""

from __future__ import annotations

import csv
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = [
    "Weather",
    "WeatherFileError",
    "design_temp_c",
    "outdoor_conditions",
    "read_epw",
    "read_tmy3",
    "read_weather",
    "resolve_weather_path",
    "wet_bulb_temp_c",
    "wet_bulb_temp_stull_c",
]

HOURS_PER_YEAR = 8760
CATALOG_DIR = Path(__file__).resolve().parent.parent / "catalog" / "weather"

#: physical ranges a reader accepts (beyond them a record is an error)
DRY_BULB_RANGE_C = (-90.0, 60.0)
DEW_POINT_RANGE_C = (-95.0, 40.0)
RH_RANGE_PERCENT = (0.0, 100.0)
PRESSURE_RANGE_PA = (30_000.0, 110_000.0)


class WeatherFileError(ValueError):
    """A weather file that is missing or malformed; ``file`` and ``line`` (1-based) name it."""

    def __init__(self, file, line: int | None, message: str):
        self.file = str(file)
        self.line = line
        where = f"{self.file}, line {line}" if line is not None else self.file
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class Weather:
    """One typical year of hourly outdoor conditions.

    hour_ending (8760,) hours 1..8760 of local standard time (record k covers the hour
    ending then); dry_bulb_c, dew_point_c, relative_humidity_percent, pressure_pa,
    wet_bulb_c (8760,). station, latitude_deg, longitude_deg, timezone_h, source (file).
    """

    source: str
    station: str
    latitude_deg: float
    longitude_deg: float
    timezone_h: float
    hour_ending: np.ndarray
    dry_bulb_c: np.ndarray
    dew_point_c: np.ndarray
    relative_humidity_percent: np.ndarray
    pressure_pa: np.ndarray
    wet_bulb_c: np.ndarray


def saturation_vapour_pressure_pa(temp_c):
    """Saturation vapour pressure over water [Pa] (Magnus form, Alduchov & Eskridge,
    J. Appl. Meteor. 35 (1996) 601): e_s = 610.94 exp(17.625 T / (T + 243.04))."""
    t = np.asarray(temp_c, float)
    return 610.94 * np.exp(17.625 * t / (t + 243.04))


def wet_bulb_temp_c(dry_bulb_c, relative_humidity_percent, pressure_pa=101_325.0):
    """Thermodynamic wet-bulb temperature [C] from dry bulb [C], RH [%] and pressure [Pa].

    Solves the psychrometric energy balance of an adiabatic saturator (ASHRAE Handbook -
    Fundamentals 2017, ch. 1, eq. 33 in SI, kJ/kg):
    W = ((2501 - 2.326 t*) W_s(t*) - 1.006 (t - t*)) / (2501 + 1.86 t - 4.186 t*),
    W = 0.621945 e / (p - e), by bisection on t* in [t - 60 K, t] (vectorised, 60 halvings).
    """
    t = np.asarray(dry_bulb_c, float)
    p = np.broadcast_to(np.asarray(pressure_pa, float), t.shape)
    e = np.clip(np.asarray(relative_humidity_percent, float), 0.0, 100.0) / 100.0 * saturation_vapour_pressure_pa(t)
    w = 0.621945 * e / (p - e)

    def residual(ts):
        es = saturation_vapour_pressure_pa(ts)
        ws = 0.621945 * es / (p - es)
        return ((2501.0 - 2.326 * ts) * ws - 1.006 * (t - ts)) / (2501.0 + 1.86 * t - 4.186 * ts) - w

    lo, hi = t - 60.0, t.copy()
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        neg = residual(mid) < 0  # W at t* too low: t* is higher
        lo = np.where(neg, mid, lo)
        hi = np.where(neg, hi, mid)
    return 0.5 * (lo + hi)


def wet_bulb_temp_stull_c(dry_bulb_c, relative_humidity_percent):
    """Wet-bulb temperature [C] at 101.325 kPa by Stull's empirical fit (J. Appl. Meteor.
    Climatol. 50 (2011) 2267, doi:10.1175/JAMC-D-11-0143.1), valid for RH 5-99 %,
    -20..50 C, within -1 K / +0.65 K; an independent check of :func:`wet_bulb_temp_c`."""
    t = np.asarray(dry_bulb_c, float)
    rh = np.asarray(relative_humidity_percent, float)
    return (t * np.arctan(0.151977 * np.sqrt(rh + 8.313659)) + np.arctan(t + rh) - np.arctan(rh - 1.676331)
            + 0.00391838 * rh**1.5 * np.arctan(0.023101 * rh) - 4.686035)


def _number(text: str, file, line: int, what: str, lo: float, hi: float) -> float:
    try:
        v = float(text)
    except ValueError:
        raise WeatherFileError(file, line, f"{what} is {text!r}, not a number") from None
    if not lo <= v <= hi:
        raise WeatherFileError(file, line, f"{what} = {v:g} outside [{lo:g}, {hi:g}] (missing-value code?)")
    return v


def _weather(file, station, lat, lon, tz, db, dp, rh, p) -> Weather:
    db, dp, rh, p = (np.asarray(a, float) for a in (db, dp, rh, p))
    return Weather(str(file), station, lat, lon, tz, np.arange(1, HOURS_PER_YEAR + 1, dtype=float), db, dp, rh, p,
                   wet_bulb_temp_c(db, rh, p))


def read_tmy3(path) -> Weather:
    """Read an NREL TMY3 CSV file (line 1: station metadata; line 2: column names;
    8,760 hourly rows with 'Date (MM/DD/YYYY)', 'Time (HH:MM)', 'Dry-bulb (C)',
    'Dew-point (C)', 'RHum (%)', 'Pressure (mbar)')."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="strict").splitlines()
    except FileNotFoundError:
        raise WeatherFileError(path, None, "no such file") from None
    except UnicodeDecodeError as exc:
        raise WeatherFileError(path, None, f"not a text file ({exc.reason})") from None
    if len(text) < 2:
        raise WeatherFileError(path, len(text) or 1, "a TMY3 file starts with a metadata line and a header line")
    meta = next(csv.reader([text[0]]))
    if len(meta) < 7:
        raise WeatherFileError(path, 1, f"station metadata has {len(meta)} fields, expected 7 "
                                        "(id, name, state, time zone, latitude, longitude, elevation)")
    tz = _number(meta[3], path, 1, "time zone", -12, 14)
    lat = _number(meta[4], path, 1, "latitude", -90, 90)
    lon = _number(meta[5], path, 1, "longitude", -180, 180)
    header = next(csv.reader([text[1]]))
    cols = {}
    for name in ("Date (MM/DD/YYYY)", "Time (HH:MM)", "Dry-bulb (C)", "Dew-point (C)", "RHum (%)", "Pressure (mbar)"):
        if name not in header:
            raise WeatherFileError(path, 2, f"column {name!r} missing from the header")
        cols[name] = header.index(name)
    rows = text[2:]
    if len(rows) != HOURS_PER_YEAR:
        raise WeatherFileError(path, 2 + min(len(rows), HOURS_PER_YEAR) + (len(rows) > HOURS_PER_YEAR),
                               f"{len(rows)} hourly rows, a typical year has {HOURS_PER_YEAR}")
    db, dp, rh, p = (np.empty(HOURS_PER_YEAR) for _ in range(4))
    width = max(cols.values()) + 1
    prev = None
    for k, fields in enumerate(csv.reader(rows)):
        line = k + 3
        if len(fields) < width:
            raise WeatherFileError(path, line, f"{len(fields)} fields, expected at least {width}")
        try:
            stamp = dt.datetime.strptime(fields[cols["Date (MM/DD/YYYY)"]], "%m/%d/%Y")
            hh, mm = fields[cols["Time (HH:MM)"]].split(":")
            hour = int(hh)
            if not (1 <= hour <= 24 and mm == "00"):
                raise ValueError
        except ValueError:
            raise WeatherFileError(path, line, f"date/time {fields[0]!r} {fields[1]!r} is not MM/DD/YYYY and "
                                               "HH:00 with the hour in 1..24") from None
        key = (stamp.month, stamp.day, hour)
        if prev is not None and key <= prev:
            raise WeatherFileError(path, line, f"record {fields[0]} {fields[1]} is out of order")
        prev = key
        db[k] = _number(fields[cols["Dry-bulb (C)"]], path, line, "dry bulb [C]", *DRY_BULB_RANGE_C)
        dp[k] = _number(fields[cols["Dew-point (C)"]], path, line, "dew point [C]", *DEW_POINT_RANGE_C)
        rh[k] = _number(fields[cols["RHum (%)"]], path, line, "relative humidity [%]", *RH_RANGE_PERCENT)
        p[k] = 100.0 * _number(fields[cols["Pressure (mbar)"]], path, line, "pressure [mbar]",
                               PRESSURE_RANGE_PA[0] / 100, PRESSURE_RANGE_PA[1] / 100)
    return _weather(path, meta[1].strip(), lat, lon, tz, db, dp, rh, p)


EPW_HEADER_LINES = 8


def read_epw(path) -> Weather:
    """Read an EnergyPlus EPW file (8 header lines starting with LOCATION; 8,760 rows of
    at least 10 fields: year, month, day, hour 1-24, minute, flags, dry bulb [C], dew point
    [C], RH [%], pressure [Pa]; 99.9 / 999 / 999999 are missing-value codes)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        raise WeatherFileError(path, None, "no such file") from None
    if not text or not text[0].startswith("LOCATION"):
        raise WeatherFileError(path, 1, "an EPW file starts with a LOCATION line")
    loc = text[0].split(",")
    if len(loc) < 10:
        raise WeatherFileError(path, 1, f"LOCATION has {len(loc)} fields, expected 10")
    lat = _number(loc[6], path, 1, "latitude", -90, 90)
    lon = _number(loc[7], path, 1, "longitude", -180, 180)
    tz = _number(loc[8], path, 1, "time zone", -12, 14)
    rows = text[EPW_HEADER_LINES:]
    if len(rows) != HOURS_PER_YEAR:
        raise WeatherFileError(path, EPW_HEADER_LINES + min(len(rows), HOURS_PER_YEAR) + (len(rows) > HOURS_PER_YEAR),
                               f"{len(rows)} hourly rows, a typical year has {HOURS_PER_YEAR}")
    db, dp, rh, p = (np.empty(HOURS_PER_YEAR) for _ in range(4))
    prev = None
    for k, row in enumerate(rows):
        line = k + EPW_HEADER_LINES + 1
        f = row.split(",")
        if len(f) < 10:
            raise WeatherFileError(path, line, f"{len(f)} fields, expected at least 10")
        month = _number(f[1], path, line, "month", 1, 12)
        day = _number(f[2], path, line, "day", 1, 31)
        hour = _number(f[3], path, line, "hour", 1, 24)
        key = (month, day, hour)
        if prev is not None and key <= prev:
            raise WeatherFileError(path, line, f"record month {f[1]} day {f[2]} hour {f[3]} is out of order")
        prev = key
        db[k] = _number(f[6], path, line, "dry bulb [C]", *DRY_BULB_RANGE_C)
        dp[k] = _number(f[7], path, line, "dew point [C]", *DEW_POINT_RANGE_C)
        rh[k] = _number(f[8], path, line, "relative humidity [%]", *RH_RANGE_PERCENT)
        p[k] = _number(f[9], path, line, "pressure [Pa]", *PRESSURE_RANGE_PA)
    return _weather(path, loc[1].strip(), lat, lon, tz, db, dp, rh, p)


def resolve_weather_path(name, base_dir=None) -> Path:
    """Path of a weather file named in a scenario: as given (absolute, or relative to
    ``base_dir`` or the working directory), else a file of ``twin/catalog/weather``."""
    p = Path(name)
    for cand in ([p] if p.is_absolute() else ([Path(base_dir) / p] if base_dir else []) + [p, CATALOG_DIR / p]):
        if cand.is_file():
            return cand
    return p


def read_weather(path, base_dir=None) -> Weather:
    """Read a TMY3 (``.csv``) or EPW (``.epw``) file, by extension or first line."""
    p = resolve_weather_path(path, base_dir)
    if not p.is_file():
        raise WeatherFileError(path, None, f"no such file (looked beside the scenario, in the working "
                                           f"directory and in {CATALOG_DIR})")
    with open(p, encoding="utf-8", errors="replace") as fh:
        first = fh.readline()
    if p.suffix.lower() == ".epw" or first.startswith("LOCATION"):
        return read_epw(p)
    return read_tmy3(p)


def outdoor_conditions(weather: Weather, t_s, *, start: dt.date | dt.datetime):
    """Dry and wet bulb [C] at simulation times ``t_s`` [s] after ``start``.

    The typical year repeats; the hour of year is counted from 1 January of the start's
    year (29 February maps onto 1 March's record). Linear interpolation between the
    hourly records (record k at hour-ending k, i.e. the conditions at the end of hour k).
    Returns (dry_bulb_c, wet_bulb_c) arrays shaped like ``t_s``.
    """
    start_dt = start if isinstance(start, dt.datetime) else dt.datetime(start.year, start.month, start.day)
    jan1 = dt.datetime(start_dt.year, 1, 1)
    offset_h = (start_dt - jan1).total_seconds() / 3600.0
    leap = start_dt.year % 4 == 0 and (start_dt.year % 100 != 0 or start_dt.year % 400 == 0)
    if leap and start_dt >= dt.datetime(start_dt.year, 3, 1):
        offset_h -= 24.0
    h = (offset_h + np.asarray(t_s, float) / 3600.0) % HOURS_PER_YEAR
    xp = np.concatenate([[0.0], weather.hour_ending])
    db = np.concatenate([[weather.dry_bulb_c[-1]], weather.dry_bulb_c])
    wb = np.concatenate([[weather.wet_bulb_c[-1]], weather.wet_bulb_c])
    return np.interp(h, xp, db), np.interp(h, xp, wb)


def design_temp_c(values_c, exceedance_fraction: float = 0.004) -> float:
    """Design temperature [C]: the value exceeded in ``exceedance_fraction`` of the hours
    (ASHRAE Handbook - Fundamentals, ch. 14: 0.4 %, 1 % and 2 % annual cooling design
    conditions; 0.4 % = 35 hours a year)."""
    return float(np.quantile(np.asarray(values_c, float), 1.0 - exceedance_fraction))

"""Typical-year weather files: readers, line-numbered errors, wet bulb, design conditions."""

import csv
import datetime as dt

import numpy as np
import pytest

from twin.thermal.weather import (
    CATALOG_DIR,
    WeatherFileError,
    design_temp_c,
    outdoor_conditions,
    read_epw,
    read_tmy3,
    read_weather,
    wet_bulb_temp_c,
    wet_bulb_temp_stull_c,
)

TMY3 = CATALOG_DIR / "723170TYA.CSV"


@pytest.fixture(scope="module")
def greensboro():
    return read_weather("723170TYA.CSV")


def test_tmy3_reader_matches_an_independent_csv_read(greensboro):
    w = greensboro
    assert w.station == "GREENSBORO PIEDMONT TRIAD INT"
    assert (w.latitude_deg, w.longitude_deg, w.timezone_h) == (36.1, -79.95, -5.0)
    with open(TMY3, newline="") as fh:
        rows = list(csv.reader(fh))
    col = rows[1].index("Dry-bulb (C)")
    db = np.array([float(r[col]) for r in rows[2:]])
    assert w.dry_bulb_c.size == 8760
    assert np.array_equal(w.dry_bulb_c, db)
    # first record: 01/01 01:00, 10.0 C dry bulb, 77 % RH, 993 mbar
    assert (w.dry_bulb_c[0], w.relative_humidity_percent[0], w.pressure_pa[0]) == (10.0, 77.0, 99300.0)


def test_wet_bulb_against_tables_and_stull():
    # psychrometric chart (ASHRAE Fundamentals ch. 1, sea level): 30 C / 50 % -> 22.0 C;
    # saturated air: wet bulb = dry bulb
    assert wet_bulb_temp_c(30.0, 50.0) == pytest.approx(22.0, abs=0.1)
    assert wet_bulb_temp_c(20.0, 100.0) == pytest.approx(20.0, abs=1e-6)
    # Stull's independent empirical fit (quoted accuracy about -1 / +0.65 K)
    t, rh = np.meshgrid(np.linspace(0, 45, 19), np.linspace(20, 95, 16))
    d = wet_bulb_temp_c(t, rh) - wet_bulb_temp_stull_c(t, rh)
    assert np.abs(d).max() < 1.0 and np.abs(d).mean() < 0.35
    # lower pressure (altitude) lowers the wet bulb of the same air
    assert wet_bulb_temp_c(30.0, 50.0, 80_000.0) < wet_bulb_temp_c(30.0, 50.0)


def test_design_conditions_and_interpolation(greensboro):
    w = greensboro
    # 0.4 % design: exceeded in 35 of 8760 hours
    d = design_temp_c(w.dry_bulb_c, 0.004)
    assert np.sum(w.dry_bulb_c > d) <= 35 <= np.sum(w.dry_bulb_c >= d)
    assert 30.0 < d < w.dry_bulb_c.max() and design_temp_c(w.wet_bulb_c) < d
    # a run starting 1 Jan (non-leap) at 00:00: one hour in is record 0, exactly
    db, wb = outdoor_conditions(w, np.array([3600.0, 5400.0]), start=dt.date(2025, 1, 1))
    assert db[0] == w.dry_bulb_c[0] and wb[0] == pytest.approx(w.wet_bulb_c[0])
    assert db[1] == pytest.approx(0.5 * (w.dry_bulb_c[0] + w.dry_bulb_c[1]))
    # the year repeats; in a leap year 1 March maps onto 1 March's record
    db2, _ = outdoor_conditions(w, 3600.0 + 365 * 86400.0, start=dt.date(2025, 1, 1))
    assert db2 == db[0]
    mar = (31 + 28) * 24
    db3, _ = outdoor_conditions(w, 3600.0, start=dt.date(2024, 3, 1))
    assert db3 == w.dry_bulb_c[mar]


def _write_epw(path, w, *, break_line=None, bad=None):
    lines = ["LOCATION,Greensboro,NC,USA,TMY3,723170,36.10,-79.95,-5.0,273.0"]
    lines += [f"HEADER{k}," for k in range(7)]
    day = dt.datetime(2001, 1, 1)
    for k in range(8760):
        t = day + dt.timedelta(hours=k)
        lines.append(f"1988,{t.month},{t.day},{t.hour + 1},60,X,{w.dry_bulb_c[k]:.1f},{w.dew_point_c[k]:.1f},"
                     f"{w.relative_humidity_percent[k]:.0f},{w.pressure_pa[k]:.0f},0,0,0")
    if bad is not None:
        lines[bad[0] - 1] = bad[1]
    if break_line is not None:
        del lines[break_line - 1:]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_epw_reader_agrees_with_tmy3(tmp_path, greensboro):
    w2 = read_weather(_write_epw(tmp_path / "gso.epw", greensboro))
    assert w2.station == "Greensboro"
    assert w2.dry_bulb_c == pytest.approx(greensboro.dry_bulb_c, abs=0.05)
    assert w2.wet_bulb_c == pytest.approx(greensboro.wet_bulb_c, abs=0.05)


def test_malformed_files_name_the_line(tmp_path, greensboro):
    with pytest.raises(WeatherFileError, match="no such file"):
        read_weather(tmp_path / "nowhere.epw")
    # EPW: missing-value code 99.9 in the dry bulb of data line 3 (file line 11)
    p = _write_epw(tmp_path / "a.epw", greensboro, bad=(11, "1988,1,1,3,60,X,99.9,5.0,80,99300,0"))
    with pytest.raises(WeatherFileError, match=r"a\.epw, line 11: dry bulb") as e:
        read_epw(p)
    assert e.value.line == 11
    p = _write_epw(tmp_path / "b.epw", greensboro, bad=(20, "1988,1,1,12,60,X,ten,5.0,80,99300,0"))
    with pytest.raises(WeatherFileError, match="line 20: dry bulb .*'ten'"):
        read_epw(p)
    p = _write_epw(tmp_path / "c.epw", greensboro, break_line=5000)
    with pytest.raises(WeatherFileError, match="4991 hourly rows"):
        read_epw(p)
    # TMY3: a short row and a missing column
    text = TMY3.read_text().splitlines()
    bad = text[:100] + ["01/05/1988,03:00,0,0"] + text[101:]
    (tmp_path / "d.csv").write_text("\n".join(bad) + "\n")
    with pytest.raises(WeatherFileError, match=r"d\.csv, line 101: 4 fields"):
        read_tmy3(tmp_path / "d.csv")
    hdr = text[1].replace("Dry-bulb (C)", "Drybulb")
    (tmp_path / "e.csv").write_text("\n".join([text[0], hdr] + text[2:]) + "\n")
    with pytest.raises(WeatherFileError, match="line 2: column 'Dry-bulb \\(C\\)' missing"):
        read_tmy3(tmp_path / "e.csv")
    swapped = text[:10] + [text[11], text[10]] + text[12:]
    (tmp_path / "f.csv").write_text("\n".join(swapped) + "\n")
    with pytest.raises(WeatherFileError, match="line 12: record .* out of order"):
        read_tmy3(tmp_path / "f.csv")

"""Answer-first reports: the summary names the binding constraint with numbers that agree
with an independent source (events.csv), KPIs read in human units, intervals state their
n and method, the page fits its width in Chromium, and PDF printing works."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

import twin
from twin.report import build_report, chromium, chromium_executable
from twin.studies import summary
from twin.studies.labels import axis_label, describe, human
from twin.studies.stats import MIN_SEEDS, interval_note, mean_interval, paired_difference
from twin.studies.tables import parse_weights, siting_table

pytest.importorskip("matplotlib")
ROOT = Path(__file__).resolve().parents[2]
needs_chromium = pytest.mark.skipif(chromium_executable() is None,
                                    reason="headless Chromium is not installed (.ci/run installs it)")


@pytest.fixture(scope="module")
def blue_vela(tmp_path_factory):
    r = twin.simulate(twin.load_scenario(ROOT / "scenarios" / "blue_vela.yaml"))
    return r.save(tmp_path_factory.mktemp("bv") / "run")


# --------------------------------------------------------------------------- units and labels
@pytest.mark.parametrize("value, units, name, text", [
    (5.663e13, "tokens", "tokens_total", "56.6 T tokens"),
    (9821.0, "MWh", "energy_facility_mwh", "9.82 GWh"),
    (2410.0, "kW", "peak_facility_power_kw", "2.41 MW"),
    (0.9774, "1", "goodput_fraction", "97.7 %"),
    (18.6, "degC", "max_rack_inlet_c", "18.6 °C"),
    (9.843e6, "GPU-h", "gpu_hours_installed", "9.84 M GPU-h"),
    (0.0, "MWh", "ups_loss_mwh", "0 MWh"),
    (152, "count", "interruptions", "152"),
    (1.94e6, "USD", "upgrade_cost_usd", "$1.94 M"),
    (5400.0, "s", "", "1.5 h"),
])
def test_human_units(value, units, name, text):
    assert human(value, units, name) == text


def test_labels_come_from_the_output_table_and_never_print_empty_brackets():
    from twin import outputs
    # the output table declares each variable once; the label follows it
    assert describe("gpus_powered") == (outputs.long_name("gpus_powered"), outputs.units("gpus_powered"))
    assert axis_label("facility_total_power_w", unit="kW") == "Utility power: IT + losses + cooling [kW]"
    # a variable the table does not declare: the Dataset's attributes
    ds = xr.Dataset({"my_ratio": ("time", [1, 2], {"units": "1", "long_name": "a ratio"}),
                     "my_power_w": ("time", [1.0, 2.0], {"units": "W", "long_name": "some power"})})
    assert axis_label("my_ratio", ds) == "A ratio"
    assert axis_label("my_power_w", ds, "kW") == "Some power [kW]"
    for k in list(outputs.KPI_BY_NAME) + list(outputs.OUTPUT_BY_NAME):
        assert "[]" not in axis_label(k), k


# --------------------------------------------------------------------------- statistics
def test_t_interval_matches_the_textbook_formula():
    v = np.array([10.0, 12.0, 9.0, 11.0, 13.0])
    iv = mean_interval(v, 0.9)
    half = stats.t.ppf(0.95, 4) * v.std(ddof=1) / np.sqrt(5)   # Student (1908)
    assert (iv.mean, iv.low, iv.high, iv.n, iv.method) == pytest.approx((11.0, 11 - half, 11 + half, 5, "t"))
    assert iv.describe() == "90 % t-interval, n = 5"
    assert mean_interval([3.0]).method == "none" and np.isnan(mean_interval([3.0]).low)


def test_t_and_bootstrap_intervals_cover_the_true_mean_at_their_level():
    rng = np.random.default_rng(1)
    hits_t = hits_b = 0
    trials = 300
    for _ in range(trials):
        x = rng.normal(5.0, 2.0, 8)
        hits_t += mean_interval(x, 0.9).low <= 5.0 <= mean_interval(x, 0.9).high
        b = mean_interval(x, 0.9, "bootstrap", n_boot=400)
        hits_b += b.low <= 5.0 <= b.high
    # binomial(300, 0.9): 3 sigma = 16 runs; the percentile bootstrap under-covers for n = 8
    assert abs(hits_t / trials - 0.9) < 0.055
    assert 0.75 < hits_b / trials < 0.95


def test_pairing_by_seed_removes_the_shared_noise():
    rng = np.random.default_rng(2)
    common = rng.normal(0, 10.0, 6)           # the same seed stream at both grid points
    a, b = 100 + common + rng.normal(0, 0.1, 6), 99 + common + rng.normal(0, 0.1, 6)
    paired = paired_difference(a, b)
    assert paired.excludes(0.0) and paired.mean == pytest.approx(1.0, abs=0.2)
    unpaired_a, unpaired_b = mean_interval(a), mean_interval(b)
    assert unpaired_a.low < unpaired_b.high          # unpaired intervals overlap: not established


def test_interval_note_warns_below_five_seeds():
    assert "Warning" in interval_note(2) and "n = 2 seeds" in interval_note(2)
    assert "Warning" not in interval_note(MIN_SEEDS)
    assert "no interval" in interval_note(1)


# --------------------------------------------------------------------------- the answer
def test_power_wait_on_a_hand_made_ramp():
    t = pd.date_range("2024-01-01", periods=6, freq="D")
    ds = xr.Dataset({"gpus_installed": ("time", [0, 32, 32, 32, 32, 32]),
                     "gpus_powered": ("time", [0, 16, 16, 16, 32, 32]),
                     "facility_it_power_w": ("time", [0, 20e3, 20e3, 20e3, 40e3, 40e3]),
                     "power_available_w": ("time", [50e3] * 6)}, coords={"time": t})
    pw = summary.power_wait(ds, rack_worst_w=30e3, gpus_per_rack=16)
    assert pw["start"] == t[1] and pw["end"] == t[4]
    assert pw["unpowered_gpus"] == 16 and pw["racks_powered"] == 1
    assert pw["headroom_w"] == pytest.approx(30e3) and pw["committed_w"] == pytest.approx(30e3)
    assert pw["gpu_hours"] == pytest.approx(16 * 3 * 24)
    # 30 kW committed + one more 30 kW rack > 50 kW: admission binds although 30 kW are free
    assert "admission rule" in summary.power_wait_sentence(pw)


def test_gpu_hour_budget_adds_up(blue_vela):
    res = twin.Results.load(blue_vela)
    b = summary.gpu_hour_budget(res.dataset)
    assert b["unpowered"] + b["not_healthy"] + b["idle"] + b["busy"] == pytest.approx(b["installed"], rel=1e-12)
    assert b["installed"] == pytest.approx(res.kpis["gpu_hours_installed"], rel=0.01)
    assert b["busy"] == pytest.approx(res.kpis["gpu_hours_busy"], rel=0.01)


def test_blue_vela_report_opens_with_the_answer_and_its_numbers_match_the_events(blue_vela):
    text = build_report(blue_vela)
    assert text.index("<section id='summary'>") < text.index("<h2>Ramp</h2>")
    sect = re.search(r"<section id='summary'>(.*?)</section>", text, re.S).group(1)
    answer = re.search(r"<p class='answer'>(.*?)</p>", sect, re.S).group(1)
    assert "56.6 T tokens" in answer or "T tokens" in answer
    assert "binding constraint" in answer
    m = re.search(r"([\d,]+) of 2,048 delivered GPUs stayed unpowered although IT power averaged ([\d.]+) MW, "
                  r"([\d.]+) kW under the ([\d.]+) MW stage: racks are admitted at their ([\d.]+) kW worst case "
                  r"\((\d+) racks commit ([\d.]+) MW\)", answer)
    assert m, answer
    unpowered, it_mw, headroom_kw, stage_mw, worst_kw, racks, committed_mw = m.groups()
    assert int(unpowered.replace(",", "")) % 16 == 0 and int(unpowered.replace(",", "")) > 0
    # independent source: the admission events write "<committed> of <stage> kW worst case committed"
    ev = pd.read_csv(blue_vela / "events.csv")
    last = ev[ev.kind == "power_on"].detail.str.extract(r"(\d+) of (\d+) kW worst case").astype(float)
    committed_ev, stage_ev = last.iloc[-2]     # the admission before the final stage
    assert float(committed_mw) * 1e3 == pytest.approx(committed_ev, rel=0.01)
    assert float(stage_mw) * 1e3 == pytest.approx(stage_ev, rel=0.01)
    assert float(worst_kw) * int(racks) == pytest.approx(committed_ev, rel=0.01)
    assert float(stage_mw) * 1e3 - float(it_mw) * 1e3 == pytest.approx(float(headroom_kw), abs=10)
    for what in ("hall hall_1", "power plan", "cluster", "job mix"):
        assert f"<th>{what}</th>" in sect
    assert "e+1" not in sect and "[]" not in text
    assert "9.82 GWh" in sect or "GWh" in sect


def _sweep(values, labels, dim="site"):
    v = np.asarray(values, float)
    return xr.Dataset({"tokens_total": ((dim, "seed"), v, {"units": "tokens"}),
                       "status": ((dim, "seed"), np.full(v.shape, "ok"))},
                      coords={dim: list(labels), "seed": np.arange(v.shape[1])})


def test_sweep_answer_states_the_paired_interval_n_and_method():
    ds = _sweep([[100e9, 110e9, 120e9], [98e9, 108e9, 118e9]], ["a", "b"], "x")
    text = summary.sweep_answer(ds, ["x"], ["tokens_total"])
    assert "highest with a" in text and "seed-paired difference is 2 B tokens" in text
    assert "90 % t-interval, n = 3" in text and "established" in text and "not established" not in text


# --------------------------------------------------------------------------- siting weights
def _siting():
    names = ["gpus_hosted", "gpus_delivered", "days_to_full_capacity", "tokens_total", "max_rack_inlet_c",
             "upgrade_cost_usd", "energy_cost_usd", "co2_t"]
    rows = {"big": [2048, 2048, 240, 8.0e13, 19, 2e6, 1.3e6, 3300],
            "small_green": [1536, 1536, 90, 6.8e13, 19, 0.5e6, 0.7e6, 390]}
    return xr.Dataset({k: (("site", "seed"), np.array([[rows[s][i]] for s in rows], float))
                       for i, k in enumerate(names)}, coords={"site": list(rows), "seed": [0]})


def test_siting_weights_decide_and_are_validated():
    ds = _siting()
    assert siting_table(ds).site.iloc[0] == "big"           # hosting the cluster weighs most by default
    assert siting_table(ds, "site", "gpus_hosted=0,tokens_total=0").site.iloc[0] == "small_green"
    t = siting_table(ds, "site", {"co2_t": 10})
    assert t.attrs["weights"]["co2_t"] == 10 and t.site.iloc[0] == "small_green"
    for bad in ("nope=1", "co2_t=-1", "co2_t=x"):
        with pytest.raises(ValueError, match="siting weight"):
            parse_weights(bad)


# --------------------------------------------------------------------------- CLI, PDF, page width
def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "twin.cli", "report", *args], capture_output=True, text=True,
                          cwd=cwd)


@pytest.mark.parametrize("out, needle", [("r.txt", ".html or .pdf"), ("r", "no extension")])
def test_report_extension_that_is_no_report_format_exits_2(blue_vela, tmp_path, out, needle):
    r = _cli(str(blue_vela), "--out", str(tmp_path / out))
    assert r.returncode == 2 and needle in r.stderr and not (tmp_path / out).exists()


def test_report_bad_weights_exit_2(blue_vela, tmp_path):
    r = _cli(str(blue_vela), "--out", str(tmp_path / "r.html"), "--weights", "gpus=2")
    assert r.returncode == 2 and "--weights" in r.stderr and "gpus_hosted" in r.stderr


@needs_chromium
def test_report_pdf_is_printed_by_chromium(blue_vela, tmp_path):
    out = tmp_path / "r.pdf"
    r = _cli(str(blue_vela), "--out", str(out))
    assert r.returncode == 0, r.stderr
    data = out.read_bytes()
    assert data[:5] == b"%PDF-"
    pages = len(re.findall(rb"/Type\s*/Page[^s]", data))
    assert 3 <= pages <= 30, pages


@needs_chromium
def test_tables_and_summary_fit_the_page_in_chromium(blue_vela, tmp_path):
    """Lay the report out at 1000 px and measure: no element may stick out of the page."""
    text = build_report(blue_vela)
    probe = ("<script>window.addEventListener('load',()=>{const w=document.documentElement.clientWidth;"
             "let worst=0;for(const e of document.querySelectorAll('table,img,section,p')){"
             "worst=Math.max(worst,e.getBoundingClientRect().right-w)}"
             "document.title=JSON.stringify({over:worst,sw:document.documentElement.scrollWidth,w:w,"
             "summary:!!document.querySelector('section#summary')})})</script>")
    page = tmp_path / "probe.html"
    page.write_text(text.replace("</body>", probe + "</body>"))
    r = chromium(["--window-size=1000,800", "--virtual-time-budget=3000", "--dump-dom", page.as_uri()])
    m = re.search(r"<title>(\{.*?\})</title>", r.stdout)
    assert m, r.stderr[-500:]
    got = json.loads(m.group(1).replace("&quot;", '"'))
    assert got["summary"] and got["over"] <= 1 and got["sw"] <= got["w"], got


def test_sweep_file_weights_are_checked_and_reach_the_report(tmp_path):
    import yaml

    from twin.sweep import SweepError, SweepSpec
    f = tmp_path / "s.yaml"
    base = {"scenario": str(ROOT / "scenarios" / "lenovo_small.yaml"), "study": "siting",
            "cases": {"dim": "site", "values": {"a": [], "b": ["simulation.seed=1"]}}}
    f.write_text(yaml.safe_dump(dict(base, weights={"co2_t": 4, "gpus_hosted": 1})))
    spec = SweepSpec.from_file(f)
    assert dict(spec.weights) == {"co2_t": 4.0, "gpus_hosted": 1.0}
    assert SweepSpec.from_json(json.loads(json.dumps(spec.to_json()))).weights == spec.weights
    f.write_text(yaml.safe_dump(dict(base, weights={"gpus": 2})))
    with pytest.raises(SweepError, match="weights: siting weight 'gpus'"):
        SweepSpec.from_file(f)

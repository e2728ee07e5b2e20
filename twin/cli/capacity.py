"""``twin capacity``: usable IT capacity of each dated stage of a power chain.

    twin capacity SCENARIO [--set dotted.path=value ...] [--json] [--no-swing] [--job NAME]

For every stage of ``site.power.chain.stages`` (dated equipment changes) it prints the
usable IT capacity, the binding constraint (equipment, rule, numbers) and the next one
behind it, the racks that fit at their worst case, the branch-circuit loading in normal
operation and on A/B failover, and what losing one feed path does. Then the sub-second
swing of the largest job: the peak meter ramp [kW/s] at 1-s resolution, with the GPU power
floor and the battery when the chain has them, and their energy cost.

``--json`` prints ``{"stages": [{"date", "it_capacity_kw", "binding", "next", ...}], "swing": {...}}``.
Bad input exits 2 with one line per problem, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from twin.errors import EXIT_BAD_INPUT


class _Bad(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _Bad(f"twin capacity: {message}")


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="twin capacity", description="usable IT capacity of each dated stage of the power chain")
    ap.add_argument("scenario", help="scenario YAML with site.power.chain")
    ap.add_argument("--set", action="append", default=[], metavar="dotted.path=value",
                    help="override a field, e.g. --set site.power.chain.ups.mode=eco")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--no-swing", action="store_true", help="skip the sub-second swing of the largest job")
    ap.add_argument("--job", help="job whose swing is modelled (default: the one with most nodes)")
    return ap


def job_swing_inputs(path: str, overrides: list[str], scenario, job_name: str | None = None) -> dict:
    """Step time, exposed time, checkpoint and restart durations of one job [s] and its nodes.

    Exposed time per step = exposed TP/CP/PP/DP communication + pipeline bubble +
    straggler wait of the step model (:func:`twin.compute.step.step_estimate`), where
    the GPUs wait at lower power. Checkpoint = its size over the storage write bandwidth;
    restart = relaunch + reload.
    """
    from twin import storage
    from twin.cli.estimate import estimate_from_scenario
    from twin.compute.estimate_file import estimate_from_file
    from twin.plant import model_spec
    from twin.workload.engine_jobs import representative_jobs

    jobs = representative_jobs(scenario)   # the fixed jobs, or a stream's training classes
    job = (next(j for j in jobs if j.name == job_name) if job_name
           else max(jobs, key=lambda j: j.nodes))
    est = estimate_from_file(estimate_from_scenario(path, overrides, job.name))
    b = est.breakdown
    exposed = sum(b.get(k, 0.0) for k in ("tp_comm_exposed", "cp_comm_exposed", "pp_comm_exposed",
                                          "dp_comm_exposed", "pipeline_bubble", "stragglers"))
    params = model_spec(job).parameters()      # every expert of a mixture of experts
    size = job.checkpoint_bytes or storage.checkpoint_bytes(params)
    st = scenario.workload.storage
    write, read = storage.storage_bandwidth_gb_s(st.kind, st.units, st.write_gb_s_per_unit, st.read_gb_s_per_unit)
    ckpt = float(storage.checkpoint_write_s(size, write))
    restart = job.restart_s + float(storage.checkpoint_read_s(size, read))
    return {"job": job.name, "nodes": job.nodes, "step_s": float(est.step_time_s),
            "exposed_s": float(min(exposed, 0.9 * est.step_time_s)), "checkpoint_s": ckpt, "restart_s": restart}


def _finite(x):
    """Plain JSON: numpy scalars as numbers, infinities and NaN as null (never trips: null)."""
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if isinstance(x, int) or (hasattr(x, "dtype") and x.dtype.kind in "iu"):
        return int(x)
    return v if math.isfinite(v) else None


def _fmt_constraint(c: dict | None) -> str:
    if c is None:
        return "none"
    return f"{c['equipment']}: {c['it_capacity_kw']:.0f} kW IT ({c['rule']}; {c['detail']})"


def _print_text(rep: dict) -> None:
    lo, hi = rep.get("rack_worst_case_range_kw", (rep["rack_worst_case_kw"],) * 2)
    # racks of several node models: the range, not the largest alone
    worst = f"{hi:.1f}" if f"{lo:.1f}" == f"{hi:.1f}" else f"{lo:.1f}-{hi:.1f}"
    print(f"power chain of {rep['scenario']}: {rep['rack_positions']} rack positions, "
          f"rack worst case {worst} kW, idle {rep['rack_idle_kw']:.1f} kW")
    for st in rep["stages"]:
        when = st["date"] or "as built"
        typed = f"; typed plan {st['plan_it_power_kw']:.0f} kW" if st.get("plan_it_power_kw") else ""
        print(f"\n{when}  {st['note']}")
        ratio = st["ratio_to_first"]
        # a first stage of 0 kW has no ratio to give
        rel = f"x{ratio:.2f} of the first stage{typed}" if ratio == ratio else typed.removeprefix("; ")
        print(f"  usable IT capacity  {st['it_capacity_kw']:8.0f} kW  ({rel}); "
              f"{st['racks_at_worst_case']} racks at worst case")
        print(f"  binding             {_fmt_constraint(st['binding'])}")
        print(f"  next                {_fmt_constraint(st['next'])}")
        print(f"  mechanical + house  {st['mechanical_kw']:8.0f} kW at that IT; UPS loss {st['ups_loss_kw']:.1f} kW "
              f"({st['ups_curve'] or 'no UPS'})")
        if "max_branch_load_fraction" in st:
            flag = "OVERLOAD" if st["failover_overload"] else "ok"
            print(f"  branch per cord     normal {st['max_branch_load_fraction']:.2f}, A/B failover "
                  f"{st['max_failover_branch_load_fraction']:.2f} of the continuous limit ({flag})")
        if "feed_loss_survivor_load_fraction" in st:
            verdict = "holds" if st["feed_loss_holds"] else "survivor overloaded: load is shed"
            print(f"  one feed lost       survivor at {st['feed_loss_survivor_load_fraction']:.2f} of its "
                  f"continuous limit ({verdict})")
    sw = rep.get("swing")
    if sw:
        print(f"\nswing of job {sw['job']} ({sw['nodes']} nodes, step {sw['step_s']:.2f} s with "
              f"{sw['exposed_s']:.2f} s exposed, checkpoint {sw['checkpoint_s']:.1f} s, "
              f"restart {sw['restart_s']:.0f} s) at 1-s resolution:")
        print(f"  train -> exposed step   {sw['train_minus_comm_kw']:.0f} kW; train -> checkpoint "
              f"{sw['train_minus_checkpoint_kw']:.0f} kW")
        print(f"  peak_meter_ramp_kw_per_s  {sw['peak_meter_ramp_kw_per_s']:.0f}")
        if "gpu_floor" in sw:
            g = sw["gpu_floor"]
            print(f"  with GPU floor {g['floor_fraction']:.0%} of TDP   {g['peak_meter_ramp_kw_per_s']:.0f} kW/s, "
                  f"+{g['extra_energy_kwh']:.1f} kWh over {sw['window_s']:.0f} s")
        if "battery" in sw:
            bt = sw["battery"]
            print(f"  with battery {bt['power_kw']:.0f} kW / {bt['energy_kwh']:.0f} kWh ({bt['policy']})   "
                  f"{bt['peak_meter_ramp_kw_per_s']:.0f} kW/s, losses {bt['loss_kwh']:.2f} kWh, "
                  f"SoC {bt['soc_min_seen']:.2f}-{bt['soc_max_seen']:.2f}")


def no_chain_message(path: str) -> str:
    """Exit-2 text for a scenario without ``site.power.chain``: a scenario may leave it out (the
    run then uses its power plan), so this is not a field error but what ``twin capacity`` needs."""
    return (f"error: {path}: this scenario has no site.power.chain (the equipment chain `twin capacity` "
            "derives the usable IT capacity from: utility, transformers, switchboards, generators, UPS, "
            "RPPs, branch circuits); see scenarios/blue_vela.yaml for one")


def run_capacity_cli(argv: list[str]) -> int:
    from twin.cli.main import _report_problems
    from twin.errors import ScenarioError
    from twin.power.chain import capacity_report, chain_problems, swing_report
    from twin.scenario.loader import load_scenario

    try:
        args = _parser().parse_args(argv)
    except _Bad as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        s = load_scenario(args.scenario, args.set)
    except ScenarioError as err:
        return _report_problems(err)
    if s.site.power.chain is None:
        print(no_chain_message(args.scenario), file=sys.stderr)
        return EXIT_BAD_INPUT
    problems = chain_problems(s)
    if problems:
        print(f"error: the scenario has {len(problems)} problem{'s' if len(problems) != 1 else ''}:",
              file=sys.stderr)
        for path, value, expected in problems:
            print(f"  {args.scenario}: {path}: got {value!r}; expected {expected}", file=sys.stderr)
        return EXIT_BAD_INPUT
    from twin.cli.jobnames import unknown_job_message
    from twin.workload.engine_jobs import representative_jobs
    bad_job = unknown_job_message(args.scenario, s, args.job) if args.job else None
    if bad_job is not None:
        print(f"error: {bad_job}", file=sys.stderr)
        return EXIT_BAD_INPUT
    rep = capacity_report(s)
    if not args.no_swing and representative_jobs(s):
        inp = job_swing_inputs(args.scenario, args.set, s, args.job)
        sw = swing_report(s, nodes=inp["nodes"], step_s=inp["step_s"], exposed_s=inp["exposed_s"],
                          checkpoint_s=inp["checkpoint_s"], restart_s=inp["restart_s"])
        sw.pop("meter_kw")
        rep["swing"] = {"job": inp["job"], **sw}
    if args.json:
        print(json.dumps(_finite(rep), indent=2, allow_nan=False))
    else:
        _print_text(rep)
    return 0

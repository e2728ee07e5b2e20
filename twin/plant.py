"""The static plant a scenario describes, as arrays: racks, nodes, RPPs, halls, fabric;
and the one adapter from a scenario job to the step and memory models (the typed records
of ``twin.compute.specs``: model shape, parallelism, GPU spec, fabric spec).

Built once per run (or per layout change); the engine's processes read it. Geometry of
the rows is expanded here so that every sub-model receives plain arrays.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field, replace
from typing import Any

import networkx as nx
import numpy as np

from twin.catalog import NodeModel, SwitchModel, load_catalog
from twin.compute.estimate_file import ADAM_MOMENT_BYTES, MOE_DISPATCH_BYTES
from twin.compute.pipeline_layout import parse_pipeline_layout
from twin.compute.specs import (
    FabricSpec,
    GpuSpec,
    ModelSpec,
    ParallelSpec,
    memory_per_gpu,
    step_time,
)
from twin.compute.step import dualpipe_problems, expert_dp_unit
from twin.scenario.schema import Hall, Hardware, Scenario

_DIRECTIONS = {"north": (0.0, 1.0), "south": (0.0, -1.0), "east": (1.0, 0.0), "west": (-1.0, 0.0)}


def seconds_since(start: dt.date, when: dt.date | dt.datetime) -> float:
    """Simulation time [s] of a date or datetime, counted from ``start`` 00:00."""
    origin = dt.datetime.combine(start, dt.time())
    if isinstance(when, dt.datetime):
        when = when.replace(tzinfo=None)
    else:
        when = dt.datetime.combine(when, dt.time())
    return (when - origin).total_seconds()


def rack_positions(hall: Hall) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Centres (R,2) [m], intake directions (R,2), enclosure flags (R,) and names of a hall's
    racks: on each row's line, or where a ``rack_overrides`` entry places the rack."""
    xy, intake, enclosed, names = [], [], [], []
    for row in hall.rows:
        step = np.array([row.pitch_m, 0.0] if row.along == "x" else [0.0, row.pitch_m])
        placed = {o.rack: (o.x_m, o.y_m) for o in row.rack_overrides if o.x_m is not None and o.y_m is not None}
        for i in range(row.racks):
            xy.append(np.array(placed[i + 1], float) if i + 1 in placed
                      else np.array([row.x_m, row.y_m]) + i * step)
            intake.append(_DIRECTIONS[row.intake])
            enclosed.append(row.enclosure)
            names.append(f"{row.name}-{i + 1:02d}")
    return np.array(xy, float), np.array(intake, float), np.array(enclosed, bool), names


def rack_hardware(hall: Hall, hardware: Hardware) -> tuple[list[str], list[int]]:
    """Catalog node model and node count of each rack of a hall, in rack order: the rack's
    override, else its row's, else ``hardware``'s."""
    models: list[str] = []
    counts: list[int] = []
    for row in hall.rows:
        over = {o.rack: o for o in row.rack_overrides}
        for i in range(row.racks):
            o = over.get(i + 1)
            models.append((o.node_model if o else None) or row.node_model or hardware.node_model)
            counts.append((o.nodes_per_rack if o else None) or row.nodes_per_rack or hardware.nodes_per_rack)
    return models, counts


def scenario_racks(s: Scenario) -> tuple[list[str], np.ndarray]:
    """Catalog node model and node count of every rack position of a scenario, in rack
    (and delivery) order, without building the plant."""
    models: list[str] = []
    counts: list[int] = []
    for hall in s.site.halls:
        m, c = rack_hardware(hall, s.hardware)
        models += m
        counts += c
    return models, np.array(counts, int)


def rack_gpus(s: Scenario) -> np.ndarray:
    """GPUs of every rack position [int (R,)], in delivery order (the ramp delivers the
    first racks first): ``rack_gpus(s)[:delivered].sum()`` is the installed GPU count."""
    catalog = load_catalog().nodes
    models, counts = scenario_racks(s)
    return np.array([catalog[m].gpu_count if m in catalog else 0 for m in models], int) * counts


def rack_worst_cases_w(s: Scenario) -> np.ndarray:
    """Worst-case admission draw of every rack position [W (R,)] (:func:`rack_worst_case_w`
    of its node model and node count)."""
    catalog = load_catalog().nodes
    models, counts = scenario_racks(s)
    per_node = {m: rack_worst_case_w(s, catalog[m], nodes_per_rack=1, network_w=0.0) for m in set(models)}
    return np.array([per_node[m] for m in models]) * counts + s.hardware.network_power_per_rack_w


def typical_rack(s: Scenario) -> tuple[float, float]:
    """(worst-case draw [W], GPUs) of a typical delivered rack: the one rack of a
    homogeneous scenario, else the mean over the delivered racks (reports that count
    racks from GPUs use it)."""
    node = load_catalog().nodes[s.hardware.node_model]
    models, counts = scenario_racks(s)
    if set(models) <= {s.hardware.node_model} and bool(np.all(counts == s.hardware.nodes_per_rack)):
        return rack_worst_case_w(s, node), float(node.gpu_count * s.hardware.nodes_per_rack)
    k = max(1, sum(w.racks for w in s.ramp.waves))
    return float(rack_worst_cases_w(s)[:k].mean()), float(rack_gpus(s)[:k].mean())


def uniform(values: np.ndarray) -> float | np.ndarray:
    """``values`` as one float when all are equal (a homogeneous plant keeps scalar
    physics, bit for bit), else the array itself."""
    v = np.asarray(values, float)
    return float(v[0]) if v.size and np.all(v == v[0]) else v


@dataclass
class Plant:
    """Arrays describing what is built, indexed by rack ``r``, node ``n``, RPP ``p``, hall ``h``.

    Racks may hold different node models and node counts: ``models`` are the distinct
    catalog models (``models[0]`` = ``hardware.node_model`` when any rack holds it),
    ``rack_model`` (R,) and ``node_model_index`` (N,) index into them, ``rack_nodes`` (R,)
    counts nodes. ``node`` is ``models[0]``: the scenario's default model, or the first
    rack's when no rack holds the default.
    """

    scenario: Scenario
    node: NodeModel
    switch: SwitchModel
    rack_names: list[str]
    rack_hall: np.ndarray          # (R,) int
    rack_xy_m: np.ndarray          # (R,2)
    rack_intake: np.ndarray        # (R,2) unit vectors
    rack_enclosed: np.ndarray      # (R,) bool
    rack_rpp: np.ndarray           # (R,) int
    rack_delivery_s: np.ndarray    # (R,) delivery time, inf if never delivered
    node_rack: np.ndarray          # (N,) int
    node_su: np.ndarray            # (N,) int
    rpp_limit_w: np.ndarray        # (P,) continuous breaker limit [W]
    rpp_rating_w: np.ndarray       # (P,) breaker rating (trip reference) [W]
    plan_s: np.ndarray             # (S,) stage times [s]
    plan_it_w: np.ndarray          # (S,) available IT power [W]
    model_names: tuple[str, ...] = ()      # (M,) distinct catalog keys
    models: tuple[NodeModel, ...] = ()     # (M,) their catalog entries
    rack_model: np.ndarray = field(default_factory=lambda: np.zeros(0, int))   # (R,) index into models
    rack_nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, int))   # (R,) nodes per rack
    fabric: nx.Graph | None = field(default=None, repr=False)
    _param_cache: dict = field(default_factory=dict, repr=False)

    @property
    def n_racks(self) -> int:
        return len(self.rack_names)

    @property
    def n_nodes(self) -> int:
        return len(self.node_rack)

    @property
    def gpus_per_node(self) -> int:
        """GPUs per node of the default model (``node_gpus`` holds each node's count)."""
        return self.node.gpu_count

    @property
    def homogeneous(self) -> bool:
        """One node model and one node count in every rack (evaluated once, like the other
        derived parameters: every job start asks, through the power chain's node keywords,
        and at a million GPUs the test reads 32,768 racks)."""
        h = self._param_cache.get("homogeneous")
        if h is None:
            h = self._param_cache["homogeneous"] = len(self.models) <= 1 and bool(
                np.all(self.rack_nodes == self.rack_nodes[0]))
        return h

    @property
    def node_model_index(self) -> np.ndarray:
        """Index into ``models`` of every node [int (N,)]."""
        if "node_model_index" not in self._param_cache:
            self._param_cache["node_model_index"] = self.rack_model[self.node_rack]
        return self._param_cache["node_model_index"]

    @property
    def rack_node_model(self) -> np.ndarray:
        """Catalog node model of every rack [str (R,)] (for labels and the 3-D view)."""
        return np.asarray(self.model_names, dtype=object)[self.rack_model].astype(str)

    @property
    def rack_first_node(self) -> np.ndarray:
        """Index of each rack's first node [int (R,)] (racks hold contiguous nodes)."""
        if "rack_first_node" not in self._param_cache:
            self._param_cache["rack_first_node"] = np.concatenate([[0], np.cumsum(self.rack_nodes)[:-1]]).astype(int)
        return self._param_cache["rack_first_node"]

    @property
    def node_gpus(self) -> np.ndarray:
        """GPUs of every node [int (N,)]."""
        if "node_gpus" not in self._param_cache:
            self._param_cache["node_gpus"] = np.array([m.gpu_count for m in self.models], int)[self.node_model_index]
        return self._param_cache["node_gpus"]

    @property
    def rack_gpus(self) -> np.ndarray:
        """GPUs of every rack [int (R,)]."""
        return np.array([m.gpu_count for m in self.models], int)[self.rack_model] * self.rack_nodes

    def model_param(self, name: str) -> np.ndarray:
        """A catalog field of every model [(M,) float]."""
        return np.array([float(getattr(m, name)) for m in self.models])

    def node_param(self, name: str) -> float | np.ndarray:
        """A catalog field (``gpu_tdp_w``, ``fan_max_w``, ...) of every node: one float
        when every node's model has the same value, else an (N,) array."""
        key = ("node", name)
        if key not in self._param_cache:
            self._param_cache[key] = uniform(self.model_param(name)[self.node_model_index])
        return self._param_cache[key]

    def rack_param(self, name: str) -> float | np.ndarray:
        """A catalog field of every rack's node model: one float or an (R,) array."""
        return uniform(self.model_param(name)[self.rack_model])

    def node_power_kwargs(self) -> dict:
        """``power.node_power_w``'s hardware keywords for every node (floats when uniform,
        else (N,) arrays), PSU capacity included."""
        kw = {k: self.node_param(k) for k in ("gpu_count", "gpu_tdp_w", "gpu_idle_w", "host_idle_w",
                                               "host_active_w", "fan_max_w", "node_max_w")}
        if self.homogeneous:
            return node_power_kwargs(self.node)
        kw["psu_capacity_w"] = uniform((self.model_param("psu_count") * self.model_param("psu_rating_w"))
                                       [self.node_model_index])
        return kw

    def gpu_cap_w(self) -> float | np.ndarray:
        """Per-GPU power cap of every node [W]: ``hardware.gpu_power_cap_w`` (at most the
        node's TDP), else the TDP; a float when uniform, else (N,)."""
        cap = self.scenario.hardware.gpu_power_cap_w
        if self.homogeneous:
            return float(cap or self.node.gpu_tdp_w)
        tdp = self.model_param("gpu_tdp_w")
        return uniform((np.minimum(cap, tdp) if cap else tdp)[self.node_model_index])

    def rack_worst_case_w(self) -> float | np.ndarray:
        """Worst-case admission draw of every rack [W] (:func:`rack_worst_case_w` of its
        node model and node count); one float when all racks are alike, else (R,)."""
        s = self.scenario
        if self.homogeneous:
            return rack_worst_case_w(s, self.node, nodes_per_rack=int(self.rack_nodes[0]))
        per_node = np.array([rack_worst_case_w(s, m, nodes_per_rack=1, network_w=0.0) for m in self.models])
        return uniform(per_node[self.rack_model] * self.rack_nodes + s.hardware.network_power_per_rack_w)

    def nodes_of_model(self, name: str) -> np.ndarray:
        """Indices of the nodes of one catalog model [int]."""
        if name not in self.model_names:
            return np.zeros(0, int)
        return np.flatnonzero(self.node_model_index == self.model_names.index(name))


def build_plant(s: Scenario) -> Plant:
    """Expand a scenario into the plant arrays (no simulation state)."""
    from twin.power import breaker_continuous_limit_w

    catalog = load_catalog()
    switch = catalog.switches[s.fabric.switch_model]
    rack_model_names, rack_nodes = scenario_racks(s)
    used = sorted(set(rack_model_names), key=lambda k: (k != s.hardware.node_model, rack_model_names.index(k)))
    rack_model = np.array([used.index(k) for k in rack_model_names], int)
    xy: list[np.ndarray] = []
    intake: list[np.ndarray] = []
    enclosed: list[np.ndarray] = []
    names: list[str] = []
    hall_idx: list[np.ndarray] = []
    for h, hall in enumerate(s.site.halls):
        a, b, c, d = rack_positions(hall)
        xy.append(a)
        intake.append(b)
        enclosed.append(c)
        names.extend(f"{hall.name}/{n}" if len(s.site.halls) > 1 else n for n in d)
        hall_idx.append(np.full(len(a), h))
    rack_xy = np.concatenate(xy)
    n_racks = len(rack_xy)
    p = s.site.power
    rack_rpp = np.arange(n_racks) // p.rpp.racks_per_rpp
    limit = breaker_continuous_limit_w(p.rpp.breaker_a, p.rpp.voltage_v, p.rpp.phases,
                                       p.rpp.rated_100pct, p.rpp.power_factor)
    rating = breaker_continuous_limit_w(p.rpp.breaker_a, p.rpp.voltage_v, p.rpp.phases,
                                        True, p.rpp.power_factor)
    rpp_limit = np.full(p.rpp.count, float(limit))
    rpp_rating = np.full(p.rpp.count, float(rating))

    delivery = np.full(n_racks, np.inf)
    k = 0
    for wave in s.ramp.waves:
        delivery[k:k + wave.racks] = seconds_since(s.simulation.start, wave.date)
        k += wave.racks
    node_rack = np.repeat(np.arange(n_racks), rack_nodes)
    node_su = np.arange(len(node_rack)) // s.fabric.su_nodes
    plan_s = np.array([seconds_since(s.simulation.start, st.date) for st in p.plan])
    plan_w = np.array([st.it_power_kw * 1e3 for st in p.plan])
    if p.chain is not None and p.chain.stages_set_plan:
        # the staged plan from the equipment: each dated stage's derived IT capacity
        from twin.power.chain import capacity_report
        stages = [st for st in capacity_report(s)["stages"] if st["date"] is not None]
        plan_s = np.array([seconds_since(s.simulation.start, dt.date.fromisoformat(st["date"])) for st in stages])
        plan_w = np.array([st["it_capacity_kw"] * 1e3 for st in stages])
    return Plant(
        scenario=s, node=catalog.nodes[used[0]], switch=switch, rack_names=names,
        rack_hall=np.concatenate(hall_idx), rack_xy_m=rack_xy, rack_intake=np.concatenate(intake),
        rack_enclosed=np.concatenate(enclosed), rack_rpp=rack_rpp, rack_delivery_s=delivery,
        node_rack=node_rack, node_su=node_su, rpp_limit_w=rpp_limit, rpp_rating_w=rpp_rating,
        plan_s=plan_s, plan_it_w=plan_w, model_names=tuple(used),
        models=tuple(catalog.nodes[k] for k in used), rack_model=rack_model,
        rack_nodes=rack_nodes,
    )


def available_it_w(plant: Plant, t_s: float) -> float:
    """IT power the staged plan allows at time ``t_s`` [W] (0 before the first stage)."""
    k = np.searchsorted(plant.plan_s, t_s, side="right") - 1
    return float(plant.plan_it_w[k]) if k >= 0 else 0.0


_THROW_DIR = {"+x": (1.0, 0.0), "-x": (-1.0, 0.0), "+y": (0.0, 1.0), "-y": (0.0, -1.0)}


def hall_geometries(scenario: Scenario, plant: Plant | None = None) -> list:
    """One ``twin.thermal.HallGeometry`` per hall, with the global indices of its racks.

    The single translation of a scenario's halls into the thermal model's geometry, used by
    the engine and the 3-D viewer alike. Returns a list of (geometry, rack_indices) pairs.
    """
    from twin import thermal

    p = plant or build_plant(scenario)
    out = []
    for h, hall in enumerate(scenario.site.halls):
        idx = np.flatnonzero(p.rack_hall == h)
        obstacles = (np.array([[o.x0_m, o.y0_m, o.x1_m, o.y1_m] for o in hall.obstacles], float)
                     if hall.obstacles else None)
        outlets = [c.outlet for c in hall.cooling_units]
        jet_kw: dict[str, Any] = {} if all(o is None for o in outlets) else dict(  # wall-jet units (twin.thermal.jets)
            cooling_outlet_z_m=np.array([[o.z_from_m, o.z_to_m] if o else [np.nan, np.nan] for o in outlets]),
            cooling_outlet_width_m=np.array([o.width_m if o else 1.0 for o in outlets]),
            cooling_throw_dir=np.array([_THROW_DIR[o.throw] if o else (1.0, 0.0) for o in outlets]))
        geom = thermal.HallGeometry(
            width_m=hall.width_m, depth_m=hall.depth_m, height_m=hall.height_m,
            rack_center_xy_m=p.rack_xy_m[idx], rack_intake_dir=p.rack_intake[idx],
            rack_width_m=hall.rack_width_m, rack_depth_m=hall.rack_depth_m,
            cooling_xy_m=np.array([[c.x_m, c.y_m] for c in hall.cooling_units], float),
            cooling_airflow_m3_s=np.array([c.airflow_m3_s for c in hall.cooling_units], float),
            cooling_supply_temp_c=np.array([c.supply_temp_c for c in hall.cooling_units], float),
            cooling_capacity_w=np.array([c.capacity_kw * 1e3 for c in hall.cooling_units], float),
            containment=hall.containment, rack_enclosed=p.rack_enclosed[idx],
            obstacles_xyxy_m=obstacles, cell_m=hall.cell_m,
            containment_leakage_fraction=hall.containment_leakage_fraction,
            rack_bypass_fraction=hall.rack_bypass_fraction, supply=hall.supply,
            floor_leakage_fraction=hall.floor_leakage_fraction,
            eddy_diffusivity_m2_s=hall.eddy_diffusivity_m2_s, n_layers=hall.layers,
            rack_height_m=hall.rack_height_m,
            tile_xy_m=np.array([[t.x_m, t.y_m] for t in hall.tiles], float) if hall.tiles else None, **jet_kw)
        out.append((geom, idx))
    return out


def node_power_kwargs(node: NodeModel) -> dict:
    """The catalog node's hardware keywords of ``power.node_power_w`` (PSU capacity included)."""
    return dict(gpu_count=node.gpu_count, gpu_tdp_w=node.gpu_tdp_w, gpu_idle_w=node.gpu_idle_w,
                host_idle_w=node.host_idle_w, host_active_w=node.host_active_w,
                fan_max_w=node.fan_max_w, node_max_w=node.node_max_w,
                psu_capacity_w=node.psu_count * node.psu_rating_w)


def rack_worst_case_w(scenario: Scenario, node: NodeModel, nodes_per_rack: int | None = None,
                      network_w: float | None = None) -> float:
    """Worst-case draw of one rack [W] that admission reserves: its nodes at full load and
    the hottest allowed inlet (``power.node_worst_case_w``), at the GPU power cap when
    ``power_cap_policy`` is on (else at TDP; a cap above the node's TDP is its TDP), plus
    the rack's network share. ``nodes_per_rack`` and ``network_w`` default to
    ``hardware``'s (:meth:`Plant.rack_worst_case_w` gives every rack's)."""
    from twin import power

    cap = min(scenario.hardware.gpu_power_cap_w or node.gpu_tdp_w, node.gpu_tdp_w)
    admit_cap = cap if scenario.site.power.power_cap_policy else node.gpu_tdp_w
    npr = scenario.hardware.nodes_per_rack if nodes_per_rack is None else nodes_per_rack
    net = scenario.hardware.network_power_per_rack_w if network_w is None else network_w
    return float(power.node_worst_case_w(admit_cap, **node_power_kwargs(node))) * npr + net


def gpu_spec(node: NodeModel) -> GpuSpec:
    """The step and memory models' record of a catalog node's GPUs (``twin.compute.specs``)."""
    return GpuSpec(peak_bf16_tflops=node.gpu_peak_bf16_tflops, peak_fp8_tflops=node.gpu_peak_fp8_tflops,
                   hbm_bw_tb_s=node.gpu_hbm_bw_tb_s, nvlink_gb_s=node.nvlink_gb_s, nvls=node.nvls,
                   nvswitch=node.nvswitch, gpus_per_node=node.gpu_count, memory_gb=node.gpu_memory_gb,
                   compute_capability=node.gpu_compute_capability)


def model_spec(job) -> ModelSpec:
    """A scenario job's network shape (dense, or a mixture of experts; DeepSeek-V3's
    ``node_limit`` and ``mtp_depth`` included: the scenario's shape names them as the record
    does)."""
    return ModelSpec.of(job.model)


def parallel_spec(job) -> ParallelSpec:
    """How a scenario job is split and run (parallelism, batch, precision, recompute, sharding).

    moe_expert_tp is 1 or tp (the schema's rule); a job stream's class refits a template's tp
    down to its GPUs (:func:`twin.workload.engine_jobs.fit_parallelism`) without touching it, so
    an expert TP above the job's tp follows it down to tp.  The pipeline schedule is the
    job's (:func:`runnable_schedule` says which one runs on a given number of GPUs).
    DeepSeek-V3's options map as the estimate file maps them
    (:func:`twin.compute.estimate_file.job_specs`): ``moe_dispatch_dtype`` to
    ``moe_dispatch_bytes`` (:data:`twin.compute.estimate_file.MOE_DISPATCH_BYTES`),
    ``adam_moment_dtype`` to ``adam_moment_bytes``, the two memory flags as they are.
    The pipeline layout is the job's where it fits its pp and vpp (:func:`runnable_layout`)."""
    etp = job.moe_expert_tp
    return ParallelSpec(tp=job.tp, pp=job.pp, cp=job.cp, vpp=job.vpp, ep=job.ep,
                        moe_expert_tp=None if etp is None else min(etp, job.tp), seq_len=job.seq_len,
                        global_batch=job.global_batch, micro_batch=job.micro_batch,
                        precision=job.precision,
                        activation_recompute="full" if job.activation_recompute else "none",
                        zero_stage=job.zero_stage, fsdp_shard=job.fsdp_shard,
                        pipeline_schedule=job.pipeline_schedule, pipeline_layout=runnable_layout(job),
                        recompute_norms_mla_up=job.recompute_norms_mla_up,
                        fp8_cached_linear_inputs=job.fp8_cached_linear_inputs,
                        adam_moment_bytes=ADAM_MOMENT_BYTES[job.adam_moment_dtype],
                        moe_dispatch_bytes=MOE_DISPATCH_BYTES[job.moe_dispatch_dtype])


@functools.lru_cache(maxsize=256)
def _layout_fits(text: str, pp: int, vpp: int, layers: int, mtp_depth: int) -> bool:
    try:
        parse_pipeline_layout(text, pp=pp, vpp=vpp, layers=layers, mtp_depth=mtp_depth)
    except ValueError:
        return False
    return True


def runnable_layout(job) -> str | None:
    """The job's ``pipeline_layout`` if it describes the job as it is (``pp x vpp`` virtual
    stages, its layers and MTP modules: :func:`twin.compute.pipeline_layout.parse_pipeline_layout`),
    else None, the even split.  The loader refuses a fixed job whose layout does not parse, so
    only a stream class refitted from a job with a layout
    (:func:`twin.workload.engine_jobs.fit_parallelism` halves pp until its GPUs divide) loses
    it: the layout names pp x vpp stages and has no meaning at another pp, and the refitted
    job runs the even split, as a refitted DualPipe job runs 1F1B (the loader notes both).
    An elastic job shrunk to fewer nodes keeps its layout: shrinking takes data-parallel ranks
    only (:func:`elastic_gpus_run` keeps tp x pp x cp), and :func:`runnable_schedule` changes
    the schedule, never pp or vpp (DualPipe's fallback, 1F1B, has the same vpp 1)."""
    text = job.pipeline_layout
    if text is None:
        return None
    m = job.model
    return text if _layout_fits(text, job.pp, job.vpp, m.layers, m.mtp_depth) else None


def runnable_schedule(par: ParallelSpec, gpus: int) -> ParallelSpec:
    """``par`` with the pipeline schedule it runs on ``gpus`` GPUs: DualPipe needs an even
    pp and an even number of micro-batches >= 2 pp (deepseek-ai/DualPipe, DualPipe.step's
    assertions), which the loader checks at the job's submitted size; a stream class refitted
    to its GPUs (:func:`twin.workload.engine_jobs.fit_parallelism` halves pp and rounds the
    batch) or an elastic job shrunk to fewer data-parallel ranks may lose them, and then
    runs the schedule its vpp implies (1F1B: DualPipe needs vpp 1) rather than stopping the
    run.  Counted on the GPUs the job uses of ``gpus`` (:func:`usable_gpus`), as its step is."""
    if par.pipeline_schedule != "dualpipe":
        return par
    dp = par.data_parallel(usable_gpus(par, gpus))
    unit = dp * par.micro_batch
    m = par.global_batch // unit if unit and par.global_batch % unit == 0 else 0
    # zero_stage 3 is refused at load and no refit changes it: not checked here
    if not dualpipe_problems(pp=par.pp, microbatches=m, zero_stage=None):
        return par
    return replace(par, pipeline_schedule=None)


def usable_gpus(par: ParallelSpec, gpus: int) -> int:
    """GPUs a job can use out of ``gpus``: whole model replicas (tp x pp x cp) in a number
    the expert-parallel layout holds (:func:`expert_dp_unit`)."""
    unit = par.model_parallel * expert_dp_unit(tp=par.tp, cp=par.cp, ep=par.ep,
                                               moe_expert_tp=par.moe_expert_tp)
    return gpus - gpus % unit


def elastic_gpus_run(job, gpus: int) -> bool:
    """True if a job shrunk to ``gpus`` GPUs runs on all of them: whole replica groups of
    its tp x pp x cp in a number its expert-parallel layout holds (:func:`usable_gpus` is
    ``gpus``: no node held idle), whose data-parallel ranks x ``micro_batch`` divide its
    global batch.  The one rule for the sizes the scheduler shrinks an elastic job to
    (:meth:`twin.sim.scheduler.Scheduler.elastic_size`) and the loader's note on them; for a
    dense job it is the former rule (tp x pp x cp dividing the GPUs, and the batch)."""
    mp = job.tp * job.pp * job.cp
    if gpus <= 0 or usable_gpus(parallel_spec(job), gpus) != gpus:
        return False
    return job.global_batch % ((gpus // mp) * job.micro_batch) == 0


def node_nics(node: NodeModel, fabric) -> int:
    """Compute NICs per node the collective model takes (NCCL's classic Tree gets one channel
    each): the catalog node's ``compute_nics``, else the fabric's ``rails`` (the fabric builds
    one NIC per rail; ``ports_per_nic`` counts cables, not NICs)."""
    return node.compute_nics or fabric.rails


def expert_group_nodes(par: ParallelSpec, gpus_per_node: int) -> int:
    """Nodes [-] one expert-parallel group spans: ``ceil(ep / r)``, ``r`` its ranks on a node
    (:func:`twin.compute.step.expert_ranks_per_node`), as :func:`twin.compute.step_estimate`
    counts them for node-limited routing (``node_limit`` at most this)."""
    from twin.compute.step import expert_ranks_per_node

    per_node = expert_ranks_per_node(ep=par.ep, tp=par.tp, cp=par.cp, moe_expert_tp=par.moe_expert_tp,
                                     gpus_per_node=gpus_per_node)
    return -(-par.ep // per_node)


def step_estimate_for(scenario: Scenario, job, node: NodeModel, n_nodes: int, *, clock_fraction: float,
                      inter_node_gbps: float, hops: float):
    """``compute.step_time`` of a scenario job on ``n_nodes`` nodes of the catalog node,
    at a GPU clock fraction and the placement's fabric figures (per-node bottleneck
    bandwidth [Gb/s], switch hops). The one translation of a job into the step model.
    NICs per node: :func:`node_nics`; pipeline schedule: :func:`runnable_schedule`.

    A stream class refitted from a template with ``node_limit``
    (:func:`twin.workload.engine_jobs.fit_parallelism` halves tp) may pack its expert group
    on fewer nodes than the limit, which the loader checked at the template's layout; the
    limit then is the group's nodes (every node may be reached, the dispatch still crosses IB
    once a node), not a stopped run."""
    gpu, par = gpu_spec(node), parallel_spec(job)
    nics = node_nics(node, scenario.fabric)
    gpus = usable_gpus(par, n_nodes * gpu.gpus_per_node)
    model = model_spec(job)
    if model.node_limit and model.experts:
        nodes = expert_group_nodes(par, gpu.gpus_per_node)
        if model.node_limit > nodes:
            model = replace(model, node_limit=nodes)
    return step_time(model, runnable_schedule(par, gpus), gpu,
                     FabricSpec(inter_node_gbps=inter_node_gbps, transport=scenario.fabric.transport,
                                hops=hops, nics_per_node=nics),
                     gpus=gpus, clock_fraction=clock_fraction, deployment=scenario.hardware.deployment)


def _job_memory_or_error(job, gpus: int, node: NodeModel):
    """(per-GPU memory breakdown, GPU capacity [GiB]) of a scenario job on ``gpus`` GPUs of the
    catalog node, the message of the ``ValueError`` :func:`twin.compute.memory.memory_per_gpu_bytes`
    raises when its own rules refuse the job, or ``None`` when the parallel layout is invalid
    (other checks report it).  Counted on the GPUs the job runs on (:func:`usable_gpus`) with
    the schedule it runs there (:func:`runnable_schedule`: a stream class refitted from a
    DualPipe job may run 1F1B), as its step is."""
    par = parallel_spec(job)
    if gpus < par.model_parallel or gpus % par.model_parallel:
        return None
    gpus = usable_gpus(par, gpus) or gpus
    gpu = gpu_spec(node)
    try:
        mem = memory_per_gpu(model_spec(job), runnable_schedule(par, gpus), gpu, gpus=gpus)
    except ValueError as exc:
        return str(exc)
    return mem, gpu.memory_gb


def job_memory(job, gpus: int, node: NodeModel):
    """(per-GPU memory breakdown, GPU capacity [GiB]) of a scenario job on ``gpus`` GPUs of
    the catalog node; ``None`` when the parallel layout is invalid or the memory model refuses
    its options (:func:`job_memory_error` says why)."""
    est = _job_memory_or_error(job, gpus, node)
    return est if isinstance(est, tuple) else None


def job_memory_error(job, gpus: int, node: NodeModel) -> str | None:
    """The memory model's refusal of a scenario job on ``gpus`` GPUs of the catalog node: the
    message of the ``ValueError`` :func:`twin.compute.memory.memory_per_gpu_bytes` raises
    (its own rules, e.g. ``fp8_cached_linear_inputs`` needs precision fp8), ``None`` when it
    accepts the job or the parallel layout is invalid (other checks report that).  The
    loader turns the message into a problem at the field that broke the rule."""
    est = _job_memory_or_error(job, gpus, node)
    return est if isinstance(est, str) else None


def job_memory_gib(job, gpus: int, node: NodeModel) -> float | None:
    """Per-GPU memory estimate [GiB] of a scenario job on ``gpus`` GPUs of the catalog node
    (its most loaded pipeline stage); ``None`` when the parallel layout is invalid."""
    from twin.compute.memory import GIB

    est = job_memory(job, gpus, node)
    return None if est is None else est[0].total / GIB


def job_memory_problem(job, gpus: int, node: NodeModel) -> str | None:
    """Memory check of a scenario job on ``gpus`` GPUs of the catalog node: ``None`` when it
    fits (or when the parallel layout is invalid, which other checks report), else the reason
    naming the GPU's capacity and the breakdown (:func:`twin.compute.memory.memory_fit_problem`)."""
    from twin.compute.memory import memory_fit_problem

    est = job_memory(job, gpus, node)
    return None if est is None else memory_fit_problem(*est)


def job_memory_note(job, gpus: int, node: NodeModel) -> str | None:
    """The note when a scenario job on ``gpus`` GPUs of the catalog node is estimated above
    the GPU's capacity yet accepted, within the memory model's margin
    (:func:`twin.compute.memory.memory_margin_note`); ``None`` when it fits outright, when
    :func:`job_memory_problem` refuses it, or when the layout is invalid."""
    from twin.compute.memory import memory_margin_note

    est = job_memory(job, gpus, node)
    return None if est is None else memory_margin_note(*est)

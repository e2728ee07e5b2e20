"""Scenario schema: frozen pydantic models, ``extra="forbid"``, SI units in field names.

One representation of a scenario: the engine reads these models directly. Cross-field
checks that need the catalog or geometry live in :func:`twin.scenario.loader.semantic_problems`
so that each problem can carry the dotted path of the offending field.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    model_validator,
)

from twin.scenario.cooling import CoolingSystem
from twin.scenario.power_chain import PowerChain
from twin.scenario.workload import SchedulerPolicy
from twin.scenario.workload import Stream as WorkloadStream
from twin.scenario.workload import Trace as WorkloadTrace

PositiveFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
# strict: `true` is not the integer 1, and 2.5 is not rounded
PositiveInt = Annotated[int, Field(gt=0, strict=True)]
Fraction = Annotated[float, Field(ge=0, le=1)]
Direction = Literal["north", "south", "east", "west"]

#: a name that may become part of a file name or an event target: letters, digits, _ . -
#: (no separators, never hidden, never ``..``); see :func:`twin.store_io.is_safe_name`
SAFE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
SafeName = Annotated[str, Field(pattern=SAFE_NAME_PATTERN,
                                description="letters, digits, _ . - (starting with a letter or digit)")]
#: dates a run may touch: results store times as datetime64, which holds 1678-2262
EARLIEST_DATE = dt.date(1900, 1, 1)
LATEST_DATE = dt.date(2200, 1, 1)


def _date_in_range(value: dt.date) -> dt.date:
    day = value.date() if isinstance(value, dt.datetime) else value
    if not EARLIEST_DATE <= day <= LATEST_DATE:
        raise ValueError(f"a date between {EARLIEST_DATE.isoformat()} and {LATEST_DATE.isoformat()}")
    return value


def _whole_number(value: float) -> float:
    if not float(value).is_integer():
        raise ValueError("a whole number of parts")
    return value


Date = Annotated[dt.date, AfterValidator(_date_in_range)]
DateTime = Annotated[dt.datetime, AfterValidator(_date_in_range)]


class Model(BaseModel):
    # allow_inf_nan=False: NaN or infinity in any float field is an input error
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, allow_inf_nan=False)


# --------------------------------------------------------------------------- simulation
class Simulation(Model):
    start: Date = Field(description="first simulated day (00:00 UTC)")
    duration_days: PositiveFloat = Field(description="simulated horizon [days]")
    sample_interval_s: Annotated[float, Field(ge=1)] = Field(
        3600.0, description="sampling step of the power/thermal recorder [s]")
    seed: Annotated[int, Field(ge=0, le=2**63 - 1, strict=True)] = Field(
        0, description="root seed of the one numpy Generator (0 .. 2**63-1, stored as int64)")


# --------------------------------------------------------------------------- site
class CoolingOutlet(Model):
    """A unit's front outlet blowing a horizontal jet into the room (wall or in-row coolers;
    twin.thermal.jets), from the unit's datasheet or drawing."""

    z_from_m: Annotated[float, Field(ge=0)] = Field(description="bottom of the outlet above the floor [m]")
    z_to_m: PositiveFloat = Field(description="top of the outlet above the floor [m]")
    width_m: PositiveFloat = Field(description="outlet width [m]")
    throw: Literal["+x", "-x", "+y", "-y"] = Field(description="direction the outlet blows")

    @model_validator(mode="after")
    def _heights(self):
        if self.z_to_m <= self.z_from_m:
            raise ValueError(f"outlet z_to_m ({self.z_to_m}) must be above z_from_m ({self.z_from_m})")
        return self


class CoolingUnit(Model):
    name: SafeName
    x_m: float
    y_m: float
    airflow_m3_s: PositiveFloat = Field(description="design supply airflow [m3/s]")
    capacity_kw: PositiveFloat = Field(description="sensible cooling capacity [kW]")
    supply_temp_c: Annotated[float, Field(ge=5, le=35)] = Field(18.0, description="supply air [C]")
    outlet: CoolingOutlet | None = Field(
        None, description="wall-jet supply from this outlet (the jet starts at x_m, y_m); None = the hall's supply")


class RackOverride(Model):
    """One rack of a row that differs from the row: its node model, node count or position."""

    rack: PositiveInt = Field(description="position of the rack in its row, 1 = the first rack")
    node_model: str | None = Field(None, description="catalog node model of this rack; None = the row's")
    nodes_per_rack: PositiveInt | None = Field(None, description="nodes in this rack; None = the row's")
    x_m: float | None = Field(None, description="explicit rack centre x [m] (give x_m and y_m); "
                                                "None = on the row's line")
    y_m: float | None = Field(None, description="explicit rack centre y [m] (give x_m and y_m)")


class RackRow(Model):
    """A straight row of racks. Rack i stands at (x_m, y_m) + i * pitch_m along ``along``
    unless ``rack_overrides`` places it explicitly; its node model and node count are the
    row's (default: ``hardware``), per rack overridable."""

    name: SafeName
    x_m: float = Field(description="centre of the first rack, x [m]")
    y_m: float = Field(description="centre of the first rack, y [m]")
    racks: PositiveInt
    along: Literal["x", "y"] = "x"
    pitch_m: PositiveFloat = 0.6
    intake: Direction = Field(description="side the racks breathe from (the cold aisle)")
    enclosure: StrictBool = Field(False, description="custom airflow-control enclosure (Blue Vela)")
    node_model: str | None = Field(
        None, description="catalog node model of this row's racks; None = hardware.node_model")
    nodes_per_rack: PositiveInt | None = Field(None, description="nodes per rack of this row; None = hardware's")
    rack_overrides: list[RackOverride] = Field(
        [], description="racks of the row with another node model, node count or an explicit position")


class Obstacle(Model):
    name: str
    kind: Literal["cable_tray", "column", "wall", "other"] = "cable_tray"
    x0_m: float
    y0_m: float
    x1_m: float
    y1_m: float


class Position(Model):
    x_m: float
    y_m: float


class Hall(Model):
    name: SafeName
    width_m: PositiveFloat = Field(description="extent in x [m]")
    depth_m: PositiveFloat = Field(description="extent in y [m]")
    height_m: PositiveFloat = 3.0
    containment: Literal["none", "cold_aisle", "hot_aisle"] = "none"
    rows: list[RackRow] = Field(min_length=1)
    cooling_units: list[CoolingUnit] = Field(min_length=1)
    obstacles: list[Obstacle] = []
    rack_width_m: PositiveFloat = 0.6
    rack_depth_m: PositiveFloat = 1.2
    cell_m: PositiveFloat = Field(
        0.3, description="thermal grid resolution [m]; 0.3 m is within 1 K of a grid twice as fine")
    containment_leakage_fraction: Annotated[float, Field(ge=0, le=1)] = Field(
        0.05, description="share of a contained or enclosed rack's intake air drawn from the room "
                          "instead of the supply when the aisle's tiles match the racks' draw; an aisle short "
                          "of air draws its whole deficit from the room (assumption: well-sealed containment "
                          "leaks a few percent)")
    rack_bypass_fraction: Annotated[float, Field(ge=0, lt=1)] = Field(
        0.0, description="share of a rack's airflow that is its own exhaust (missing blanking panels)")
    supply: Literal["raised_floor", "overhead"] = Field(
        "raised_floor", description="cold air through floor tiles from a plenum, or ducted overhead diffusers")
    tiles: list[Position] = Field(
        [], description="perforated tiles or overhead diffusers (0.6 m squares); empty = one in "
                        "front of each rack's intake")
    floor_leakage_fraction: Annotated[float, Field(ge=0, lt=1)] = Field(
        0.1, description="share of plenum air lost through cable cut-outs and gaps (raised floors leak 5-15%)")
    eddy_diffusivity_m2_s: PositiveFloat = Field(0.1, description="horizontal mixing of room air [m2/s]")
    layers: Annotated[int, Field(ge=1, le=8)] = Field(
        1, description="air layers over the height: 1 = plan view, > 1 = 3-D (slower to derive D)")
    rack_height_m: PositiveFloat = Field(2.0, description="rack height for the 3-D model (42U ~ 2.0 m)")

    @model_validator(mode="after")
    def _outlets_fit(self):
        for c in self.cooling_units:
            if c.outlet is not None and c.outlet.z_to_m > self.height_m:
                raise ValueError(f"cooling unit {c.name!r}: outlet z_to_m {c.outlet.z_to_m} is above the "
                                 f"hall's height_m {self.height_m}")
        return self


class Feed(Model):
    name: SafeName
    capacity_kw: PositiveFloat = Field(description="utility feed / switchboard rating [kW]")


class Ups(Model):
    mode: Literal["double_conversion", "bypass"] = "double_conversion"
    capacity_kw: PositiveFloat = Field(
        description="total UPS output rating [kW], split equally over the feed paths (with 2N "
                    "redundancy one path's share must carry the whole load)")
    ride_through_s: NonNegFloat = Field(300.0, description="battery autonomy at full load [s]")


class Rpp(Model):
    """Remote power panels. Each rack is fed from one RPP (A/B sides split the load)."""

    count: PositiveInt
    racks_per_rpp: PositiveInt
    breaker_a: PositiveFloat = Field(description="RPP feeder breaker rating [A]")
    voltage_v: PositiveFloat = Field(415.0, description="line-to-line voltage [V]")
    phases: Literal[1, 3] = 3
    rated_100pct: StrictBool = Field(False, description="100%-rated breaker (else NEC 80% continuous)")
    power_factor: Annotated[float, Field(gt=0, le=1)] = 0.95


class PowerStage(Model):
    date: Date
    it_power_kw: PositiveFloat = Field(description="IT power available from this date [kW]")
    note: str = ""


class GridEvent(Model):
    time: DateTime
    kind: Literal["sag", "outage"]
    duration_s: PositiveFloat
    feed: str | None = Field(
        None, description="name of the one feed that is lost (its load moves to the others); "
                          "None = the utility disturbance reaches every feed")


class Grid(Model):
    sag_rate_per_year: NonNegFloat = Field(0.0, description="voltage sags deep enough to matter [1/yr]")
    outage_rate_per_year: NonNegFloat = Field(0.0, description="utility outages [1/yr]")
    sag_duration_s: PositiveFloat = Field(0.2, description="mean sag duration [s]")
    outage_duration_s: PositiveFloat = Field(1800.0, description="mean outage duration [s]")
    feed_outage_rate_per_year: NonNegFloat = Field(
        0.0, description="losses of one feed (switchboard, transformer, PDU path) per feed [1/yr]")
    feed_outage_duration_s: PositiveFloat = Field(4 * 3600.0, description="mean time to restore a feed [s]")
    events: list[GridEvent] = []


class CoolingPlant(Model):
    outdoor_temp_c: Annotated[float, Field(ge=-90, le=60)] = Field(
        20.0, description="constant outdoor dry-bulb [C] (Earth's records: -89.2 C, 56.7 C)")
    outdoor_temp_swing_c: NonNegFloat = Field(0.0, description="seasonal half-amplitude [C]")
    outdoor_daily_swing_c: NonNegFloat = Field(0.0, description="day-night half-amplitude [C]")
    chiller_cop_at_25c: PositiveFloat = Field(4.5, description="chiller COP at 25 C outdoor")
    fan_pump_fraction: NonNegFloat = Field(0.05, description="CRAH fan + pump power per heat [W/W]")


class Power(Model):
    feeds: list[Feed] = Field(min_length=1, max_length=2)
    ups: Ups
    rpp: Rpp
    plan: list[PowerStage] = Field(min_length=1)
    redundancy: Literal["2N", "none"] = Field(
        "2N", description="2N: every rack load must fit one feed alone; none: both feeds carry load")
    psu_holdup_s: NonNegFloat = Field(0.012, description="PSU hold-up time [s]")
    generator_start_s: NonNegFloat = Field(15.0, description="generator start and transfer [s]")
    power_cap_policy: StrictBool = Field(
        False, description="admit racks at the hardware.gpu_power_cap_w worst case instead of at TDP")
    oversubscription: Annotated[float, Field(ge=1, le=3)] = Field(
        1.0, description="admit racks until worst-case draw reaches this multiple of the limits "
                         "(power oversubscription; > 1 risks breaker trips)")
    breaker_reset_s: PositiveFloat = Field(3600.0, description="time to reset a tripped RPP breaker [s]")
    grid: Grid = Grid()
    cooling: CoolingPlant = CoolingPlant()
    chain: PowerChain | None = Field(
        None, description="the chain as equipment (twin/scenario/power_chain.py); `twin capacity` "
                          "derives each dated stage's IT capacity from it")


class CoolingEvent(Model):
    time: DateTime
    hall: int = Field(0, ge=0, description="index of the hall")
    unit: str = Field(description="name of the cooling unit that trips")
    duration_s: PositiveFloat


class CoolingFaults(Model):
    unit_failure_rate_per_year: NonNegFloat = Field(0.0, description="trips per cooling unit [1/yr]")
    repair_h: PositiveFloat = Field(8.0, description="mean time to restore a cooling unit [h]")
    events: list[CoolingEvent] = []


class Upgrade(Model):
    """A site upgrade option a siting study may buy (e.g. UPS bypass, RPP re-feed, enclosures)."""

    name: str
    description: str = ""
    cost_usd: NonNegFloat
    lead_time_days: NonNegFloat
    it_power_kw_added: NonNegFloat = 0.0
    cooling_kw_added: NonNegFloat = 0.0


class Economics(Model):
    electricity_usd_per_mwh: NonNegFloat = Field(80.0, description="energy price [USD/MWh]")
    carbon_kg_per_mwh: NonNegFloat = Field(370.0, description="grid carbon intensity [kg CO2/MWh]")
    upgrades: list[Upgrade] = []


class Site(Model):
    halls: list[Hall] = Field(min_length=1)
    power: Power
    cooling_faults: CoolingFaults = CoolingFaults()
    cooling_system: CoolingSystem = Field(
        CoolingSystem(), description="plant capacity, fans, set points, weather and fault events "
                                     "(twin/scenario/cooling.py; defaults = the legacy model)")
    economics: Economics = Economics()


# --------------------------------------------------------------------------- hardware
class Hardware(Model):
    node_model: str = Field(description="key in the hardware catalog (twin/catalog/nodes.yaml); the "
                                        "default of every rack (rows and racks may name others)")
    nodes_per_rack: PositiveInt = Field(description="nodes per rack, the default of every rack")
    gpu_power_cap_w: PositiveFloat | None = Field(None, description="per-GPU power cap [W]; None = TDP")
    network_power_per_rack_w: NonNegFloat = Field(
        0.0, description="share of fabric switches and storage per compute rack [W]")
    deployment: Literal["bare_metal", "container", "vm"] = "bare_metal"


class SiteTier(Model):
    """One fabric per hall, the halls (or buildings) of the site joined by a site tier."""

    oversubscription: Annotated[float, Field(ge=1)] = Field(
        1.0, description="a hall's NIC bandwidth over its uplink bandwidth to the site tier "
                         "(1 = non-blocking between halls)")


class FabricFault(Model):
    """A dated fault of the fabric above the leaves: a spine (or core) switch, or cables of
    one leaf-spine (or spine-core) bundle, out of service for a window. Traffic re-routes
    over the working paths (:func:`twin.fabric.bottleneck_bandwidth_gbps`); no job stops.
    Leaf (rail) switch failures are drawn by the failure model (class ``leaf_switch``)."""

    kind: Literal["spine_switch", "fabric_link"]
    switch: str | None = Field(None, description="spine_switch: the switch, spine:p<plane>:<pod>:<index> "
                                                 "or core:p<plane>:<group>:<index>")
    link: tuple[str, str] | None = Field(None, description="fabric_link: the two switches the cables join "
                                                           "(a leaf and a spine, or a spine and a core)")
    cables: PositiveInt = Field(1, description="fabric_link: cables of that bundle that fail")
    time: DateTime = Field(description="start of the fault")
    duration_s: PositiveFloat = Field(description="time until it is repaired [s]")

    @model_validator(mode="after")
    def _names_its_part(self):
        if self.kind == "spine_switch" and (self.switch is None or self.link is not None):
            raise ValueError("a spine_switch fault names its switch (and no link)")
        if self.kind == "fabric_link" and (self.link is None or self.switch is not None):
            raise ValueError("a fabric_link fault names its link (and no switch)")
        if self.kind == "spine_switch" and self.cables != 1:
            raise ValueError("cables is for a fabric_link fault (a spine_switch takes all its cables)")
        return self


def _fault_windows_overlap(faults: list[FabricFault]) -> list[FabricFault]:
    """Fabric faults of one part (switch, or bundle) whose windows overlap: their windows
    must follow one another (as a cooling unit's)."""
    by_part: dict[tuple, list[tuple[float, float, int]]] = {}
    for i, f in enumerate(faults):
        part = (f.switch,) if f.link is None else tuple(sorted(f.link))
        t0 = f.time.timestamp()
        by_part.setdefault(part, []).append((t0, t0 + f.duration_s, i))
    for win in by_part.values():
        win.sort()
        for (_, end, i), (start, _, k) in zip(win, win[1:], strict=False):
            if start < end:
                shown = faults[k].switch or list(faults[k].link or ())
                raise ValidationError.from_exception_data("FabricFault", [dict(
                    type="value_error", loc=(k, "time"), input=faults[k].time.isoformat(),
                    ctx={"error": ValueError(f"a fault window of {shown} that starts after the one of "
                                             f"fabric.faults.{i} ends (they overlap)")})])
    return faults


class Fabric(Model):
    kind: Literal["rail_optimized", "clos", "fat_tree"]
    su_nodes: PositiveInt = Field(32, description="nodes per scalable unit")
    rails: PositiveInt = 8
    link_gbps: PositiveFloat = 400.0
    switch_model: str = "qm9700"
    switch_ports: PositiveInt = 64
    oversubscription: Annotated[float, Field(ge=1)] = 1.0
    transport: Literal["ib_rdma", "roce", "roce_host", "tcp"] = Field(
        "ib_rdma", description="InfiniBand RDMA, RoCE with GPU-direct RDMA, RoCE through host memory, or TCP")
    ports_per_nic: PositiveInt = Field(1, description="fabric ports per NIC (rails per NIC)")
    spines: PositiveInt | None = None
    tor_uplinks_per_spine: PositiveInt = 2
    planes: PositiveInt = Field(
        1, description="multi-plane (rail_optimized, clos): each NIC port splits into this many "
                       "ports of link_gbps / planes, each cabled into its own plane; switch_ports "
                       "counts ports at that speed (a 51.2 Tb/s switch: 64 x 800G or 256 x 200G)")
    site_tier: SiteTier | None = Field(
        None, description="one fabric per hall, joined by a site tier (a fourth tier); every hall "
                          "but the last holds a multiple of su_nodes nodes. None = one fabric for "
                          "every hall")
    routing: Literal["adaptive", "static_ecmp"] = Field(
        "adaptive", description="adaptive: traffic spreads over the equal-cost paths; static_ecmp: "
                                "each flow (queue_pairs per connection) hashed onto one path")
    queue_pairs: Annotated[int, Field(gt=0, strict=True)] = Field(
        4, description="static_ecmp only: flows [-] that each node-to-node connection opens on every NIC "
                       "cable, of equal rate, each hashed onto its own path (more flows, fewer "
                       "collisions). NCCL: NCCL_IB_QPS_PER_CONNECTION queue pairs per connection "
                       "(default 1), one connection per channel, often several channels per NIC, so "
                       "about channels per NIC x queue pairs. 4 is not NCCL's default but the engine's "
                       "former fixed value, kept so results do not move; 1 per direction came closest "
                       "to a measured Clos (static ECMP 0.42 of the bisection vs 0.38 measured, 0.56 "
                       "with 4: docs/validation.md, fabric)")
    sharing: Literal["none", "max_min"] = Field(
        "none", description="none: each job's collectives see the fabric alone; max_min: running "
                            "jobs share links max-min fairly, recomputed when jobs start or stop "
                            "or switches fail")
    faults: Annotated[list[FabricFault], AfterValidator(_fault_windows_overlap)] = Field(
        [], description="dated spine switch and leaf-spine cable faults; while one is in force every "
                        "job's bandwidth (alone and shared) is routed around it")


# --------------------------------------------------------------------------- workload
class ModelShape(Model):
    layers: PositiveInt
    hidden: PositiveInt
    ffn_hidden: PositiveInt
    heads: PositiveInt
    kv_heads: PositiveInt
    vocab: PositiveInt
    gated_mlp: StrictBool = Field(True, description="SwiGLU (3 matrices of h x ffn) or plain GELU MLP (2)")
    experts: Annotated[int, Field(ge=0, strict=True)] = Field(
        0, description="mixture of experts: experts per layer (ffn_hidden is one expert's inner size); 0 = dense")
    top_k: PositiveInt = Field(2, description="experts each token is routed to (mixture of experts)")
    capacity_factor: PositiveFloat = Field(
        1.0, description="an expert's token capacity over its even share; the padded work is computed")
    routing: Literal["capacity", "dropless"] = Field(
        "capacity", description="capacity: every expert padded to capacity_factor x its share; dropless: "
                                "no capacity, the busiest expert-parallel rank carries "
                                "MOE_DROPLESS_BUSIEST_LOAD x its even share (mixture of experts)")
    expert_ffn_hidden: PositiveInt | None = Field(
        None, description="a routed expert's inner size (DeepSeek moe_intermediate_size); None = ffn_hidden, "
                          "which then sizes the dense layers' MLP (mixture of experts)")
    shared_experts: Annotated[int, Field(ge=0, strict=True)] = Field(
        0, description="shared experts every token passes through (DeepSeek n_shared_experts)")
    shared_expert_ffn_hidden: PositiveInt | None = Field(
        None, description="a shared expert's inner size; None = the routed expert's")
    dense_layers: Annotated[int, Field(ge=0, strict=True)] = Field(
        0, description="first layers with a dense MLP of ffn_hidden (DeepSeek first_k_dense_replace)")
    mla_q_lora_rank: Annotated[int, Field(ge=0, strict=True)] = Field(
        0, description="multi-head latent attention: query latent rank (0 = no query compression)")
    mla_kv_lora_rank: Annotated[int, Field(ge=0, strict=True)] = Field(
        0, description="multi-head latent attention: key/value latent rank (0 = no MLA)")
    mla_qk_nope_head_dim: Annotated[int, Field(ge=0, strict=True)] = Field(
        0, description="MLA: per-head query/key size without rotary embedding")
    mla_qk_rope_head_dim: Annotated[int, Field(ge=0, strict=True)] = Field(
        0, description="MLA: per-head query/key size with rotary embedding")
    mla_v_head_dim: Annotated[int, Field(ge=0, strict=True)] = Field(0, description="MLA: per-head value size")
    node_limit: PositiveInt | None = Field(
        None, description="DeepSeek-V3 node-limited routing (arXiv 2412.19437 sec. 3.2.2): nodes [-] of the "
                          "expert-parallel group a token's experts may span (config topk_group); the dispatch "
                          "crosses IB once a node and forwards over NVLink; at most the group's nodes; "
                          "None = off (mixture of experts)")
    mtp_depth: Annotated[int, Field(ge=0, strict=True)] = Field(
        0, description="multi-token prediction modules [-] on the last pipeline stage (DeepSeek-V3 sec. 2.2, "
                       "num_nextn_predict_layers): their compute in the step, their weights and activations "
                       "in the memory estimate; 0 = none")

    @model_validator(mode="after")
    def _routing(self):
        if self.experts and self.top_k > self.experts:
            raise ValueError(f"top_k = {self.top_k} is more than experts = {self.experts}")
        # the estimate file's rules, which share these names (imported here: the compute
        # package is not needed to build the other scenario models)
        from twin.compute.estimate_file import shape_problems
        problems = shape_problems(self, prefix="")
        if problems:
            raise ValueError("; ".join(problems))
        return self


class Job(Model):
    name: SafeName
    model: ModelShape
    seq_len: PositiveInt
    global_batch: PositiveInt = Field(description="sequences per step")
    micro_batch: PositiveInt = 1
    tp: PositiveInt = 1
    pp: PositiveInt = 1
    cp: PositiveInt = 1
    vpp: PositiveInt = 1
    nodes: PositiveInt = Field(description="nodes the job asks for")
    node_model: str | None = Field(
        None, description="catalog node model the job runs on (all its nodes are of one model); "
                          "None = the scheduler picks a model with enough nodes")
    precision: Literal["bf16", "fp8"] = "bf16"
    activation_recompute: StrictBool = False
    tokens_target: PositiveFloat | None = Field(None, description="stop after this many tokens; None = run to the end")
    checkpoint_interval_s: PositiveFloat | Literal["auto"] = Field(
        3600.0, description="fixed interval [s] or 'auto' (Daly optimum from the current MTBF)")
    checkpoint_bytes: PositiveFloat | None = Field(
        None, description="checkpoint size [B]; None = 14 B per parameter (bf16 weights + fp32 Adam state)")
    restart_s: NonNegFloat = Field(600.0, description="job relaunch time after an interruption, before the reload [s]")
    priority: int = 0
    submit: Date | None = Field(None, description="submission date; None = simulation start")
    elastic: StrictBool = Field(False, description="shrink to the nodes left instead of waiting for a full set")
    hot_spares: Annotated[int, Field(ge=0, strict=True)] = Field(
        0, description="extra idle nodes the job holds; a failed node is swapped for one without requeueing")
    ep: PositiveInt = Field(
        1, description="expert-parallel ranks, taken from the data x context parallel group, or with "
                       "moe_expert_tp from a stage's tensor x context x data ranks (mixture of experts)")
    zero_stage: Literal[0, 1, 2, 3] = Field(
        1, description="optimizer sharding: 1 = Megatron distributed optimizer (ZeRO-1); 3 = FSDP / ZeRO-3 "
                       "(weights, gradients and optimizer state sharded, each layer's weights gathered per use)")
    fsdp_shard: PositiveInt | None = Field(
        None, description="ZeRO-3 shard group [ranks]; None = all data x context parallel ranks")
    moe_expert_tp: PositiveInt | None = Field(
        None, description="expert tensor parallel size (Megatron-core --expert-tensor-parallel-size): 1 or tp, "
                          "the expert groups folded over the tp x cp x dp ranks; None = experts split over tp, "
                          "EP from the data x context ranks (mixture of experts)")
    pipeline_schedule: Literal["1f1b", "interleaved", "dualpipe"] | None = Field(
        None, description="pipeline schedule (twin.compute.step.PIPELINE_SCHEDULES): 1f1b, interleaved "
                          "(vpp > 1) or dualpipe (DeepSeek-V3's bidirectional schedule: even pp, vpp 1, an "
                          "even number of micro-batches >= 2 pp, zero_stage 0-2); None = interleaved when "
                          "vpp > 1, else 1f1b")
    pipeline_layout: Annotated[str, Field(strict=True)] | None = Field(
        None, description="which layers each pipeline rank and virtual chunk holds, as Megatron-core's "
                          "--pipeline-model-parallel-layout writes it: pp x vpp virtual stages split by '|' "
                          "(stage v pp + r is rank r's chunk v), E embedding, t decoder layer, m MTP layer, "
                          "L output layer and loss, X*n and (...)*n repeats, commas cosmetic; E first, L last, "
                          "model.layers t and model.mtp_depth m; e.g. \"E|(t|)*126,L\" (Meta's Llama 3 405B "
                          "at pp 16, vpp 8: quote it in YAML); layers need not divide by pp x vpp; step "
                          "time and memory estimate; None = ceil(layers / pp) decoder layers a rank")
    moe_dispatch_dtype: Literal["bf16", "fp8"] = Field(
        "bf16", description="expert dispatch element, forward and backward (DeepSeek-V3 arXiv 2412.19437 sec. "
                            "3.3.4): bf16 2 B, or fp8 with an fp32 scale per 1x128 tile, 1 + 4/128 B; the "
                            "combine stays bf16; step time only (mixture of experts)")
    recompute_norms_mla_up: StrictBool = Field(
        False, description="DeepSeek-V3 (sec. 3.2.3): RMSNorm and MLA up-projection outputs recomputed in "
                           "backward, not kept; memory estimate only; needs activation_recompute false")
    fp8_cached_linear_inputs: StrictBool = Field(
        False, description="DeepSeek-V3 (sec. 3.3.3): Linear inputs cached in FP8 (attention output E5M6, "
                           "MoE SwiGLU inputs FP8 and its output recomputed, the dispatched expert inputs FP8); "
                           "memory estimate only; needs precision fp8 and activation_recompute false")
    adam_moment_dtype: Literal["fp32", "bf16"] = Field(
        "fp32", description="AdamW first and second moments, 4 B (fp32) or 2 B (bf16, DeepSeek-V3 sec. "
                            "3.3.3; master weights stay fp32); memory estimate only")

    @model_validator(mode="after")
    def _experts_and_sharding(self):
        if self.ep > 1 and not self.model.experts:
            raise ValueError(f"ep = {self.ep} needs a mixture of experts (model.experts > 0)")
        if self.moe_expert_tp is not None:
            if not self.model.experts:
                raise ValueError(f"moe_expert_tp = {self.moe_expert_tp} needs a mixture of experts "
                                 "(model.experts > 0)")
            if self.moe_expert_tp not in (1, self.tp):
                raise ValueError(f"moe_expert_tp = {self.moe_expert_tp} must be 1 or tp = {self.tp}")
        if self.model.experts and self.model.experts % self.ep:
            raise ValueError(f"model.experts = {self.model.experts} is not a multiple of ep = {self.ep}")
        if self.fsdp_shard is not None and self.zero_stage != 3:
            raise ValueError(f"fsdp_shard = {self.fsdp_shard} needs zero_stage = 3 (FSDP / ZeRO-3)")
        return self


class Storage(Model):
    kind: Literal["storage_scale", "nfs"] = "storage_scale"
    units: PositiveInt = 2
    write_gb_s_per_unit: PositiveFloat = Field(155.0, description="Storage Scale System 6000 write [GB/s]")
    read_gb_s_per_unit: PositiveFloat = Field(310.0, description="Storage Scale System 6000 read [GB/s]")


class Workload(Model):
    jobs: list[Job] = Field([], description="fixed training jobs; may be empty when a stream fills the cluster")
    stream: WorkloadStream | None = Field(None, description="a generated job stream (twin.workload)")
    trace: WorkloadTrace | None = Field(None, description="a scheduler trace replayed instead of jobs")
    scheduler: SchedulerPolicy = SchedulerPolicy()
    storage: Storage = Storage()

    @model_validator(mode="after")
    def _has_work(self):
        if not self.jobs and self.stream is None and self.trace is None:
            raise ValueError("at least one job, a stream or a trace")
        if self.trace is not None and self.jobs:
            raise ValueError("a trace replaces the jobs list: give trace or jobs, not both")
        if self.trace is not None and self.stream is not None:
            raise ValueError("a trace replaces the stream: give trace or stream, not both "
                             "(workload.stream=null)")
        if self.stream is not None and any(j.hot_spares or j.elastic for j in self.jobs):
            raise ValueError("fixed jobs beside a stream run under the LSF-like scheduler, which "
                             "holds no hot spares and does not shrink jobs: hot_spares 0, elastic false")
        return self


# --------------------------------------------------------------------------- failures, ramp
class Failures(Model):
    enabled: StrictBool = True
    rate_scale: NonNegFloat = Field(1.0, description="multiplier on every catalog failure rate")
    class_rate_scale: dict[str, NonNegFloat] = Field(
        {}, description="multiplier per failure class, e.g. {gpu_hbm3: 2.0} (twin/catalog/failures.yaml)")
    health_check_interval_s: PositiveFloat = Field(
        300.0, description="period of the GPU/node health checks (LSF GPU health, Autopilot) [s]")
    watchdog_timeout_s: PositiveFloat = Field(600.0, description="collective watchdog timeout (hangs) [s]")
    sdc_detection_mean_s: PositiveFloat = Field(3600.0, description="mean time to notice silent data corruption [s]")
    technicians: PositiveInt = Field(4, description="repair crew size")
    spares: Annotated[NonNegFloat, AfterValidator(_whole_number)] | dict[
            str, Annotated[int, Field(ge=0, strict=True)]] = Field(
        16, description="spare parts in stock: one number = a shared pool of field-replaceable "
                        "units; a mapping part -> count (gpu, dimm, transceiver, leaf_switch, ...) = "
                        "one stock per part, parts not listed are bought on demand without a wait")
    restock_days: PositiveFloat = Field(7.0, description="spare restock lead time [days]")
    burn_in_weibull_shape: Annotated[float, Field(gt=0, le=1)] = Field(
        0.6, description="Weibull shape of infant mortality (< 1: hazard falls with age)")
    burn_in_expected_failures_per_node: NonNegFloat = Field(
        0.03, description="expected infant failures per node during ramp.burn_in_days")
    planned_maintenance_per_day: NonNegFloat = Field(
        0.0, description="announced cluster maintenance windows [1/day] (Llama 3: 47 in 54 days = 0.87)")
    planned_maintenance_downtime_s: NonNegFloat = Field(1800.0, description="length of a window [s]")
    activation_energy_ev: PositiveFloat = Field(0.7, description="Arrhenius activation energy [eV]")
    arrhenius_reference_temp_c: Annotated[float, Field(ge=0, le=150)] = Field(
        65.0, description="GPU temperature at which the catalog rates hold [C]")


class Wave(Model):
    date: Date
    racks: PositiveInt
    note: str = ""


class Ramp(Model):
    waves: list[Wave] = Field(min_length=1)
    burn_in_days: NonNegFloat = 3.0


# --------------------------------------------------------------------------- outputs
class Outputs(Model):
    """What a run keeps in results.nc (memory is bounded by it: twin/sim/recorder.py)."""

    rack_series: Literal["full", "hall", "none"] = Field(
        "full", description="per-rack and per-RPP series: 'full' = every rack and RPP at every sample; "
                            "'hall' = one series per hall plus per-rack run aggregates (hottest inlet, "
                            "peak power, energy, hours outside ASHRAE recommended); 'none' = the run "
                            "aggregates only. KPIs are the same at every level")


class Scenario(Model):
    name: SafeName
    description: str = ""
    simulation: Simulation
    site: Site
    hardware: Hardware
    fabric: Fabric
    workload: Workload
    failures: Failures = Failures()
    ramp: Ramp
    outputs: Outputs = Outputs()


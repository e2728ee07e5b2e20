"""Scenario models of the power chain as equipment (``site.power.chain``).

The chain is described the way a facility engineer draws a one-line diagram: utility
service, MV/LV transformers, switchboards (switchgear and feeds), generators, the UPS
plant (modules, topology, mode and efficiency curve), remote power panels with their
breaker frame, branch circuits and rack PDUs with A/B cords; where the mechanical plant
sits on the chain; a battery and a GPU power floor that smooth training swings; and the
dated equipment changes of the power plan (``stages``). ``twin capacity`` derives the
usable IT capacity of each stage from this (:mod:`twin.power.capacity`).

Validation here is what the chain alone can tell (redundancy the equipment cannot
provide, unknown breaker frames or UPS curves, a battery without energy, a stage change
that names no field); checks that need the racks (a branch circuit below one rack's idle
draw) are in :func:`twin.power.chain.chain_problems`.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

PositiveFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
PositiveInt = Annotated[int, Field(gt=0)]
Fraction = Annotated[float, Field(ge=0, le=1)]
PowerFactor = Annotated[float, Field(gt=0, le=1)]
GroupRedundancy = Literal["N", "N+1", "2N"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)


def _field_error(title: str, found: list[tuple[tuple, Any, str]]) -> ValidationError:
    """A validation error at each ``(loc, value, message)`` of ``found``, ``loc`` relative to
    the model that raises it: a cross-field check raises it so that the scenario's error
    names the dotted path of the field (``site.power.chain.stages.2.date``), not the
    whole model (pydantic prefixes the location of the model that raised it)."""
    return ValidationError.from_exception_data(title, [
        InitErrorDetails(type=PydanticCustomError("value_error", "{why}", {"why": why}), loc=loc, input=value)
        for loc, value, why in found])


def _check_group(part: str, count: int, redundancy: str, unit: str) -> None:
    if redundancy == "2N" and (count < 2 or count % 2):
        raise _field_error(part, [(("count",), count, f"{part}: redundancy 2N needs an even number of {unit} "
                                   f"(two independent halves, each carrying the whole load); got count={count}")])
    if redundancy == "N+1" and count < 2:
        raise _field_error(part, [(("count",), count, f"{part}: redundancy N+1 needs at least 2 {unit} (one "
                                   f"spare); got count={count}")])


def _check_frame(value: str) -> str:
    from twin.power.breakers import BREAKER_FRAMES
    if value not in BREAKER_FRAMES:
        raise ValueError(f"unknown breaker frame {value!r}; known frames: {sorted(BREAKER_FRAMES)}")
    return value


class UtilityService(_Model):
    kva: PositiveFloat = Field(description="utility service capacity (contract / service transformer) [kVA]")
    voltage_v: PositiveFloat = Field(13200.0, description="service voltage [V]")
    power_factor: PowerFactor = Field(0.95, description="facility power factor at the service")


class Transformers(_Model):
    count: PositiveInt
    kva: PositiveFloat = Field(description="nameplate of each MV/LV transformer [kVA]")
    redundancy: GroupRedundancy = "2N"
    power_factor: PowerFactor = 0.95
    loading_fraction: Annotated[float, Field(gt=0, le=1.5)] = Field(
        1.0, description="planned continuous loading of the nameplate (IEEE C57.91 allows more with "
                         "loss of life; 1.0 = nameplate)")

    @model_validator(mode="after")
    def _redundancy(self):
        _check_group("transformers", self.count, self.redundancy, "transformers")
        return self


class _Circuit(_Model):
    """What every breaker-protected circuit has: the breaker frame, voltage, phases, the
    continuous rating rule and the load power factor."""

    frame: str = Field("molded_case", description="breaker frame (twin.power.breakers.BREAKER_FRAMES)")
    voltage_v: PositiveFloat = Field(415.0, description="line-to-line (3-phase) or line voltage [V]")
    phases: Literal[1, 3] = 3
    rated_100pct: StrictBool = Field(False, description="100%-rated breaker (else NEC 80% continuous)")
    power_factor: PowerFactor = 0.95

    @field_validator("frame")
    @classmethod
    def _frame(cls, v):
        return _check_frame(v)


class Switchboards(_Circuit):
    """Main switchboards / switchgear, one per feed path (A, B, ...)."""

    count: PositiveInt
    main_breaker_a: PositiveFloat = Field(description="main breaker rating of each switchboard [A]")
    voltage_v: PositiveFloat = Field(480.0, description="line-to-line voltage [V]")
    frame: str = Field("insulated_case", description="breaker frame (twin.power.breakers.BREAKER_FRAMES)")
    redundancy: GroupRedundancy = "2N"

    @model_validator(mode="after")
    def _redundancy(self):
        _check_group("switchboards", self.count, self.redundancy, "switchboards")
        return self


class Generators(_Model):
    count: PositiveInt
    kw: PositiveFloat = Field(description="rating of each generator set [kW] (ISO 8528 standby unless 'prime')")
    rating: Literal["standby", "prime", "continuous"] = "standby"
    redundancy: GroupRedundancy = "N+1"
    loading_fraction: Annotated[float, Field(gt=0, le=1)] = Field(
        1.0, description="planned loading of the rating (some sites plan 80-90% of standby)")

    @model_validator(mode="after")
    def _redundancy(self):
        _check_group("generators", self.count, self.redundancy, "generator sets")
        return self


class UpsPlant(_Model):
    systems: PositiveInt = Field(description="independent UPS systems (A, B, ... or DR legs)")
    modules_per_system: PositiveInt = 1
    module_kw: PositiveFloat = Field(description="output rating of each power module [kW]")
    topology: Literal["N", "N+1", "2N", "distributed_redundant"] = "2N"
    mode: Literal["double_conversion", "eco", "line_interactive", "bypass"] = "double_conversion"
    curve: str | None = Field(None, description="efficiency curve (twin.power.ups_curves); None = the "
                                                  "mode's default, a modern unit")
    bypass_kw_per_system: PositiveFloat | None = Field(
        None, description="rating of each system's static / maintenance bypass path [kW]; "
                          "None = the fully populated frame, modules_per_system x module_kw")
    ride_through_s: NonNegFloat = Field(300.0, description="battery autonomy at full load [s]")

    @field_validator("curve")
    @classmethod
    def _curve(cls, v):
        from twin.power.ups_curves import UPS_CURVES
        if v is not None and v not in UPS_CURVES:
            raise ValueError(f"unknown UPS curve {v!r}; known curves: {sorted(UPS_CURVES)}")
        return v

    @model_validator(mode="after")
    def _topology(self):
        n, m = self.systems, self.modules_per_system
        if self.topology == "2N" and (n < 2 or n % 2):
            raise _field_error("ups", [(("systems",), n, f"ups: topology 2N needs an even number of UPS "
                                        f"systems; got systems={n}")])
        if self.topology == "distributed_redundant" and n < 3:
            raise _field_error("ups", [(("systems",), n, f"ups: topology distributed_redundant needs at least "
                                        f"3 UPS systems (N+1 at system level); got systems={n}")])
        if self.topology == "N+1" and n * m < 2:
            raise _field_error("ups", [(("modules_per_system",), m, f"ups: topology N+1 needs at least 2 power "
                                        f"modules; got systems={n} x modules_per_system={m}")])
        return self


class Rpps(_Circuit):
    """Remote power panels (PDUs) feeding the rack rows."""

    count: PositiveInt
    breaker_a: PositiveFloat = Field(description="RPP feeder (main) breaker rating [A]")
    redundancy: Literal["N", "2N"] = Field(
        "2N", description="2N: panels in A/B pairs, each able to carry the pair's racks alone")

    @model_validator(mode="after")
    def _redundancy(self):
        _check_group("rpps", self.count, self.redundancy, "RPPs")
        return self


class BranchCircuits(_Circuit):
    """The circuit of each rack PDU cord (one breaker per cord in the RPP)."""

    breaker_a: PositiveFloat = Field(description="branch breaker rating per cord [A]")
    frame: str = Field("miniature", description="breaker frame (twin.power.breakers.BREAKER_FRAMES)")
    cords_per_rack: PositiveInt = Field(2, description="rack PDU cords (2 = A and B)")
    redundancy: Literal["N", "2N"] = Field(
        "2N", description="2N: the other cord(s) carry the whole rack when one is lost")

    @model_validator(mode="after")
    def _redundancy(self):
        if self.redundancy == "2N" and self.cords_per_rack < 2:
            raise _field_error("branch", [(("cords_per_rack",), self.cords_per_rack, f"branch: redundancy 2N "
                                           f"needs at least 2 cords per rack; got cords_per_rack={self.cords_per_rack}")])
        return self


class Mechanical(_Model):
    """Where the cooling plant (chillers, CRAH fans, pumps) sits on the chain."""

    carried_by: list[Literal["utility", "transformers", "switchboards", "generators"]] = Field(
        ["utility", "transformers", "switchboards", "generators"],
        description="stages that carry the mechanical load as well as the IT chain")
    design_outdoor_temp_c: float = Field(
        35.0, description="outdoor dry bulb for sizing (ASHRAE 0.4% design day) [C]")
    house_kw: NonNegFloat = Field(0.0, description="lighting, offices, BMS on the same stages [kW]")
    transfers_on_feed_loss: StrictBool = Field(
        False, description="True: a transfer switch moves the lost path's units to the survivors; "
                           "False: N+1 chillers on the surviving path carry the heat. Either way the "
                           "survivors carry the plant's power during a feed loss")


class Battery(_Model):
    """BESS or UPS energy storage that smooths the meter (``policy``)."""

    power_kw: NonNegFloat
    energy_kwh: NonNegFloat
    round_trip_efficiency: Annotated[float, Field(gt=0, le=1)] = Field(
        0.90, description="AC-AC round trip (lithium-ion BESS ~0.85-0.92)")
    initial_soc: Fraction = 0.5
    soc_min: Fraction = 0.1
    soc_max: Fraction = 0.9
    policy: Literal["smoothing", "peak_shaving"] = "smoothing"
    max_meter_ramp_kw_per_s: PositiveFloat | None = Field(
        None, description="smoothing: ramp limit of the meter [kW/s]; None = 10% of power_kw per second")
    peak_shave_kw: PositiveFloat | None = Field(
        None, description="peak shaving: meter ceiling [kW]; None = the mean load of the trace")
    soc_restore_s: PositiveFloat = Field(600.0, description="time constant pulling SoC back to its mid-point [s]")

    @model_validator(mode="after")
    def _energy(self):
        if self.power_kw > 0 and self.energy_kwh == 0:
            raise _field_error("battery", [(("energy_kwh",), self.energy_kwh, f"battery: power_kw={self.power_kw:g} "
                                            f"with energy_kwh=0; a battery with no energy cannot deliver power")])
        if not self.soc_min < self.soc_max:
            raise _field_error("battery", [(("soc_min",), self.soc_min, f"battery: soc_min={self.soc_min:g} must "
                                            f"be below soc_max={self.soc_max:g}")])
        if not self.soc_min <= self.initial_soc <= self.soc_max:
            raise _field_error("battery", [(("initial_soc",), self.initial_soc, f"battery: initial_soc="
                                            f"{self.initial_soc:g} outside [soc_min, soc_max] = "
                                            f"[{self.soc_min:g}, {self.soc_max:g}]")])
        return self


class Swing(_Model):
    """Sub-second facility swing of synchronous training and the GPU power floor."""

    gpu_power_floor_fraction: Fraction = Field(
        0.0, description="GPU power smoothing floor as a fraction of TDP (0 = off)")
    node_skew_s: NonNegFloat = Field(
        0.0, description="spread of phase changes across a job's nodes [s] (0 = all together)")
    window_s: Annotated[float, Field(ge=60)] = Field(
        1800.0, description="length of the 1-s trace the swing KPIs are taken over [s]")


class ChainStage(_Model):
    """A dated equipment change: dotted paths inside the chain and their new values."""

    date: dt.date
    note: str = ""
    set: dict[str, Any] = Field({}, description="e.g. {ups.mode: bypass, switchboards.redundancy: N}")


class PowerChain(_Model):
    utility: UtilityService | None = None
    transformers: Transformers | None = None
    switchboards: Switchboards | None = None
    generators: Generators | None = None
    ups: UpsPlant | None = None
    rpps: Rpps | None = None
    branch: BranchCircuits | None = None
    mechanical: Mechanical = Mechanical()
    battery: Battery | None = None
    swing: Swing = Swing()
    stages: list[ChainStage] = Field([], description="dated equipment changes, in date order")
    stages_set_plan: StrictBool = Field(
        False, description="True: a run admits racks against each stage's derived IT capacity "
                           "instead of the typed site.power.plan")

    @model_validator(mode="after")
    def _stages(self):
        """Stages in date order, each one's changes valid on the chain before it; every error
        at the dotted path of the field (``stages.2.date``, ``stages.3.set.ups.mode``)."""
        if self.stages_set_plan and not self.stages:
            raise _field_error("chain", [(("stages_set_plan",), True, "stages_set_plan needs dated stages")])
        found: list[tuple[tuple, Any, str]] = []
        for k in range(1, len(self.stages)):
            if self.stages[k].date <= self.stages[k - 1].date:
                found.append((("stages", k, "date"), self.stages[k].date.isoformat(),
                              f"stages.{k}.date: {self.stages[k].date} is not after "
                              f"stages.{k - 1}.date {self.stages[k - 1].date}"))
        chain = self
        for k, st in enumerate(self.stages):
            try:
                chain = apply_stage(chain, st)
            except ValidationError as exc:
                for e in exc.errors():
                    inner = tuple(e["loc"])
                    key = _stage_key(st, inner)
                    value = st.set[key] if key is not None else st.set
                    msg = str(e["msg"]).removeprefix("Value error, ")
                    found.append((("stages", k, "set") + ((key,) if key is not None else ()), value,
                                  f"stages.{k} ({st.date}): {'.'.join(str(p) for p in inner)}: "
                                  f"{msg[:1].lower()}{msg[1:]}"))
                break                  # the later stages start from a chain this one could not make
            except _NoSuchField as exc:
                found.append((("stages", k, "set", exc.path), st.set[exc.path],
                              f"stages.{k} ({st.date}): {exc.args[0]}"))
                break
        if found:
            raise _field_error("chain", found)
        return self


class _NoSuchField(KeyError):
    """A stage's change names equipment or a field the chain does not have (``path``: its key)."""

    def __init__(self, message: str, path: str):
        super().__init__(message)
        self.path = path


def _stage_key(stage: ChainStage, loc: tuple) -> str | None:
    """The key of ``stage.set`` that an error at ``loc`` (inside the chain) comes from: the
    change whose dotted path shares the most leading parts with ``loc`` (a change of
    ``transformers.redundancy`` for an error at ``transformers.count``); None when none does."""
    best, best_n = None, (0, False)
    for key in stage.set:
        parts = str(key).split(".")
        n = 0
        for a, b in zip(parts, loc, strict=False):
            if a != str(b):
                break
            n += 1
        score = (n, n == len(parts))        # a change of the equipment itself first
        if n and score > best_n:
            best, best_n = key, score
    return best


def apply_stage(chain: PowerChain, stage: ChainStage) -> PowerChain:
    """The chain after ``stage``'s changes (validated again; stages are dropped). Raises
    KeyError for a change of equipment or a field the chain does not have."""
    data = chain.model_dump(mode="python")
    data["stages"], data["stages_set_plan"] = [], False
    for path, value in stage.set.items():
        node = data
        parts = str(path).split(".")
        for part in parts[:-1]:
            if not isinstance(node, dict) or part not in node or node[part] is None:
                raise _NoSuchField(f"no equipment at {path!r}", path)
            node = node[part]
        if not isinstance(node, dict) or parts[-1] not in node:
            raise _NoSuchField(f"no field {path!r} in the chain", path)
        node[parts[-1]] = value
    return PowerChain.model_validate(data)


def chain_at_stages(chain: PowerChain) -> list[tuple[dt.date | None, str, PowerChain]]:
    """The chain as built and after each dated stage: ``[(date, note, chain), ...]``.

    With no stages, one entry ``(None, "as built", chain)``. A first stage is the
    as-built state when its ``set`` is empty.
    """
    out: list[tuple[dt.date | None, str, PowerChain]] = []
    current = chain.model_copy(update={"stages": [], "stages_set_plan": False})
    if not chain.stages or chain.stages[0].set:
        out.append((None, "as built", current))
    for st in chain.stages:
        current = apply_stage(current, st)
        out.append((st.date, st.note, current))
    return out


def stage_in_force(dates, date: dt.date) -> int:
    """Index of the stage in force on ``date`` among stage dates in
    :func:`chain_at_stages`' order (``None``: as built): the last one on or before ``date``,
    the first before any of them."""
    return max(k for k, d in enumerate(dates) if k == 0 or d is None or d <= date)


def ups_mode_schedule(chain: PowerChain) -> list[tuple[dt.date | None, str]]:
    """The UPS mode the chain's dated stages give, from the as-built state on:
    ``[(date, mode), ...]``, one entry per change (``None`` = as built, i.e. from the start
    of a run). Empty when the chain has no UPS plant.

    The engine takes one UPS mode for a whole run (``site.power.ups.mode``); a building whose
    UPS is bypassed part-way (Blue Vela: in line until 2024-09-01) needs the run to switch
    mode at these dates (losses, ride-through of sags, the UPS limit in admission).
    """
    out: list[tuple[dt.date | None, str]] = []
    for date, _, ch in chain_at_stages(chain):
        if ch.ups is None:
            continue
        if not out or out[-1][1] != ch.ups.mode:
            out.append((date, ch.ups.mode))
    return out


def ups_mode_at(chain: PowerChain, date: dt.date, default: str) -> str:
    """UPS mode on ``date`` by the chain's stages (the last change on or before it; the
    as-built mode before the first stage); ``default`` (the run's ``site.power.ups.mode``)
    when the chain has no UPS plant."""
    mode = default
    for k, (when, m) in enumerate(ups_mode_schedule(chain)):
        if k == 0 or when is None or when <= date:
            mode = m
    return mode


def ups_mode_changes(chain: PowerChain | None, start: dt.date,
                     default: str) -> tuple[str, list[tuple[dt.date, str]]]:
    """The UPS mode a run starting on ``start`` begins in, and the ``(date, mode)`` changes
    after it, by the chain's dated stages (:func:`ups_mode_schedule`).

    A run follows the chain only when its schedule changes mode at least once: without a
    chain, without a UPS plant, or with one mode throughout, the run keeps ``default``
    (``site.power.ups.mode``) and no change, as before the chain's stages reached the
    engine. ``twin validate`` refuses a ``default`` other than the chain's as-built mode
    (:func:`twin.scenario.loader.semantic_problems`), so the two readings agree."""
    sched = ups_mode_schedule(chain) if chain is not None else []
    if chain is None or len(sched) <= 1:
        return default, []
    first = ups_mode_at(chain, start, default)
    changes = [(when, mode) for when, mode in sched[1:] if when is not None and when > start]
    return first, changes

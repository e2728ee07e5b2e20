"""Hardware catalog shipped as package data (``nodes.yaml``), every number with a source."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Entry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @model_validator(mode="after")
    def _every_number_has_a_source(self):
        numeric = [
            k for k, v in self.__dict__.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) or k in ("nvls", "nvswitch")
        ]
        missing = [k for k in numeric if k not in self.sources]
        if missing:
            raise ValueError(f"catalog numbers without a source: {missing}")
        return self


class NodeModel(_Entry):
    """One GPU server model. Units are in the field names."""

    description: str
    gpu_model: str
    gpu_count: int = Field(gt=0)
    gpu_tdp_w: float = Field(gt=0)
    gpu_idle_w: float = Field(ge=0)
    gpu_min_power_cap_w: float = Field(gt=0)
    gpu_peak_bf16_tflops: float = Field(gt=0)
    gpu_peak_fp8_tflops: float = Field(gt=0)
    gpu_memory_gb: float = Field(gt=0)
    gpu_hbm_bw_tb_s: float = Field(gt=0)
    #: sm x 10 (NVIDIA's CUDA compute-capability table); None = guessed from the NVLink
    gpu_compute_capability: int | None = Field(None, ge=70)
    nvlink_gb_s: float = Field(gt=0)
    nvswitch: bool
    nvls: bool
    host_idle_w: float = Field(ge=0)
    host_active_w: float = Field(ge=0)
    fan_max_w: float = Field(ge=0)
    node_max_w: float = Field(gt=0)
    psu_count: int = Field(gt=0)
    psu_rating_w: float = Field(gt=0)
    psus_required: int = Field(gt=0)
    compute_nics: int = Field(gt=0)
    nic_gbps: float = Field(gt=0)
    cpu_cores: int = Field(gt=0)
    memory_gb: float = Field(gt=0)
    rack_units: int = Field(gt=0)
    airflow_m3_s_at_max: float = Field(gt=0)
    gpu_thermal_resistance_k_per_w: float = Field(gt=0)
    gpu_slowdown_c: float
    gpu_hw_slowdown_c: float
    gpu_shutdown_c: float
    sources: dict[str, str]


class SwitchModel(_Entry):
    description: str
    ports: int = Field(gt=0)
    port_gbps: float = Field(gt=0)
    max_power_w: float = Field(gt=0)
    typical_power_w: float = Field(gt=0)
    sources: dict[str, str]


class Catalog(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    nodes: dict[str, NodeModel]
    switches: dict[str, SwitchModel]


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The shipped hardware catalog (parsed once per process)."""
    text = resources.files(__package__).joinpath("nodes.yaml").read_text(encoding="utf-8")
    # PyYAML's C parser when built with libyaml (the same safe constructor and resolver,
    # so the same data; ~9x faster than the pure-Python parser on this file)
    return Catalog.model_validate(yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))


def node_model(name: str) -> NodeModel:
    """Catalog entry of a node model; ``KeyError`` naming the known models if absent."""
    nodes = load_catalog().nodes
    if name not in nodes:
        raise KeyError(f"node model {name!r} not in catalog; known: {sorted(nodes)}")
    return nodes[name]

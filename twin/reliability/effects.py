"""What a failure takes down: blast radius of rail (leaf-switch) failures, PSU
redundancy, silent data corruption roll-back, and the effect of a failure class."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from twin.reliability.classes import FailureClass

PSU_OK = 0
PSU_POWER_BRAKE = 1
PSU_NODE_DOWN = 2


def rail_su_affected_nodes(
    node_index: int,
    *,
    nodes_per_su: int = 32,
    n_nodes: int | None = None,
    su_of_node: np.ndarray | None = None,
) -> np.ndarray:
    """Nodes that lose a rail when the leaf switch of ``node_index``'s rail fails.

    In a rail-optimised fabric (NVIDIA DGX SuperPOD H100: SU of 32 nodes, one leaf
    switch per rail per SU), leaf switch r of an SU connects NIC r of every node of that
    SU. With ``su_of_node`` (N,) the SU membership comes from the fabric model;
    otherwise nodes are numbered SU by SU, ``nodes_per_su`` each.
    Returns the sorted node indices of the SU (including ``node_index``).
    """
    if su_of_node is not None:
        su = np.asarray(su_of_node)
        return np.flatnonzero(su == su[node_index])
    first = (int(node_index) // nodes_per_su) * nodes_per_su
    last = first + nodes_per_su
    if n_nodes is not None:
        last = min(last, int(n_nodes))
    return np.arange(first, last)


@dataclass(frozen=True)
class FailureEffect:
    """What one failure does.

    nodes_down      nodes that go down and need repair
    nodes_degraded  nodes still up but without one compute rail (``rail``) until the
                    leaf switch is replaced; jobs on them are interrupted
    rail            the failed rail (leaf switch index in the SU), or None
    job_only        the job on the node crashes, the node stays healthy
    """

    nodes_down: np.ndarray
    nodes_degraded: np.ndarray
    rail: int | None
    job_only: bool

    @property
    def interrupted_nodes(self) -> np.ndarray:
        """Nodes whose jobs are interrupted by the failure."""
        return np.union1d(self.nodes_down, self.nodes_degraded)


def failure_effect(
    failure_class: FailureClass,
    node_index: int,
    rng: np.random.Generator,
    *,
    nodes_per_su: int = 32,
    n_nodes: int | None = None,
    n_rails: int = 8,
    su_of_node: np.ndarray | None = None,
) -> FailureEffect:
    """Effect of a failure of ``failure_class`` attributed to ``node_index``.

    node     the node goes down
    rail_su  a uniformly chosen rail r of the node's SU loses its leaf switch: every
             node of the SU is degraded (``rail_su_affected_nodes``)
    job      only the job on the node crashes
    none     nothing stops
    """
    empty = np.empty(0, dtype=np.int64)
    node = np.array([int(node_index)], dtype=np.int64)
    scope = failure_class.scope
    if scope == "node":
        return FailureEffect(node, empty, None, False)
    if scope == "rail_su":
        rail = int(rng.integers(n_rails))
        su = rail_su_affected_nodes(node_index, nodes_per_su=nodes_per_su, n_nodes=n_nodes,
                                    su_of_node=su_of_node)
        return FailureEffect(empty, su.astype(np.int64), rail, False)
    if scope == "job":
        return FailureEffect(empty, empty, None, True)
    return FailureEffect(empty, empty, None, False)


def psu_failure_effect(
    psus_failed: np.ndarray | int, psu_count: int, failed_tolerated: int
) -> np.ndarray:
    """Effect of failed PSUs on a node: 0 none, 1 GPU power brake, 2 node down.

    A node with ``psu_count`` PSUs rides ``failed_tolerated`` failures at full power
    (redundancy); with more failed but at least one working the GPU power brake cuts
    clocks (Dell XE9680, 3+3 FTR: 2+ failed -> power brake; reference README); with
    none working the node is off. Vectorised over nodes.
    """
    f = np.asarray(psus_failed)
    return np.where(f <= failed_tolerated, PSU_OK, np.where(f < psu_count, PSU_POWER_BRAKE, PSU_NODE_DOWN))


def last_clean_checkpoint_index(checkpoint_done_s: np.ndarray, corruption_s: float) -> int:
    """Index of the last checkpoint completed before a silent data corruption, or -1.

    Checkpoints completed after the corruption (up to its detection) hold corrupted
    state and must be discarded: the job rolls back to the last one before it.
    ``checkpoint_done_s`` sorted ascending [s].
    """
    return int(np.searchsorted(np.asarray(checkpoint_done_s, dtype=float), corruption_s, side="left")) - 1


def sdc_lost_work_s(
    checkpoint_done_s: np.ndarray, corruption_s: float, detection_s: float, run_start_s: float = 0.0
) -> float:
    """Training time lost to a silent data corruption [s].

    lost = t_detect - t_last_clean_checkpoint (or - run start if none): all progress
    after the last checkpoint completed before the corruption is thrown away, unlike a
    fail-stop fault which loses only the time since the latest checkpoint.
    """
    if detection_s < corruption_s:
        raise ValueError("detection_s must be >= corruption_s")
    ck = np.asarray(checkpoint_done_s, dtype=float)
    i = last_clean_checkpoint_index(ck, corruption_s)
    start = ck[i] if i >= 0 else run_start_s
    return float(detection_s - start)

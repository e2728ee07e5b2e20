"""Collective cost model: bus factors, the 8x H100 calibration curve, hierarchy, transports."""

import csv
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import twin.compute.collectives as coll
from twin.compute import bus_factor, collective_bandwidths_gb_s, collective_time_s
from twin.compute.collectives import TRANSPORTS, collective_algorithm, group_collective_time_s

# the repository's copy of ../shared/reference/calibration.yaml (assets/reference/)
CAL_FILE = Path(__file__).resolve().parents[2] / "assets" / "reference" / "calibration.yaml"
CAL = yaml.safe_load(CAL_FILE.read_text())
# the calibration figures, copied with their source in case ../shared is absent
H100_8GPU = {  # NVIDIA dgxc-benchmarking nccl/README.md (DGX H100, NVLS), calibration.yaml
    "message_bytes": [1048576, 16777216, 134217728, 1073741824, 8589934592],
    "busbw_gb_s": [67.0, 237.0, 400.5, 466.0, 480.2],
}


#: the full out-of-place curve of the same source (size [B], time [us], busbw [GB/s])
H100_8GPU_FULL = [
    (8, 13.67, 0.00), (1024, 16.94, 0.11), (8192, 17.40, 0.82), (65536, 19.54, 5.87),
    (524288, 20.66, 44.41), (1048576, 27.37, 67.04), (2097152, 42.21, 86.94),
    (4194304, 54.19, 135.44), (8388608, 83.04, 176.77), (16777216, 123.8, 237.21),
    (33554432, 199.3, 294.69), (67108864, 324.7, 361.67), (134217728, 586.4, 400.53),
    (268435456, 1112.5, 422.25), (536870912, 2151.0, 436.79), (1073741824, 4029.4, 466.33),
    (2147483648, 7939.1, 473.37), (4294967296, 15749, 477.24), (8589934592, 31307, 480.16),
    (17179869184, 62648, 479.90)]


def test_bus_factors():
    # nccl-tests doc/PERFORMANCE.md
    assert bus_factor("allreduce", 8) == pytest.approx(2 * 7 / 8)
    for op in ("reduce_scatter", "all_gather", "all_to_all"):
        assert bus_factor(op, 8) == pytest.approx(7 / 8)
    n = np.array([2, 16, 1024])
    assert np.allclose(bus_factor("allreduce", n), 2 * (n - 1) / n)
    with pytest.raises(ValueError):
        bus_factor("broadcast", 8)


def test_calibration_table_is_the_shared_one():
    ref = CAL["collectives"]["h100_sxm_8gpu_allreduce_busbw"]
    assert ref["message_bytes"] == H100_8GPU["message_bytes"]
    assert ref["busbw_gb_s"] == H100_8GPU["busbw_gb_s"]


def test_h100_8gpu_allreduce_curve_within_10_percent():
    s = np.array(H100_8GPU["message_bytes"], float)
    ref = np.array(H100_8GPU["busbw_gb_s"])
    bw = collective_bandwidths_gb_s("allreduce", s, 1, 8)["busbw_gb_s"]
    err = bw / ref - 1
    band = s >= 16 * 2**20
    assert np.all(np.abs(err[band]) < 0.10), err
    assert abs(err[0]) < 0.15  # 1 MB, outside the required band
    # busbw above the one-way NVLink 450 GB/s only with in-switch reduction (NVLS)
    assert bw[-1] > 450
    no_nvls = collective_bandwidths_gb_s("allreduce", s, 1, 8, nvls=False)["busbw_gb_s"]
    assert np.all(no_nvls[-1] < 450) and np.all(no_nvls < bw)


def test_full_published_curve_protocol_regimes():
    # NVIDIA dgxc-benchmarking nccl/README.md, DGX H100 all-reduce, 8 B .. 16 GB
    s = np.array([r[0] for r in H100_8GPU_FULL], float)
    t_ref = np.array([r[1] for r in H100_8GPU_FULL]) * 1e-6
    t = collective_time_s("allreduce", s, 1, 8)
    err = np.abs(t / t_ref - 1)
    assert np.all(err[s >= 16 * 2**20] < 0.05)
    assert np.all(err[s >= 2**20] < 0.12)
    assert np.all(err < 0.25) and err.mean() < 0.08
    # a single alpha-beta line through 1 MB and 8 GB would be far off at 16 MB
    a, b = np.searchsorted(s, [2**20, 2**33])
    beta = (t_ref[b] - t_ref[a]) / (s[b] - s[a])
    alpha = t_ref[a] - beta * s[a]
    k = np.searchsorted(s, 2**24)
    assert (alpha + beta * s[k]) / t_ref[k] < 0.75


def test_allreduce_is_reduce_scatter_plus_all_gather_across_nodes():
    # ring identity (Patarasuk & Yuan 2009): all-reduce = reduce-scatter + all-gather
    s = np.logspace(6, 10, 9)
    for nodes in (2, 16, 256):
        ar = collective_time_s("allreduce", s, nodes, 8, nvls=False, algorithm="ring")
        rs = collective_time_s("reduce_scatter", s, nodes, 8, nvls=False)
        ag = collective_time_s("all_gather", s, nodes, 8, nvls=False)
        big = s >= 1e9  # up to one pipeline fill
        assert np.allclose(ar[big], (rs + ag)[big], rtol=0.02)
        # the tuner never does worse than the ring
        free = collective_time_s("allreduce", s, nodes, 8, nvls=False)
        assert np.all(free <= ar * (1 + 1e-12))


def test_multi_node_busbw_bounded_by_the_nics():
    # 8x NDR 400 Gb/s per node = 400 GB/s; NCCL with default settings reaches the fitted
    # 87 % of it on a large all-reduce (nccl-tests issue 309)
    eff = TRANSPORTS["ib_rdma"][0]
    r = collective_bandwidths_gb_s("allreduce", 8 * 2**30, 16, 8, nvls=False)
    assert 0.97 * eff * 400 < r["busbw_gb_s"] < eff * 400
    # half the NICs (one 200 Gb/s NIC per GPU, below the NIC-share law's crossover): the
    # ring reaches the wire's 0.94 of them, not half of the full node's 0.827
    half = collective_bandwidths_gb_s("allreduce", 8 * 2**30, 16, 8, inter_node_gbps=1600,
                                      nvls=False)
    assert half["busbw_gb_s"] / (0.94 * 200) == pytest.approx(r["busbw_gb_s"] / (eff * 400),
                                                             rel=0.02)
    for op in ("reduce_scatter", "all_gather"):
        assert collective_bandwidths_gb_s(op, 8 * 2**30, 16, 8)["busbw_gb_s"] < eff * 400
    # all-to-all: every byte leaving a GPU's node goes through its own 50 GB/s NIC, so the
    # algorithm bandwidth is N/(N-1) x the NIC (NCCL maintainers, nccl-tests issue 130:
    # "2x on 2 nodes, down to 1x"), the bus bandwidth (n-1)/n of that; the NIC runs
    # point-to-point sends at 46-49 of its 50 GB/s (nccl-tests issues 267 and 290)
    for nodes in (2, 64):
        a2a = collective_bandwidths_gb_s("all_to_all", 8 * 2**30, nodes, 8)["busbw_gb_s"]
        n = 8 * nodes
        assert float(a2a) == pytest.approx(0.94 * 50 * nodes / (nodes - 1) * (n - 1) / n,
                                           rel=0.02)
    big = collective_bandwidths_gb_s("all_to_all", 8 * 2**30, 64, 8)["busbw_gb_s"]
    assert 46.0 <= float(big) <= 49.0


def test_nccl_algorithm_choice_follows_nodes_and_size():
    s = np.array([64e3, 64 * 2**20, 2**30, 16 * 2**30])
    algo = {n: list(collective_algorithm("allreduce", s, n)) for n in (1, 2, 4, 512)}
    # one node: LL128 for small buffers, then NVLS (in-switch reduction)
    assert algo[1][0] in ("ring/ll", "ring/ll128") and algo[1][1:] == ["nvls"] * 3
    # 2 nodes: NVLSTree beats every ring (its NICs carry a shard once, not 2(N-1)/N times)
    assert algo[2][1:] == ["nvls_tree"] * 3
    # many nodes: the tree's log2 N latency against the ring's 2(n-1) steps
    assert algo[512][1:3] == ["nvls_tree"] * 2
    # without NVLS a Tree, with SHARP CollNet for the large buffers
    assert collective_algorithm("allreduce", 2**30, 4, nvls=False)[0] in ("tree", "ring")
    assert collective_algorithm("allreduce", 8 * 2**30, 64, in_network_reduction=True)[0] == \
        "collnet"
    # reduce-scatter and all-gather run rings across nodes; all-to-all pairwise
    assert collective_algorithm("all_gather", 2**30, 16)[0] == "ring"
    assert collective_algorithm("all_to_all", 2**30, 16)[0] == "pairwise"
    with pytest.raises(ValueError, match="nvls_tree"):
        collective_time_s("allreduce", 2**30, 1, 8, algorithm="nvls_tree")


def _multinode_rows():
    f = Path(__file__).resolve().parents[2] / "assets/reference/nccl_allreduce_multinode_h100.csv"
    with open(f) as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def test_published_multi_node_allreduce_curves():
    # DGX/HGX H100, 8x NDR: 2, 4 and 8 nodes of two clusters (nccl-tests issue 309); the
    # three network parameters were fitted on the "fit" rows only (A at 4 nodes, B at 8);
    # each cluster runs the algorithm its NCCL tuner picks (nvls_tree_tuner_fraction)
    rows = [r for r in _multinode_rows() if r["role"] != "tuned"
            and int(r["bytes"]) >= 64 * 2**20]
    err = {}
    for r in rows:
        bw = collective_bandwidths_gb_s("allreduce", float(r["bytes"]), int(r["nodes"]), 8,
                                        nvls_tree_tuner_fraction=float(
                                            r["nvls_tree_tuner_fraction"]))
        err[(r["cluster"], int(r["nodes"]), int(r["bytes"]))] = \
            float(bw["busbw_gb_s"]) / float(r["busbw_gb_s"]) - 1
    e = np.abs(list(err.values()))
    assert len(e) == 42
    # issue 16 goal: within 10 % from 64 MB up.  The two dips of B's curves (4 nodes at
    # 256 MiB, 8 nodes at 1 GiB: where B's tuner switches to Ring) and B's 2-node 64 MiB
    # point are now within 6 % (+24 %, +14 % and +12 % before the Ring/NVLSTree split).
    # Three fit rows of the NVLSTree ramp miss, asserted at their measured errors: A on 4
    # nodes at 64 MiB (-11.7 %) and B on 8 nodes at 128 and 256 MiB (+10.1 %, +10.0 %): at
    # 64 MiB the two clusters' 4-node curves differ by 8 % (A 224, B 208 GB/s), and one fill
    # cannot serve A's faster and B's slower ramp.  NCCL's own NVLSTree latency (25 us +
    # 2 floor(log2 N) x 20.9 us) would bring B's two within 10 % but loses on the held-out
    # rows (assets/reference/nccl_multinode_alternatives.py, docs/validation.md)
    known = {("A", 4, 2**26): -0.117, ("B", 8, 2**27): 0.101, ("B", 8, 2**28): 0.100}
    assert {k for k, v in err.items() if abs(v) > 0.10} == set(known)
    for k, v in known.items():
        assert err[k] == pytest.approx(v, abs=0.005), k
    held = np.array([abs(v) for k, v in err.items()
                     if (k[0], k[1]) in {("A", 2), ("B", 2), ("B", 4)}])
    assert held.mean() < 0.035 and held.max() < 0.06  # the held-out curves: 2.9 %, 5.3 %
    # the multi-node curve is far below NVLS inside one node from 4 nodes up, as measured
    one = collective_bandwidths_gb_s("allreduce", 2**30, 1, 8)["busbw_gb_s"]
    four = collective_bandwidths_gb_s("allreduce", 2**30, 4, 8)["busbw_gb_s"]
    assert four < 0.75 * one
    # 2 A100 nodes, 4x HDR 200 Gb/s each, no NVLS: a classic Tree does not beat the NICs,
    # 86 GB/s measured (nccl-tests issue 175 / nccl issue 1048); the twin's ring at the wire's
    # 0.94 of the NICs (a GPU has 12.5 GB/s of them, below the NIC-share law's crossover)
    # gives 93.6 (+8.8 %, the fill a time; +8.1 % with the fill a size; -4.8 % at the former
    # fixed share 0.827)
    a100 = collective_bandwidths_gb_s("allreduce", 4 * 2**30, 2, 8, nvlink_gb_s=300.0,
                                      nvls=False, inter_node_gbps=800.0, nics_per_node=4)
    assert float(a100["busbw_gb_s"]) / 86.0 - 1 == pytest.approx(0.088, abs=0.005)
    # forced ring on 2 nodes: 392.7 GB/s measured with tuned settings (NCCL_MIN_CTAS=24,
    # 2 QPs per connection), which lift B's 8-node 8 GiB curve from 320.7 (defaults) to
    # 391.4; the twin's ring has default settings
    ring2 = collective_bandwidths_gb_s("allreduce", 8 * 2**30, 2, 8, algorithm="ring")
    assert float(ring2["busbw_gb_s"]) == pytest.approx(392.7 * 320.70 / 391.37, rel=0.05)


def test_transports_rank_as_measured():
    times = {k: float(collective_time_s("allreduce", 2**30, 8, 8, transport=k))
             for k in TRANSPORTS}
    assert times["ib_rdma"] < times["roce"] < times["roce_host"] < times["tcp"]
    with pytest.raises(ValueError):
        collective_time_s("allreduce", 2**30, 8, 8, transport="carrier_pigeon")


def test_data_parallel_group_shares_the_node_nics():
    # one rank per node: the group gets 1/8 of the node's NICs (its rail)
    one = group_collective_time_s("reduce_scatter", 16 * 2**30, nodes=8, ranks_per_node=1)
    full = group_collective_time_s("reduce_scatter", 16 * 2**30, nodes=8, ranks_per_node=8)
    # per node both move the bus bytes F(n) S through the NICs; the one-rank group has
    # 1/8 of them: t_one / t_full = 8 * F(8) / F(64)
    assert float(one) == pytest.approx(float(full) * 8 * (7 / 8) / (63 / 64), rel=0.02)


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["allreduce", "reduce_scatter", "all_gather", "all_to_all"]),
       nodes=st.integers(1, 2048), s=st.floats(1e3, 1e10), k=st.floats(1.1, 4.0))
def test_time_grows_with_bytes_and_nodes(op, nodes, s, k):
    t1 = float(collective_time_s(op, s, nodes))
    assert t1 > 0 and np.isfinite(t1)
    assert float(collective_time_s(op, s * k, nodes)) >= t1 * (1 - 1e-12)
    if nodes > 1:
        assert float(collective_time_s(op, s, nodes, inter_node_gbps=800.0)) >= t1
    # bus bandwidth never beats the NVLS asymptote, nor the NICs for what must cross them
    bb = float(collective_bandwidths_gb_s(op, s, nodes)["busbw_gb_s"])
    assert bb <= 1.072 * 450 + 1e-9
    if nodes > 1 and op != "allreduce":
        assert bb <= 400.0 + 1e-9


def test_without_nvswitch_rings_cross_pcie():
    # H100 NVL: NVLink bridges join pairs only; 8-GPU rings run over PCIe Gen5 (64 GB/s)
    nvl = collective_bandwidths_gb_s("all_gather", 2**30, 1, 8, nvlink_gb_s=300.0,
                                     nvls=False, nvswitch=False)["busbw_gb_s"]
    sw = collective_bandwidths_gb_s("all_gather", 2**30, 1, 8, nvlink_gb_s=300.0,
                                    nvls=False)["busbw_gb_s"]
    assert float(nvl) < 64.0 < float(sw)
    pair = group_collective_time_s("all_gather", 2**30, nodes=1, ranks_per_node=2,
                                   nvlink_gb_s=300.0, nvls=False, nvswitch=False)
    assert float(pair) < float(collective_time_s("all_gather", 2**30, 1, 8, nvlink_gb_s=300.0,
                                                 nvls=False, nvswitch=False))


def test_sharp_lifts_multi_node_allreduce_to_the_switch_limit():
    base = float(collective_bandwidths_gb_s("allreduce", 8 * 2**30, 64, 8)["busbw_gb_s"])
    sharp = float(collective_bandwidths_gb_s("allreduce", 8 * 2**30, 64, 8,
                                             in_network_reduction=True)["busbw_gb_s"])
    one = float(collective_bandwidths_gb_s("allreduce", 8 * 2**30, 1, 8)["busbw_gb_s"])
    assert base < 400 < sharp == pytest.approx(one, rel=0.01)
    rs = collective_time_s("reduce_scatter", 2**30, 64, 8, in_network_reduction=True)
    assert float(rs) == float(collective_time_s("reduce_scatter", 2**30, 64, 8))


def test_nic_share_law_limits_by_hand():
    # The ring's share of the NICs (twin.compute.collectives.ring_nic_share): min(wire,
    # channels / NIC per GPU).  Wire: one NDR NIC's point-to-point 0.94 (nccl-tests issue
    # 290); channels: the fitted 0.827 x 50 GB/s = 41.35 GB/s per GPU
    eff, wire = TRANSPORTS["ib_rdma"][0], coll.P2P_NIC_EFFICIENCY_IB
    assert coll.NIC_SHARE_LAW is True  # the default since HF's decision rule passed
    b_star = eff * 50.0 / wire
    assert b_star == pytest.approx(44.0, abs=0.05)
    # above the crossover the channels bind: one NDR NIC per GPU gives the fitted share
    # exactly (every fit row), two per GPU half of it per byte of line rate
    assert coll.ring_nic_share("ib_rdma", 50.0) == eff
    assert coll.ring_nic_share("ib_rdma", 100.0) == pytest.approx(eff / 2, rel=1e-12)
    assert coll.ring_nic_share("ib_rdma", 1.01 * b_star) == pytest.approx(wire / 1.01, rel=1e-9)
    # below it the wire binds: one HDR NIC per GPU, two GPUs per 400G NIC, 100 GbE per GPU
    for b in (0.99 * b_star, 25.0, 12.5, 3.125):
        assert coll.ring_nic_share("ib_rdma", b) == wire
    # other transports keep their ratio to InfiniBand on both sides of the crossover
    roce = TRANSPORTS["roce"][0]
    assert coll.ring_nic_share("roce", 25.0) == pytest.approx(wire * roce / eff, rel=1e-12)
    assert coll.ring_nic_share("roce", 50.0) == roce
    # in the model: a 16 GiB all-gather ring on 2 nodes of 8 A100 with 8x HDR runs at the
    # wire's 0.94 x 200 GB/s times the fill (1 + S_0 / S), its latency under 0.1 %
    s = 16 * 2**30
    a100 = dict(nvlink_gb_s=300.0, nvls=False, inter_node_gbps=1600.0)
    ag = float(collective_bandwidths_gb_s("all_gather", s, 2, 8, **a100)["busbw_gb_s"])
    assert ag == pytest.approx(wire * 200.0 / (1 + coll.NET_FILL_S0_BYTES / s), rel=1e-3)
    old = float(collective_bandwidths_gb_s("all_gather", s, 2, 8, nic_share_law=False,
                                           **a100)["busbw_gb_s"])
    assert old == pytest.approx(eff * 200.0 / (1 + coll.NET_FILL_S0_BYTES / s), rel=1e-3)
    # one NDR NIC per GPU: the law and the former model are the same, bit for bit
    for op in ("allreduce", "all_gather", "all_to_all"):
        for n in (2, 4, 16):
            on = collective_time_s(op, [2**26, 2**30, s], n)
            assert np.array_equal(on, collective_time_s(op, [2**26, 2**30, s], n,
                                                        nic_share_law=False))


def test_classic_tree_held_to_nccl_per_channel_ceiling():
    # NCCL's Tree ceilings (src/graph/tuning.cc perChMaxTreeBws, GB/s per channel for 1 / 2 /
    # > 2 nodes), one tree channel per NIC
    assert coll.nccl_tree_ceiling_gb_s(80, 2, 8) == pytest.approx(8 * 23.6)
    assert coll.nccl_tree_ceiling_gb_s(86, 4, 8) == pytest.approx(8 * 17.8)  # Ada: Ampere row
    assert coll.nccl_tree_ceiling_gb_s(90, 5, 4) == pytest.approx(4 * 36.0)
    assert coll.nccl_tree_ceiling_gb_s(90, 2, 8) == pytest.approx(8 * 41.4)
    assert coll.nccl_tree_ceiling_gb_s(100, 46, 8) == pytest.approx(8 * 24.0)
    assert coll.nccl_tree_ceiling_gb_s(70, 1, 8) == pytest.approx(8 * 26.5)
    # the GPU generation from the node's NVLink when not given
    assert [coll.compute_capability_of(v, sw) for v, sw in
            ((900.0, True), (450.0, True), (300.0, True), (300.0, False), (32.0, False))] == \
        [100, 90, 80, 90, 80]
    s = 16 * 2**30
    fill = 1 + coll.NET_FILL_S0_BYTES / s  # at the reference NICs (one NDR NIC per GPU)

    def fill_at(b, b_ref):  # fill-time law: S_0 = 39.1 MB x B_alg / B_alg,ref
        return 1 + coll.NET_FILL_S0_BYTES * b / b_ref / s

    # 5 x 8 H100 with 4x 400G RoCE (nccl issue 1368), Tree forced: 4 x 36.0 = 144 GB/s, under
    # the NICs' share (0.912 x 200 x 2(n-1)/n / 2 = 178); measured 150 at 1 GiB.  Reference
    # (8x 400G RoCE): the ceiling 8 x 36.0 = 288 under 0.802 x 400 x F / 2 = 313
    kw = dict(inter_node_gbps=1600.0, transport="roce", nvls=False, nics_per_node=4,
              algorithm="tree")
    tree = float(collective_bandwidths_gb_s("allreduce", s, 5, 8, **kw)["busbw_gb_s"])
    assert tree == pytest.approx(144.0 / fill_at(144.0, 288.0), rel=1e-3)
    # eight NDR NICs: on 5 nodes the ceiling, 8 x 36.0 = 288, still binds (the NICs' share
    # is 0.827 x 400 x 2(n-1)/n / 2 = 322); on 2 nodes (8 x 41.4 = 331) the NICs bind
    kw8 = dict(kw, inter_node_gbps=3200.0, nics_per_node=8, transport="ib_rdma")
    tree8 = float(collective_bandwidths_gb_s("allreduce", s, 5, 8, **kw8)["busbw_gb_s"])
    assert tree8 == pytest.approx(288.0 / fill, rel=2e-3)
    tree2 = float(collective_bandwidths_gb_s("allreduce", s, 2, 8, **kw8)["busbw_gb_s"])
    f = float(bus_factor("allreduce", 16))
    assert tree2 == pytest.approx(TRANSPORTS["ib_rdma"][0] * 400.0 * f / 2 / fill, rel=1e-3)
    # B200 (NVLink 5 -> sm100), 8x NDR, 4-46 nodes: 8 x 24.0 = 192 GB/s, measured 191-194
    b200 = float(collective_bandwidths_gb_s("allreduce", s, 16, 8, nvlink_gb_s=900.0, nvls=False,
                                            algorithm="tree")["busbw_gb_s"])
    assert b200 == pytest.approx(192.0 / fill, rel=1e-3)
    # 2 nodes of A100 (Ampere, 2 nodes: 23.6 per channel) with 4 HDR NICs: 94.4 GB/s
    a100 = float(collective_bandwidths_gb_s(
        "allreduce", s, 2, 8, nvlink_gb_s=300.0, nvls=False, inter_node_gbps=800.0,
        nics_per_node=4, algorithm="tree")["busbw_gb_s"])
    b = min(4 * 23.6, 0.94 * 100.0 * 1.875 / 2)  # the NICs bind: 88.1 GB/s
    assert a100 == pytest.approx(b / fill_at(b, 8 * 23.6), rel=1e-3)  # reference: 188.8
    # NVLSTree keeps its gain over the ring but not past the wire: 4x 400G per 8 H100
    nt = float(collective_bandwidths_gb_s("allreduce", s, 8, 8, inter_node_gbps=1600.0,
                                          algorithm="nvls_tree")["busbw_gb_s"])
    f64 = float(bus_factor("allreduce", 64))
    b, b_ref = 0.94 * 200.0 * f64 / 2, TRANSPORTS["ib_rdma"][0] * 1.121 * 400.0 * f64 / 2
    assert nt == pytest.approx(b / fill_at(b, b_ref), rel=1e-3)
    assert nt < coll.NVLS_TREE_NET_GAIN * b / fill_at(b, b_ref)


def test_fill_time_law_limits_by_hand():
    # Fill-time law, second version (docs/validation.md, "A fill time per algorithm"): S_0 in
    # proportion to the algorithm's own bandwidth over the same group's on one NDR NIC per GPU
    s0, ref = coll.NET_FILL_S0_BYTES, coll.NET_FILL_REF_NIC_GB_S_PER_GPU
    assert (s0, ref) == (39.1e6, 50.0)
    assert coll.net_fill_s0_bytes(94e9, 330.8e9, True) == pytest.approx(11.110641e6, rel=1e-6)
    assert coll.net_fill_s0_bytes(330.8e9, 330.8e9, True) == s0
    for b in (25e9, 94e9, 400e9):
        assert coll.net_fill_s0_bytes(b, 330.8e9, False) == s0
    # at the reference NICs (8x NDR, one per GPU) the law is the former model bit for bit:
    # every op, node count, algorithm and group (partial groups too)
    sizes = [2**10, 2**20, 2**26, 2**30, 16 * 2**30]
    for op in ("allreduce", "reduce_scatter", "all_gather", "all_to_all"):
        for n in (2, 4, 16):
            for r in (1, 2, 8):
                g = dict(nodes=n, ranks_per_node=r)
                assert np.array_equal(group_collective_time_s(op, sizes, fill_time_law=True, **g),
                                      group_collective_time_s(op, sizes, fill_time_law=False, **g))
    for algo, nvls in (("ring", True), ("tree", False), ("nvls_tree", True), ("collnet", True)):
        kw = dict(algorithm=algo, in_network_reduction=True, nvls=nvls)
        assert np.array_equal(collective_time_s("allreduce", sizes, 4, fill_time_law=True, **kw),
                              collective_time_s("allreduce", sizes, 4, fill_time_law=False, **kw))
    # Ring: a 2-node all-gather of 8 H100 on 8x 100G and 8x 200G IB (12.5 and 25 GB/s per GPU,
    # below b* = 44, so the ring runs at the wire's 0.94: 94 and 188 GB/s); reference 0.827 x
    # 400 = 330.8 GB/s.  t = lat + F S / B + F S_0 / B with lat = 13 + 14 x 3.4 + (3 + 4 x 0.13
    # + 14) = 78.12 us, F = 15/16, and the fill F S_0 / B = 15/16 x 39.1 MB / 330.8 GB/s =
    # 110.811 us at both (with the fill a size: 390.0 and 195.0 us)
    s, lat, f = 2.0**26, 78.12e-6, 15.0 / 16.0
    fill = f * 39.1e6 / 330.8e9
    assert fill == pytest.approx(110.8109e-6, rel=1e-6)
    for gbps, b in ((800.0, 94e9), (1600.0, 188e9)):
        kw = dict(inter_node_gbps=gbps, algorithm="ring")
        t_on = float(collective_time_s("all_gather", s, 2, fill_time_law=True, **kw))
        t_off = float(collective_time_s("all_gather", s, 2, fill_time_law=False, **kw))
        assert t_on - lat - f * s / b == pytest.approx(fill, abs=1e-12)
        assert t_off - lat - f * s / b == pytest.approx(f * 39.1e6 / b, abs=1e-12)
    # classic Tree, 4 nodes, 1 GiB all-reduce, F = 62/32; lat = 13 + 2 x 2 x 17.52 = 83.08 us.
    # H100 (NCCL ceiling 8 x 36 = 288 GB/s on > 2 nodes): on 8x 100G / 8x 200G the NICs bind
    # (0.94 x 100 x F / 2 = 91.0625, 182.125 GB/s), on the reference NDR NICs the ceiling does
    # (0.827 x 400 x F / 2 = 320.5 > 288): fill F 39.1 MB / 288 GB/s = 263.04 us at both.
    # A100 with 4x / 8x HDR (NVLink 300, ceiling 17.8 GB/s per channel, one channel per NIC):
    # the ceiling binds everywhere, 71.2 and 142.4 GB/s against 142.4 at the reference, so
    # S_0 = 19.55 and 39.1 MB: fill F 39.1 MB / 142.4 GB/s = 532.00 us at both
    s, lat, f = 2.0**30, 83.08e-6, 62.0 / 32.0
    cases = {  # name: (fill [s] by hand, [(keywords, B_alg [B/s])])
        "H100": (263.0425e-6, [(dict(inter_node_gbps=800.0), 91.0625e9),
                               (dict(inter_node_gbps=1600.0), 182.125e9)]),
        "A100": (531.9961e-6, [(dict(inter_node_gbps=800.0, nics_per_node=4), 71.2e9),
                               (dict(inter_node_gbps=1600.0, nics_per_node=8), 142.4e9)]),
    }
    for gpu, (fill, runs) in cases.items():
        nvl = 450.0 if gpu == "H100" else 300.0
        exact = f * 39.1e6 / (288e9 if gpu == "H100" else 142.4e9)
        assert exact == pytest.approx(fill, rel=1e-6)
        for kw, b in runs:
            kw = dict(kw, algorithm="tree", nvls=False, nvlink_gb_s=nvl)
            t = float(collective_time_s("allreduce", s, 4, fill_time_law=True, **kw))
            assert t - lat - f * s / b == pytest.approx(exact, abs=1e-12)
    # the pairwise all-to-all keeps its own fill (30.4 MB) at every bandwidth
    a2a = dict(inter_node_gbps=800.0)
    assert np.array_equal(collective_time_s("all_to_all", sizes, 4, fill_time_law=True, **a2a),
                          collective_time_s("all_to_all", sizes, 4, fill_time_law=False, **a2a))


def test_fill_time_reference_is_the_fit_node(monkeypatch):
    # HR (docs/validation.md, "the last misses"): the fill-time law's reference is the fit rows'
    # node, one NDR NIC per GPU AND NVLink 4, so a node's own NVLink bound does not lengthen its
    # network fill.  A 2-node all-gather of 8 A100 (NVLink 3, 300 GB/s) on 8x HDR: the ring runs
    # at the wire's 0.94 x 200 = 188 GB/s; lat = 78.12 us as on H100 (no NVLink term); the fill
    # F S_0 / B = 15/16 x 39.1 MB / 330.8 GB/s = 110.811 us, the H100 ring's (S_0 = 39.1 x 188 /
    # 330.8 = 22.22 MB).  With the group's own NVLink in the reference (None, HM2's), the A100
    # ring at one NDR NIC per GPU is NVLink-bound at 0.8 x 300 x 8/7 = 274.29 GB/s: 133.64 us
    assert coll.FILL_REF_NVLINK_GB_S == 450.0
    s, lat, f, b = 2.0**26, 78.12e-6, 15.0 / 16.0, 188e9
    kw = dict(inter_node_gbps=1600.0, algorithm="ring", nvlink_gb_s=300.0, nvls=False)
    t = float(collective_time_s("all_gather", s, 2, **kw))
    assert t - lat - f * s / b == pytest.approx(f * 39.1e6 / 330.8e9, abs=1e-12)
    assert f * 39.1e6 / 330.8e9 == pytest.approx(110.8109e-6, rel=1e-6)
    monkeypatch.setattr(coll, "FILL_REF_NVLINK_GB_S", None)
    t_own = float(collective_time_s("all_gather", s, 2, **kw))
    assert t_own - lat - f * s / b == pytest.approx(f * 39.1e6 / (0.8 * 300e9 * 8 / 7), abs=1e-12)
    assert t_own - lat - f * s / b == pytest.approx(133.6426e-6, rel=1e-6)
    # NVLS too: a B200 pair (NVLink 5, 900 GB/s) on 8x NDR, 2-node NVLSTree, F = 1.875: B_alg =
    # min(1.072 x 900, min(330.8 x 1.121, 0.94 x 400) x F) = 370.8268 x 1.875 = 695.30 GB/s, at the
    # fit node NVLink-bound at 1.072 x 450 = 482.4 GB/s; lat = 13 + 2 x 17.52 = 48.04 us: the fill
    # F 39.1 MB / 482.4 GB/s = 151.97 us (at its own NVLink, 105.44 us)
    s, f = 2.0**30, 1.875
    b_tree = 330.8e9 * 1.121 * f
    kw = dict(nvlink_gb_s=900.0, algorithm="nvls_tree")
    monkeypatch.setattr(coll, "FILL_REF_NVLINK_GB_S", 450.0)
    t = float(collective_time_s("allreduce", s, 2, **kw))
    assert t - 48.04e-6 - f * s / b_tree == pytest.approx(f * 39.1e6 / 482.4e9, abs=1e-11)
    assert f * 39.1e6 / 482.4e9 == pytest.approx(151.97e-6, rel=1e-4)
    monkeypatch.setattr(coll, "FILL_REF_NVLINK_GB_S", None)
    t = float(collective_time_s("allreduce", s, 2, **kw))
    assert t - 48.04e-6 - f * s / b_tree == pytest.approx(f * 39.1e6 / b_tree, abs=1e-11)
    # on an NVLink-4 node the reference is the node itself: bit for bit, every op, algorithm,
    # group and NIC rate
    sizes = [2**10, 2**20, 2**26, 2**30, 16 * 2**30]
    cases = [(op, n, r, gbps) for op in ("allreduce", "reduce_scatter", "all_gather")
             for n in (2, 4, 16) for r in (1, 8) for gbps in (800.0, 3200.0)]
    own = [group_collective_time_s(op, sizes, nodes=n, ranks_per_node=r, inter_node_gbps=gbps)
           for op, n, r, gbps in cases]
    monkeypatch.setattr(coll, "FILL_REF_NVLINK_GB_S", 450.0)
    for (op, n, r, gbps), t_own in zip(cases, own, strict=True):
        assert np.array_equal(group_collective_time_s(op, sizes, nodes=n, ranks_per_node=r,
                                                      inter_node_gbps=gbps), t_own)


@settings(max_examples=300, deadline=None)
@given(op=st.sampled_from(["allreduce", "reduce_scatter", "all_gather", "all_to_all"]),
       algo=st.sampled_from([None, "ring", "tree", "nvls_tree", "collnet"]),
       nodes=st.integers(2, 64), r=st.sampled_from([1, 2, 4, 8]),
       s=st.floats(1.0, 2.0**35), lo=st.integers(0, 6), steps=st.integers(1, 6),
       gpu=st.sampled_from([(450.0, True), (450.0, False), (300.0, False), (900.0, True)]),
       transport=st.sampled_from(["ib_rdma", "roce", "tcp"]),
       half_nics=st.booleans(), frac=st.sampled_from([None, 0.8, 1.0]))
def test_fill_time_law_slower_nics_never_faster(op, algo, nodes, r, s, lo, steps, gpu,
                                                transport, half_nics, frac):
    # rule (e) of the fill-time law: nodes, group and bytes held, a collective never gets
    # faster when its NICs get slower (line rates 6.25-800 GB/s per GPU's share, doubling);
    # includes NCCL's tuner choice between Ring and NVLSTree (algo None)
    nvl, nvls = gpu
    per_gpu = [6.25 * 2.0**k for k in range(8)]
    slow, fast = per_gpu[lo], per_gpu[min(lo + steps, 7)]
    kw = dict(nodes=nodes, ranks_per_node=r, nvlink_gb_s=nvl, nvls=nvls, transport=transport,
              algorithm=algo, in_network_reduction=True, nvls_tree_tuner_fraction=frac,
              nics_per_node=4 if half_nics else 8, fill_time_law=True)
    try:
        t_slow = float(group_collective_time_s(op, s, inter_node_gbps=64.0 * slow, **kw))
    except ValueError:
        return  # the algorithm does not exist for this group
    t_fast = float(group_collective_time_s(op, s, inter_node_gbps=64.0 * fast, **kw))
    assert t_slow >= t_fast * (1.0 - 1e-12)

"""Which algorithm and protocol the AWS OFI NCCL tuner plugin picks for an all-reduce on p5.

    .venv/bin/python assets/reference/nccl_p5_tuner_regions.py

The p5 rows of ``nccl_multinode_h100_p5_efa.csv`` were measured with
``NCCL_TUNER_PLUGIN=libnccl-ofi-tuner.so`` (aws-ofi-nccl v1.16.3), which replaces NCCL's own
tuner by regions in the plane (message bytes, ranks): the first region that contains the
point (its edge included) gives the algorithm and protocol.  The vertices below are those of
``region_init_internal_p5_p5e`` for ``ncclFuncAllReduce`` with 8 ranks per node, transcribed
from github.com/aws/aws-ofi-nccl, tag v1.16.3, ``src/tuner/nccl_ofi_regions.cpp``
(``extend_region`` extends the line through two vertices to the edge of the
``TUNER_MAX_SIZE`` x ``TUNER_MAX_RANKS`` box, ``include/tuner/nccl_ofi_tuner_region.h``).
The CSV's ``tuner_algo`` / ``tuner_proto`` columns are this function's answer; the test
``tests/compute/test_multinode_collectives.py::test_p5_efa_cluster_2_to_32_nodes`` checks
them against it.  Reference data only: the twin does not model this tuner.
"""

from __future__ import annotations

import math

TUNER_MAX_SIZE = 100.0 * 1024**3
TUNER_MAX_RANKS = 1024.0 * 1024


def _extend(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """The far point on the line a-b at the box edge (aws-ofi-nccl ``extend_region``)."""
    zx, zy = TUNER_MAX_SIZE, TUNER_MAX_RANKS
    if a[0] == b[0]:
        return (a[0], zy)
    if a[1] == b[1]:
        return (zx, a[1])
    m = (a[1] - b[1]) / (a[0] - b[0])
    c = b[1] - m * b[0]
    y = m * zx + c
    return (zx, y) if y < zy else ((zy - c) / m, zy)


_TREE_LL128 = _extend((402653184, 2048), (402653184, 4096))
_NVLSTREE_1 = _extend((8053063680, 160), (9663676416, 192))
_RING_SIMPLE = _NVLSTREE_1
#: (algorithm, protocol, vertices (bytes, ranks)) in the plugin's order of precedence
P5_ALLREDUCE_REGIONS: tuple[tuple[str, str, tuple[tuple[float, float], ...]], ...] = (
    ("tree", "LL128", ((0, 16), (31457280, 16), (37748736, 32), (117440512, 64),
                       (301989888, 128), (301989888, 256), (335544320, 512),
                       (536870912, 1024), (402653184, 2048), (402653184, 4096),
                       _TREE_LL128, (0, _TREE_LL128[1]))),
    ("nvls_tree", "Simple", ((31457281, 16), (TUNER_MAX_SIZE, 16), (31457281, 16))),
    ("ring", "LL128", ((31457280, 17), (1073741824, 17), (2147483648, 64),
                       (2147483648, 128), (1342177280, 160), (2147483648, 256),
                       (1074790400, 256), (444596224, 160), (301989888, 128),
                       (117440512, 64), (37748736, 32))),
    ("nvls_tree", "Simple", ((2147483648, 128), (6442450944, 128), (8053063680, 160),
                             (9663676416, 192), _NVLSTREE_1, _TREE_LL128,
                             (402653184, 4096), (402653184, 2048), (536870912, 1024),
                             (335544320, 512), (301989888, 256), (310378496, 160),
                             (444596224, 160), (1074790400, 256), (2684354560, 256),
                             (2147483648, 224), (1342177280, 160))),
    ("ring", "Simple", ((1073741824, 17), (_RING_SIMPLE[0], 17), _RING_SIMPLE,
                        (9663676416, 192), (8053063680, 160), (2684354560, 64),
                        (1610612736, 32))),
)


def _on_segment(p, a, b, eps: float = 1e-10) -> bool:
    dx, dy = b[0] - a[0], b[1] - a[1]
    length2 = dx * dx + dy * dy
    if length2 == 0.0:
        return math.hypot(p[0] - a[0], p[1] - a[1]) < eps
    t = max(0.0, min(1.0, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / length2))
    return math.hypot(p[0] - a[0] - t * dx, p[1] - a[1] - t * dy) < eps


def _inside(p, vertices) -> bool:
    n = len(vertices)
    if any(_on_segment(p, vertices[i], vertices[(i + 1) % n]) for i in range(n)):
        return True
    inside = False
    for i in range(n):
        (x1, y1), (x2, y2) = vertices[i], vertices[(i + 1) % n]
        if (y1 > p[1]) != (y2 > p[1]) and p[0] < x1 + (p[1] - y1) * (x2 - x1) / (y2 - y1):
            inside = not inside
    return inside


def p5_allreduce_choice(message_bytes: float, n_ranks: int) -> tuple[str, str] | None:
    """(algorithm, protocol) the plugin picks on p5 with 8 ranks per node; None: NCCL's tuner."""
    p = (float(message_bytes), float(n_ranks))
    for algo, proto, vertices in P5_ALLREDUCE_REGIONS:
        if _inside(p, vertices):
            return algo, proto
    return None


if __name__ == "__main__":
    for nodes in (2, 4, 8, 16, 32):
        print(nodes, [(mib, p5_allreduce_choice(mib * 2**20, 8 * nodes))
                      for mib in (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)])

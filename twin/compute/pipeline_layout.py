"""Pipeline layout: which embedding, decoder layers, MTP modules and loss each pipeline rank and
virtual chunk holds, as Megatron-core's ``--pipeline-model-parallel-layout`` writes it.

Grammar (Megatron-core developer guide, "Custom Pipeline Model Parallel Layout",
docs.nvidia.com/megatron-core/developer-guide/0.15.0/api-guide/pipeline_parallel.html, and its
parser ``PipelineParallelLayerLayout.parse_str_to_list`` in
``megatron/core/transformer/pipeline_parallel_layer_layout.py``): virtual stages separated by
``|``; symbols ``E`` (embedding), ``t`` (transformer decoder layer), ``m`` (multi-token
prediction layer), ``L`` (output layer and loss); ``X*n`` repeats one symbol (``|`` too),
``(...)*n`` repeats a group; commas are cosmetic; an empty stage is legal (``E||t|L``).
Virtual stage ``k`` runs on pipeline rank ``k mod pp`` as its chunk ``k // pp`` (Megatron's
"1D layout to 2D layout": ``layout[v pp + r]`` is rank ``r``'s chunk ``v``), so layer order is
chunk-major: chunk 0 of ranks 0..pp-1, then chunk 1, ...

The parsed layout is a :class:`PipelineLayout`: a read-only float array ``counts`` of shape
``(pp, vpp, 4)``, per rank and chunk the number of embeddings, decoder layers, MTP layers and
losses (columns :data:`EMBED`, :data:`DECODER`, :data:`MTP`, :data:`LOSS`).  Parsed layouts are
whole numbers; :func:`even_pipeline_layout` gives the split the step and memory models use
without a layout (``ceil(layers / pp)`` a rank, ``/ vpp`` a chunk, possibly fractional) in the
same form, so one code path consumes both.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

#: columns of :attr:`PipelineLayout.counts`
EMBED, DECODER, MTP, LOSS = 0, 1, 2, 3
SYMBOLS = {"E": EMBED, "t": DECODER, "m": MTP, "L": LOSS}
#: longest expansion accepted [symbols]: a guard against ``t*99999999``, far above any model
MAX_EXPANDED = 1_000_000


@dataclass(frozen=True)
class PipelineLayout:
    """Per pipeline rank and virtual chunk, what it holds (module doc).

    counts: float array ``(pp, vpp, 4)``, read-only: embeddings, decoder layers, MTP layers,
    losses of rank ``r``'s chunk ``v`` (virtual stage ``v pp + r``).  text: the layout string
    (None for :func:`even_pipeline_layout`)."""

    counts: np.ndarray
    text: str | None = None
    #: the even split's decoder layers a rank (:func:`even_pipeline_layout`), None for a parsed
    #: layout: its chunks hold ``lps / vpp`` each, which summed over ``vpp`` chunks need not
    #: give ``lps`` back in floating point, so the rank totals and offsets are taken from it
    even_layers_per_rank: int | None = None

    @property
    def pp(self) -> int:
        return int(self.counts.shape[0])

    @property
    def vpp(self) -> int:
        return int(self.counts.shape[1])

    def stages(self) -> np.ndarray:
        """The counts by virtual stage in layer order, shape ``(pp vpp, 4)``."""
        return self.counts.transpose(1, 0, 2).reshape(-1, 4)

    def rank_counts(self) -> np.ndarray:
        """Each rank's embeddings, decoder layers, MTP layers and losses over its chunks [-],
        shape ``(pp, 4)`` (the even split: exactly ``lps`` decoder layers a rank)."""
        out = self.counts.sum(axis=1)
        if self.even_layers_per_rank is not None:
            out[:, DECODER] = float(self.even_layers_per_rank)
        return out

    def decoder_offsets(self) -> np.ndarray:
        """Decoder layers before each rank's chunk in layer order [-], shape ``(pp, vpp)``
        (Megatron-core ``get_layer_offset``; the even split: ``(v pp + r) lps / vpp``)."""
        if self.even_layers_per_rank is not None:
            lpc = self.even_layers_per_rank / self.vpp
            return (np.arange(self.vpp)[None, :] * self.pp + np.arange(self.pp)[:, None]) * lpc
        t = self.stages()[:, DECODER]
        off = np.concatenate([[0.0], np.cumsum(t)[:-1]])
        return off.reshape(self.vpp, self.pp).T

    def dense_layers(self, moe_dense_layers: int) -> np.ndarray:
        """Dense (first ``moe_dense_layers`` in layer order) decoder layers of each rank's
        chunk [-], shape ``(pp, vpp)``."""
        return np.clip(moe_dense_layers - self.decoder_offsets(), 0.0, self.counts[:, :, DECODER])


def _err(text: str, what: str) -> ValueError:
    return ValueError(f"pipeline_layout {text!r}: {what}")


def _expand(text: str) -> str:
    """The layout with commas removed and every ``X*n`` and ``(...)*n`` unrolled (nesting
    allowed); ValueError for unbalanced parentheses, a group without ``*n``, a repeat count
    that is not a whole number >= 1, a ``*`` with nothing to repeat and unknown symbols."""
    s = text.replace(",", "")
    pos = 0

    def count() -> int:
        nonlocal pos
        if pos >= len(s) or s[pos] != "*":
            raise _err(text, f"a parenthesised group must be followed by *n (at {pos})")
        pos += 1
        start = pos
        while pos < len(s) and s[pos].isdigit():
            pos += 1
        digits = s[start:pos]
        if not digits:
            raise _err(text, f"repeat count after '*' must be a whole number >= 1 (at {start})")
        n = int(digits)
        if n < 1:
            raise _err(text, f"repeat count must be >= 1, got {digits} (at {start})")
        return n

    def seq(depth: int) -> str:
        nonlocal pos
        out: list[str] = []
        size = 0
        while pos < len(s):
            c = s[pos]
            if c == ")":
                if depth == 0:
                    raise _err(text, f"unbalanced parentheses: ')' without '(' (at {pos})")
                return "".join(out)
            if c == "(":
                at = pos
                pos += 1
                inner = seq(depth + 1)
                if pos >= len(s):
                    raise _err(text, f"unbalanced parentheses: '(' at {at} is never closed")
                pos += 1  # the ')'
                if not inner:
                    raise _err(text, f"empty parentheses (at {at})")
                n = count()
                piece = inner
                if size + n * len(piece) > MAX_EXPANDED:
                    raise _err(text, f"expands to more than {MAX_EXPANDED} symbols")
                out.append(piece * n)
                size += n * len(piece)
                continue
            if c == "*":
                raise _err(text, f"'*' with nothing to repeat (at {pos})")
            if c not in SYMBOLS and c != "|":
                raise _err(text, f"unknown symbol {c!r} (at {pos}); known: E (embedding), "
                                 "t (decoder layer), m (MTP layer), L (loss), | (stage "
                                 "separator), ( ) *n (repeat), commas")
            pos += 1
            n = count() if pos < len(s) and s[pos] == "*" else 1
            if size + n > MAX_EXPANDED:
                raise _err(text, f"expands to more than {MAX_EXPANDED} symbols")
            out.append(c * n)
            size += n
        return "".join(out)

    flat = seq(0)
    if pos != len(s):  # cannot happen: seq(0) stops only at the end or raises
        raise _err(text, f"unexpected {s[pos]!r} (at {pos})")
    return flat


def parse_pipeline_layout(text: str, *, pp: int, vpp: int, layers: int,
                          mtp_depth: int = 0) -> PipelineLayout:
    """Parse and check a Megatron-core pipeline layout string (module doc) [-].

    Checks, each a ``ValueError`` naming ``pipeline_layout``: the grammar (unknown symbols,
    unbalanced parentheses, bad repeat counts); ``pp vpp`` virtual stages (Megatron-core
    takes ``vpp`` from the stage count, ``len(layout) % pp == 0``; here ``vpp`` is an input
    too, so the count must equal ``pp vpp``); and ``PipelineParallelLayerLayout.
    validate_layer_layout`` of Megatron-core: the embedding exactly once and the first layer
    in layer order, here also in virtual stage 0 (the first rank's first chunk, where
    Megatron-core's ``pre_process`` builds it); the loss exactly once and the last layer, in
    the last virtual stage (rank ``pp-1``, chunk ``vpp-1``); ``layers`` decoder layers
    (``t``); ``mtp_depth`` MTP layers (``m``), all after the last decoder layer in layer
    order ("decoder layers must be placed before MTP layers") and each in its rank's last
    chunk ("MTP should be always in the last virtual pipeline stage of that rank").
    """
    if not isinstance(text, str):
        raise ValueError(f"pipeline_layout must be a string, got {text!r}")
    for name, v in (("pp", pp), ("vpp", vpp), ("layers", layers)):
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise ValueError(f"pipeline_layout needs {name} a positive integer, got {v!r}")
    if isinstance(mtp_depth, bool) or int(mtp_depth) != mtp_depth or mtp_depth < 0:
        raise ValueError(f"pipeline_layout needs mtp_depth a whole number >= 0, got "
                         f"{mtp_depth!r}")
    flat = _expand(text)
    stages = flat.split("|")
    n = int(pp) * int(vpp)
    if len(stages) != n:
        raise _err(text, f"has {len(stages)} virtual stages, pp*vpp = {pp}*{vpp} = {n} needed")
    counts = np.zeros((n, 4))
    for k, st in enumerate(stages):
        for c, col in SYMBOLS.items():
            counts[k, col] = st.count(c)
    seq = flat.replace("|", "")
    n_e, n_t, n_m, n_l = (int(x) for x in counts.sum(axis=0))
    if n_e != 1:
        raise _err(text, f"needs the embedding E exactly once, got {n_e}")
    if not stages[0].startswith("E"):
        raise _err(text, "the embedding E must be the first layer, in virtual stage 0 "
                         "(rank 0, chunk 0)")
    if n_l != 1:
        raise _err(text, f"needs the loss L exactly once, got {n_l}")
    if not stages[-1].endswith("L"):
        raise _err(text, f"the loss L must be the last layer, in the last virtual stage "
                         f"(rank {pp - 1}, chunk {vpp - 1})")
    if n_t != layers:
        raise _err(text, f"has {n_t} decoder layers t, layers = {layers}")
    if n_m != mtp_depth:
        raise _err(text, f"has {n_m} MTP layers m, mtp_depth = {mtp_depth}")
    if n_m and "t" in seq[seq.index("m"):]:
        raise _err(text, "decoder layers t must all come before the MTP layers m")
    grid = counts.reshape(int(vpp), int(pp), 4).transpose(1, 0, 2).copy()
    if n_m and grid[:, :-1, MTP].any():
        raise _err(text, "an MTP layer m must sit in its rank's last chunk (virtual stage "
                         f"(vpp-1) pp + r, vpp = {vpp})")
    grid.setflags(write=False)
    return PipelineLayout(counts=grid, text=text)


@functools.lru_cache(maxsize=256)  # read-only and rebuilt on every step estimate otherwise
def even_pipeline_layout(*, pp: int, vpp: int, layers: int, mtp_depth: int = 0
                         ) -> PipelineLayout:
    """The split of the step and memory models without a layout, as a :class:`PipelineLayout`:
    ``ceil(layers / pp)`` decoder layers a rank (``pp ceil(layers / pp)`` in all, more than
    ``layers`` when ``pp`` does not divide it, as those models count), ``/ vpp`` a chunk
    (fractional when ``vpp`` does not divide it: the memory model's ``lpc``), the embedding on
    rank 0 chunk 0, the loss and the ``mtp_depth`` MTP layers on rank ``pp-1`` chunk ``vpp-1``."""
    lps = math.ceil(layers / pp)
    grid = np.zeros((int(pp), int(vpp), 4))
    grid[:, :, DECODER] = lps / vpp
    grid[0, 0, EMBED] = 1.0
    grid[-1, -1, LOSS] = 1.0
    grid[-1, -1, MTP] = float(mtp_depth)
    grid.setflags(write=False)
    return PipelineLayout(counts=grid, even_layers_per_rank=lps)


def layout_text(layout: PipelineLayout) -> str:
    """A layout string for whole-number ``counts`` (``E``, ``t*n``, ``m*n``, ``L`` in that
    order in each stage, stages in layer order), which :func:`parse_pipeline_layout` reads
    back to the same counts."""
    c = layout.counts
    if not np.array_equal(c, np.round(c)):
        raise ValueError("pipeline_layout: fractional counts have no layout string")
    out = []
    for row in layout.stages().astype(int):
        e, t, m, loss = (int(x) for x in row)
        parts = ["E"] * e
        parts += [f"t*{t}"] if t > 1 else ["t"] * t
        parts += [f"m*{m}"] if m > 1 else ["m"] * m
        parts += ["L"] * loss
        out.append(",".join(parts))
    return "|".join(out)

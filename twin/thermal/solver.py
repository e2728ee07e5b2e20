"""Steady airflow and temperature of the hall, and the recirculation matrix D.

Model (a raised-floor plenum under the room, on the plan grid of
:mod:`twin.thermal.geometry`; the room is one depth-averaged layer, or ``n_layers``
layers in 3-D):

1. **Plenum (raised floor).** Darcy flow: the flux between neighbouring plenum cells is
   k * (p_i - p_j); a cell with open area (tile or floor leakage) of conductance g
   discharges g * p into the room above (room pressure is the reference, 0). Cooling
   units inject their airflow at their cells, enclosed / contained rack intakes draw
   theirs. Solving (k * L + diag(g)) p = s gives tile flows that decay with distance from
   the units over ``plenum_spread_m`` = cell * sqrt(k / g_mean): a tile far from any unit
   blows less air (screened-Poisson plenum model; a 2-D, linearised cousin of the
   plenum flow-network models of Karki & Patankar, Build. Environ. 41 (2006) 734). The
   default 30 m reflects a well-built floor: 25 %-open tiles drop 10-15 Pa at design flow,
   several times the plenum's own lateral loss across a hall, so tile flows vary by tens
   of percent over 20-30 m rather than vanish (Karki & Patankar report +-15-30 %).
2. **Room.** Potential flow: the velocity is the gradient of a potential phi solving the
   discrete Laplace equation L phi = s with tile flows, rack exhausts (sources) and rack
   intakes, cooling-unit returns (sinks); walls and solid cells are no-flux faces. The
   face fluxes then conserve mass in every cell to solver precision. Potential flow has
   no jets or buoyancy; it is the classic reduced model for rack-level recirculation
   studies (e.g. Toulouse, Doljac, Carey & Bash, ASME IMECE 2009 "Exploration of a
   potential-flow-based compact model of air-flow transport in data centers").
3. **Heat.** Steady advection-diffusion of temperature in both layers, finite volumes,
   conservative and linear in T (QUICK face values, Leonard 1979, in plan view;
   Patankar's power-law scheme with layers; either on request). Racks move their airflow from intake to exhaust and
   add Q / (rho cp V) to it; cooling units remove the room air they draw and return it
   to the plenum at their supply temperature. The effective horizontal diffusivity
   ``eddy_diffusivity_m2_s`` (default 0.1 m2/s) stands for turbulent mixing plus the
   dispersion by vertical shear that a depth-averaged model must carry: a mixing-length
   estimate l_m * u' with l_m ~ 0.4 m (rack-face scale) and u' ~ 0.25 m/s (25 %
   turbulence at 1 m/s exhaust) gives 0.1 m2/s; Chen & Xu's zero-equation indoor model
   (Energy Build. 28 (1998) 137), nu_t = 0.03874 V l, gives 0.06 m2/s at V = 1 m/s,
   l = 1.5 m. It is the least certain parameter of the model: 0.06 or 0.2 m2/s
   move the hottest inlet by about +-1 C (see bench/RESULTS.md).

In 3-D (``n_layers`` > 1) the same equations hold on the layered grid with face weights
area / distance (h dz / h sideways, h^2 / dz vertically); racks are solid up to
``rack_height_m`` and air passes over them to the returns in the top layer. Potential
flow has no buoyancy: hot air reaches the top layer because the returns draw it there.
Mixing there is partly resolved, so the same diffusivity is on the generous side.

Because the heat problem is linear in the rack heat loads, the rack inlet temperatures
are exactly T_in = S @ T_supply + D @ Q_rack, and D is derived once per layout from one
sparse LU factorisation and R transposed solves (:func:`inlet_model`; SuperLU with little
supernode relaxation, :data:`SUPERNODE_RELAX`).
"""

from __future__ import annotations

import hashlib
import pickle
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.sparse.csgraph import connected_components

from .containment import (
    contained_aisle_zone_of_cell,
    enclosure_balance_m3_s,
    enclosure_zone_index,
    zone_room_share_fraction,
    zone_supply_by_rack_m3_s,
)
from .geometry import HallGeometry, HallGrid, _intake_enclosed, rasterise
from .jets import hall_wall_jets
from .properties import AIR_VOLUMETRIC_HEAT_J_M3_K

if TYPE_CHECKING:
    import xarray as xr


class NoSteadyStateError(ValueError):
    """No cooling unit runs in the hall: heat accumulates and no steady state exists
    (use :func:`twin.thermal.fault_transient` with ``after=None``)."""


PLENUM_HEIGHT_M = 0.6
"""Raised-floor plenum depth [m] used for the plenum's diffusive conductance."""


def power_law_weight(peclet):
    """Patankar's power-law function A(|P|) = max(0, (1 - 0.1 |P|)^5) [-]."""
    return np.maximum(0.0, 1.0 - 0.1 * np.abs(peclet)) ** 5


def _grid_faces(nx: int, ny: int, mask: np.ndarray, nz: int = 1):
    """Pairs (i, j) of flat indices of adjacent cells, both in mask.

    Cells are indexed iz * ny * nx + iy * nx + ix. Returns (i, j, axis) with j the +x
    (axis 0), +y (axis 1) or +z (axis 2) neighbour of i; x faces first, then y, then z.
    """
    idx = np.arange(nx * ny * nz).reshape(nz, ny, nx)
    m = np.asarray(mask, bool).reshape(nz, ny, nx)
    hx = m[:, :, :-1] & m[:, :, 1:]
    hy = m[:, :-1, :] & m[:, 1:, :]
    hz = m[:-1] & m[1:]
    i = np.concatenate([idx[:, :, :-1][hx], idx[:, :-1, :][hy], idx[:-1][hz]])
    j = np.concatenate([idx[:, :, 1:][hx], idx[:, 1:, :][hy], idx[1:][hz]])
    axis = np.concatenate([np.zeros(hx.sum(), np.int8), np.ones(hy.sum(), np.int8),
                           np.full(hz.sum(), 2, np.int8)])
    return i, j, axis


def _laplacian(n: int, i: np.ndarray, j: np.ndarray, w: np.ndarray | float = 1.0) -> sp.csr_matrix:
    w = np.broadcast_to(np.asarray(w, float), i.shape)
    rows = np.concatenate([i, j, i, j])
    cols = np.concatenate([i, j, j, i])
    vals = np.concatenate([w, w, -w, -w])
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, n))


#: LU factors of operators this process has factorised, by a digest of the matrix and its
#: ordering (:func:`factorised`): the potential-flow Laplacian and the plenum operators of a
#: hall are the same at every airflow knot and Picard pass, so each is factorised once per
#: process. At most this many, and at most ``LU_MEMO_ENTRIES`` stored L + U entries.
LU_MEMO_SIZE = 16
LU_MEMO_ENTRIES = 8_000_000
_LU_MEMO: OrderedDict[bytes, spla.SuperLU] = OrderedDict()


def _canonical_csc(a) -> sp.csc_matrix:
    """``a`` as a CSC matrix in canonical form (sorted indices, no duplicates), as SuperLU
    receives it from ``splu``."""
    a = a.tocsc() if sp.issparse(a) else sp.csc_matrix(a)
    a.sum_duplicates()
    return a


#: SuperLU's supernode relaxation (``splu(relax=...)``): the largest subtree of the
#: elimination tree merged into one supernode with explicit zeros. SuperLU's default (about
#: 10) suits large 3-D problems with many dense blocks; the hall's operators are layered
#: grids of a few thousand cells whose supernodes are small, and with little relaxation the
#: same fill (the ordering is unchanged) factorises about 3x and solves 140 transposed
#: right-hand sides about 2x faster (Blue Vela's 5,488-cell room block: 0.041 -> 0.015 s and
#: 0.10 -> 0.044 s; the seven buoyant knot derivations of a nine-month run 1.71 -> 0.84 s
#: CPU; bench/RESULTS.md, issue 19). The solutions differ from the default's by round-off
#: only (another summation order in the dense kernels; D within 2e-12 of its largest entry).
SUPERNODE_RELAX = 2


def factorised(a, permc_spec: str | None = None, *, memo: bool = True) -> spla.SuperLU:
    """SuperLU factor of the sparse matrix ``a`` (``scipy.sparse.linalg.splu`` with
    :data:`SUPERNODE_RELAX`), shared by every identical matrix in the process.

    ``factorised(a, spec).solve(b)`` is bit for bit a fresh ``splu(a, permc_spec=spec,
    relax=SUPERNODE_RELAX).solve(b)`` (tested), but a matrix met again (same shape, pattern,
    values and ordering: a digest of all of them) reuses its factor: one factorisation and
    many cheap solves instead of one factorisation per solve. ``memo=False``: factorise
    without keeping or looking up (matrices met once).
    """
    a = _canonical_csc(a)
    if not memo:
        return spla.splu(a, permc_spec=permc_spec, relax=SUPERNODE_RELAX)
    key = _digest(repr((a.shape, a.dtype.str, permc_spec, SUPERNODE_RELAX)).encode(), a.indptr, a.indices, a.data)
    lu = _kept(_LU_MEMO, key, lambda: spla.splu(a, permc_spec=permc_spec, relax=SUPERNODE_RELAX), LU_MEMO_SIZE)
    while len(_LU_MEMO) > 1 and sum(f.L.nnz + f.U.nnz for f in _LU_MEMO.values()) > LU_MEMO_ENTRIES:
        _LU_MEMO.popitem(last=False)
    return lu


def _digest(*parts) -> bytes:
    """blake2b digest of byte strings and arrays (their raw bytes), each with its length."""
    h = hashlib.blake2b(digest_size=32)
    for part in parts:
        raw = part if isinstance(part, bytes) else np.ascontiguousarray(part).data.cast("B")
        h.update(len(raw).to_bytes(8, "little"))
        h.update(raw)
    return h.digest()


def _kept(memo: OrderedDict, key: bytes, make, size: int):
    """``memo[key]``, made by ``make()`` on a miss; beyond ``size`` entries the oldest go."""
    hit = memo.get(key)
    if hit is not None:
        memo.move_to_end(key)
        return hit
    hit = memo[key] = make()
    while len(memo) > size:
        memo.popitem(last=False)
    return hit


_GRID_MEMO: OrderedDict[bytes, HallGrid] = OrderedDict()


def _geometry_digest(g: HallGeometry) -> bytes:
    """Digest of the pickled geometry (every field and array): the key of the per-process
    layout memos, computed once per :func:`build_problem`."""
    return _digest(pickle.dumps(g, protocol=5))


def _rasterised(g: HallGeometry, key: bytes | None = None) -> HallGrid:
    """:func:`rasterise` of ``g``, kept per process by ``key``, the geometry's digest
    (:func:`_geometry_digest`, computed here when not given): the airflow knots and Picard
    passes of a hall share one layout (the last 16 geometries are kept)."""
    key = _geometry_digest(g) if key is None else key
    return _kept(_GRID_MEMO, key, lambda: rasterise(g), 16)


_ROOM_MEMO: OrderedDict[bytes, tuple] = OrderedDict()


def _room_potential_operator(geometry_key: bytes, n_room: int, ri: np.ndarray, rj: np.ndarray, w_face: np.ndarray):
    """(regions, region of each room cell, LU factor of the room's potential-flow operator)
    for the room faces (ri, rj) of weights ``w_face`` [m]: the Laplacian with one cell per
    connected region (its first) pinned to potential 0. It depends on the layout alone, so
    it is kept per process by a digest of the geometry (``geometry_key``, from
    :func:`_geometry_digest`) and the faces (the last 16): every airflow knot and buoyant
    pass of a hall reuses it (bit for bit the direct solve)."""
    def make():
        n_comp, labels = connected_components(
            sp.csr_matrix((np.ones(len(ri)), (ri, rj)), shape=(n_room, n_room)), directed=False)
        pins = np.array([np.flatnonzero(labels == comp)[0] for comp in range(n_comp)], np.int64)
        lap = _with_unit_rows(_laplacian(n_room, ri, rj, w_face), pins)
        return n_comp, labels, factorised(lap, memo=False)
    return _kept(_ROOM_MEMO, _digest(geometry_key, ri, rj, w_face), make, 16)


def _with_unit_rows(a: sp.csr_matrix, rows: np.ndarray) -> sp.csc_matrix:
    """``a`` (square CSR) with each row in ``rows`` replaced by the unit row e_i (a_ii = 1,
    the rest 0), in canonical CSC form. The other entries keep their values exactly (no
    summation happens), as when the rows are overwritten in LIL format."""
    a = a.tocsr()
    a.sum_duplicates()
    n = a.shape[0]
    pins = np.unique(np.asarray(rows, np.int64))
    row_of = np.repeat(np.arange(n), np.diff(a.indptr))
    keep = ~np.isin(row_of, pins)
    r = np.concatenate([row_of[keep], pins])
    c = np.concatenate([a.indices[keep].astype(np.int64), pins])
    v = np.concatenate([a.data[keep], np.ones(pins.size)])
    order = np.lexsort((c, r))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(r, minlength=n))])
    return sp.csr_matrix((v[order], c[order], indptr), shape=a.shape).tocsc()


class _Triplets:
    """COO accumulator for the temperature operator."""

    def __init__(self):
        self.r, self.c, self.v = [], [], []

    def add(self, rows, cols, vals):
        rows, cols, vals = np.asarray(rows), np.asarray(cols), np.asarray(vals, float)
        if not rows.shape == cols.shape == vals.shape:  # broadcast only when the shapes differ
            rows, cols, vals = np.broadcast_arrays(rows, cols, vals)
        self.r.append(rows.ravel())
        self.c.append(cols.ravel())
        self.v.append(vals.ravel())

    def matrix(self, n):
        return sp.csc_matrix(
            (np.concatenate(self.v), (np.concatenate(self.r), np.concatenate(self.c))), shape=(n, n)
        )


def _advection_diffusion(t, fi, fj, fax, flux, d_cond, uid, nx, ny, scheme, nz=1):
    """Add the face fluxes of advection-diffusion to the triplets ``t``.

    Faces join flat cell fi to its +x (fax 0), +y (1) or +z (2) neighbour fj; ``flux`` is the
    volume flux fi -> fj [m3/s], ``d_cond`` the diffusive conductance Gamma * A / dx
    [m3/s]; ``uid`` maps flat cells to unknowns (-1: solid). The heat flux through a face
    is J = F * T_face - d_cond * (T_j - T_i) with:

    - ``"power_law"``: Patankar's power-law scheme (1980, ch. 5): J = (F+ + a) T_i -
      (F- + a) T_j, a = d_cond * max(0, (1 - 0.1 |F / d_cond|)^5); bounded, first order.
    - ``"quick"``: Leonard's QUICK (Comput. Methods Appl. Mech. Eng. 19 (1979) 59):
      T_face = 6/8 T_U + 3/8 T_D - 1/8 T_UU with central diffusion; third-order face
      values, first-order upwind where the far-upwind cell UU is a wall or solid.

    Both are conservative (what leaves one cell enters the next) and linear in T.
    """
    ri, rj = uid[fi], uid[fj]
    if scheme == "power_law":
        a = d_cond * power_law_weight(flux / d_cond)
        ci = np.maximum(flux, 0.0) + a
        cj = np.maximum(-flux, 0.0) + a
        t.add(ri, ri, ci)
        t.add(ri, rj, -cj)
        t.add(rj, ri, -ci)
        t.add(rj, rj, cj)
        return
    if scheme != "quick":
        raise ValueError(f"unknown advection scheme {scheme!r}")
    step = np.where(fax == 0, 1, np.where(fax == 1, nx, nx * ny))
    pos = flux >= 0
    up = np.where(pos, fi, fj)
    down = np.where(pos, fj, fi)
    uu = np.where(pos, fi - step, fj + step)

    def coord(i):  # position of cell i along the face's axis
        return np.where(fax == 0, i % nx, np.where(fax == 1, (i // nx) % ny, i // (nx * ny)))

    n_axis = np.where(fax == 0, nx, np.where(fax == 1, ny, nz))
    inside = np.where(pos, coord(fi) > 0, coord(fj) < n_axis - 1)
    uu_ok = inside.copy()
    uu_ok[inside] = uid[uu[inside]] >= 0
    ru, rd = uid[up], uid[down]
    ruu = np.where(uu_ok, uid[np.where(uu_ok, uu, up)], ru)
    w = ((ru, np.where(uu_ok, 6 / 8, 1.0)), (rd, np.where(uu_ok, 3 / 8, 0.0)), (ruu, np.where(uu_ok, -1 / 8, 0.0)))
    for idx, wk in w:
        t.add(ri, idx, flux * wk)
        t.add(rj, idx, -flux * wk)
    t.add(ri, ri, d_cond)
    t.add(ri, rj, -d_cond)
    t.add(rj, rj, d_cond)
    t.add(rj, ri, -d_cond)


def face_operator(nx, ny, mask, flux_m3_s, conductance_m3_s, scheme="quick"):
    """Sparse advection-diffusion operator on the cells of ``mask`` (flat, ny*nx bool).

    Faces are enumerated as in the hall solver (all +x faces row by row, then all +y
    faces); ``flux_m3_s`` gives one volume flux per face. Row k of the result is the net
    heat outflow of the k-th masked cell per unit of temperature (walls: no flux).
    """
    mask = np.asarray(mask, bool).ravel()
    fi, fj, fax = _grid_faces(nx, ny, mask)
    uid = -np.ones(nx * ny, np.int64)
    uid[mask] = np.arange(mask.sum())
    t = _Triplets()
    flux = np.broadcast_to(np.asarray(flux_m3_s, float), fi.shape)
    cond = np.broadcast_to(np.asarray(conductance_m3_s, float), fi.shape)
    _advection_diffusion(t, fi, fj, fax, flux, cond, uid, nx, ny, scheme)
    return t.matrix(int(mask.sum()))


@dataclass
class HallProblem:
    """Assembled steady problem of one layout and airflow (internal; see inlet_model).

    Temperature unknowns are ordered [room fluid cells | plenum cells | return node].
    A @ T = E @ T_supply + B @ Q_rack;  T_inlet = W @ T;  T_return = M @ T.
    """

    geometry: HallGeometry
    grid: HallGrid
    rack_airflow_m3_s: np.ndarray
    cooling_airflow_m3_s: np.ndarray  # effective (0 for inactive units)
    room_id: np.ndarray  # (ny*nx,) unknown index of room cell or -1 if solid
    n_room: int
    n_unknowns: int
    plenum_pressure: np.ndarray  # (ny*nx,) [arbitrary units]
    floor_flow_m3_s: np.ndarray  # (ny*nx,) plenum -> room flow per cell [m3/s]
    plenum_source_m3_s: np.ndarray  # (ny*nx,) unit supply minus enclosed-rack draw [m3/s]
    enclosure_supply_m3_s: np.ndarray  # (R,) supply air the tiles of each rack's enclosure deliver [m3/s]
    room_share: np.ndarray  # (R,) share of each rack's intake drawn from the room [-]
    room_source_m3_s: np.ndarray  # (n_room,) net volume source per room cell [m3/s]
    room_face: tuple  # (i, j, axis, flux) in room-unknown indices, flux i -> j [m3/s]
    plenum_face: tuple  # (i, j, axis, flux) in flat cell indices [m3/s]
    A: sp.csc_matrix
    E: sp.csr_matrix  # (n_unknowns, C)
    B: sp.csr_matrix  # (n_unknowns, R)
    W: sp.csr_matrix  # (R, n_unknowns)
    M: sp.csr_matrix  # (C, n_unknowns)
    duct_m3_s: np.ndarray  # (C,) flow each unit draws from the hot-aisle return plenum
    _csr: sp.csr_matrix | None = field(default=None, repr=False)
    _block_lu: dict = field(default_factory=dict, repr=False)  # factors of the diagonal blocks
    #: the room block of A as canonical CSC when build_problem made it with A (else sliced)
    _room_block: sp.csc_matrix | None = field(default=None, repr=False)
    #: factors shared by every problem of one fixed part (:class:`_FixedPart`): the plenum's
    _shared_lu: dict = field(default_factory=dict, repr=False)

    @property
    def a_csr(self) -> sp.csr_matrix:
        """``A`` in CSR form (its blocks are sliced by rows), converted once per problem."""
        if self._csr is None:
            self._csr = self.A.tocsr()
        return self._csr

    def self_heating_k_per_w(self) -> np.ndarray:
        """(R,) server-inlet rise per watt of the rack's own heat from its internal
        bypass (missing blanking): b / ((1 - b) rho cp V) [K/W]."""
        b = self.geometry.rack_bypass_fraction
        return np.full(self.rack_airflow_m3_s.size, b / (1 - b)) / (AIR_VOLUMETRIC_HEAT_J_M3_K * self.rack_airflow_m3_s)

    def inlet_temp_c(self, temp: np.ndarray, rack_heat_w) -> np.ndarray:
        """Server inlet temperature of each rack [C] from the solved field."""
        return self.W @ temp + self.self_heating_k_per_w() * np.asarray(rack_heat_w, float)

    def block_lu(self, block: str):
        """SuperLU factor of the room (``"room"``) or plenum (``"plenum"``) diagonal block of
        A, in :func:`_ordering`; factorised once per problem and shared by :meth:`solve` and
        :func:`twin.thermal.inlet.linear_maps`. The plenum block does not see the room's
        flow, so the Picard passes of a buoyant flow share one factor (:func:`factorised`)."""
        if block not in self._block_lu:
            if block == "plenum" and "plenum" in self._shared_lu:
                # the plenum block is assembled from the fixed part's terms alone (the room's
                # faces join room cells only), so every problem of that part has the same one
                self._block_lu[block] = self._shared_lu["plenum"]
                return self._block_lu[block]
            nr, n_p = self.n_room, self.plenum_pressure.size
            sl = slice(0, nr) if block == "room" else slice(nr, nr + n_p)
            a = self._room_block if block == "room" and self._room_block is not None else self.a_csr[sl, sl]
            self._block_lu[block] = factorised(a, _ordering(self.geometry), memo=block == "plenum")
            if block == "plenum":
                self._shared_lu["plenum"] = self._block_lu[block]
        return self._block_lu[block]

    def solve(self, rack_heat_w: np.ndarray) -> np.ndarray:
        """All temperatures [C] for the rack heats [W], by block substitution: no room air
        enters the plenum (asserted in :func:`build_problem`), so in the order (plenum, room,
        return node) the operator is block lower-triangular."""
        rhs = self.E @ self.geometry.cooling_supply_temp_c + self.B @ np.asarray(rack_heat_w, float)
        nr, n_p = self.n_room, self.plenum_pressure.size
        a = self.a_csr
        rr, pp, nn = slice(0, nr), slice(nr, nr + n_p), slice(nr + n_p, self.n_unknowns)
        t_p = self.block_lu("plenum").solve(rhs[pp])
        t_r = self.block_lu("room").solve(rhs[rr] - a[rr, pp] @ t_p)
        t_n = (rhs[nn] - a[nn, pp] @ t_p - a[nn, rr] @ t_r) / a[nn, nn].diagonal()
        return np.concatenate([t_r, t_p, t_n])


#: the airflow-independent-of-the-room-flux part of :func:`build_problem` (everything but the
#: room's potential solve with its extra fluxes and the room's advection-diffusion terms),
#: kept per process by a digest of the geometry, rack airflow and running units: the Picard
#: passes of a buoyant flow (:func:`twin.thermal.buoyancy.buoyant_flow`) build the same hall
#: at the same airflow again with other room fluxes only (the last few are kept, and at most
#: ``FIXED_MEMO_BYTES`` of arrays: a 1,600-rack plan-view hall's part is about 20 MB)
FIXED_MEMO_SIZE = 4
FIXED_MEMO_BYTES = 64 * 2**20
_FIXED_MEMO: OrderedDict[bytes, _FixedPart] = OrderedDict()


@dataclass(frozen=True, eq=False)
class _FixedPart:
    """What :func:`build_problem` assembles from the layout, the rack airflow and the running
    units alone (see :data:`FIXED_MEMO_SIZE`); read-only, copied into each problem."""

    grid: HallGrid
    nz: int
    room_id: np.ndarray
    n_room: int
    n_unknowns: int
    v_c: np.ndarray
    duct_c: np.ndarray
    p: np.ndarray
    q_floor: np.ndarray
    plenum_source: np.ndarray
    s_enc: np.ndarray
    room_share: np.ndarray
    s_room: np.ndarray
    pins: np.ndarray             # the room cell pinned to potential 0 in each connected region
    face: tuple                  # (fi, fj, fax, ri, rj, w_face) of the room
    potential_lu: spla.SuperLU
    plenum_face: tuple
    heat_r: np.ndarray           # triplets of the heat operator after the room's own faces
    heat_c: np.ndarray
    heat_v: np.ndarray
    E: sp.csr_matrix
    B: sp.csr_matrix
    W: sp.csr_matrix
    M: sp.csr_matrix
    lu: dict = field(default_factory=dict)   # factors its problems share (HallProblem._shared_lu)

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays this part holds (the memo's budget; the factor is the layout
        memo's)."""
        dense = (self.room_id, self.v_c, self.duct_c, self.p, self.q_floor, self.plenum_source, self.s_enc,
                 self.room_share, self.s_room, self.pins, *self.face, *self.plenum_face, self.heat_r, self.heat_c,
                 self.heat_v)
        return sum(a.nbytes for a in dense) + sum(m.data.nbytes + m.indices.nbytes + m.indptr.nbytes
                                                  for m in (self.E, self.B, self.W, self.M))


@dataclass(frozen=True, eq=False)
class _RackCells:
    """Per layout: the cells in front of every rack's intake and exhaust (the rack layers of
    the 3-D room), the enclosed zones and the plan cells that feed each zone."""

    cin: list                    # per rack: flat 3-D cells in front of the intake
    cout: list                   # per rack: ... of the exhaust
    n_in: np.ndarray             # (R,) len(cin[r])
    n_out: np.ndarray            # (R,) len(cout[r])
    k_room: np.ndarray           # room unknowns of every rack's cin, concatenated in rack order
    k_out: np.ndarray            # ... of every rack's cout
    io_cells: np.ndarray         # per rack its intake cells, then its exhaust cells
    zone: np.ndarray             # (R,) zone of each rack (-1: open intake)
    zone_cells: dict             # zone -> its floor: its racks' intake plan cells, a contained aisle's whole floor


_RACK_MEMO: OrderedDict[bytes, _RackCells] = OrderedDict()


def _rack_cells(geometry_key: bytes, g: HallGeometry, grid: HallGrid, rack_layers: np.ndarray,
                room_id: np.ndarray) -> _RackCells:
    """:class:`_RackCells` of a layout, kept per process by the geometry's digest."""
    def make():
        n = grid.nx * grid.ny
        cin = [(rack_layers[:, None] * n + np.asarray(c)[None, :]).ravel() for c in grid.intake_cells]
        cout = [(rack_layers[:, None] * n + np.asarray(c)[None, :]).ravel() for c in grid.exhaust_cells]
        zone = enclosure_zone_index(_intake_enclosed(g), g.containment, g.rack_center_xy_m, g.rack_intake_dir,
                                    g.rack_width_m, g.rack_depth_m)
        aisle = (contained_aisle_zone_of_cell(zone, grid.intake_cells, g.rack_intake_dir, grid.rack_cells, grid.solid,
                                              grid.cell_m) if g.containment == "cold_aisle" else np.full(n, -1))
        zone_cells = {int(z): np.union1d(np.concatenate([grid.intake_cells[r] for r in np.flatnonzero(zone == z)]),
                                         np.flatnonzero(aisle == z)) for z in np.unique(zone[zone >= 0])}
        cat = np.concatenate
        return _RackCells(cin, cout, np.array([len(c) for c in cin], np.int64),
                          np.array([len(c) for c in cout], np.int64), room_id[cat(cin)], room_id[cat(cout)],
                          cat([x for pair in zip(cin, cout, strict=True) for x in pair]), zone, zone_cells)
    return _kept(_RACK_MEMO, geometry_key, make, 16)


def _block_index(n_rows: np.ndarray, n_cols: np.ndarray, row0: np.ndarray, col0: np.ndarray):
    """Entries of a sequence of dense blocks, block k of n_rows[k] x n_cols[k] entries in C
    order (as a broadcast outer product ravels): (block of each entry, its row position
    row0[k] + i and its column position col0[k] + j), blocks one after the other."""
    size = n_rows * n_cols
    block = np.repeat(np.arange(size.size), size)
    local = np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size)
    width = np.maximum(n_cols, 1)[block]
    return block, row0[block] + local // width, col0[block] + local % width


def _by_rack(sizes: list, values: list) -> np.ndarray:
    """Per rack the parts in order: ``values[k]`` holds part k of every rack, concatenated in
    rack order (``sizes[k][r]`` entries for rack r); the result holds rack 0's parts, then
    rack 1's, ... (what appending part after part inside a loop over racks gives)."""
    total = np.sum(sizes, axis=0)
    out = np.empty(int(total.sum()), np.result_type(*values))
    start = np.cumsum(total) - total
    for size, vals in zip(sizes, values, strict=True):
        out[np.repeat(start, size) + np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size)] = vals
        start = start + size
    return out


def _rack_terms(cells: _RackCells, zone_cells: dict, v_r, e_frac, h_frac, spill, n_room: int, rn: int, hot: bool):
    """The rack terms of the heat operator, W and B, vectorised over the racks: bit for bit
    the per-rack loop of :func:`_fixed_part` (the same floating-point operations on the same
    numbers, the triplets in the same order; tested against it). Per rack: the intake sinks
    a = (1 - e) V / n_in on its intake cells; the zone supply spilling in front of it
    (-spill / n_in x the zone's tile shares); the exhaust block -m_i w_j, exhaust weights
    m = (1 - h) V / n_out (and h V into the hot-aisle return) by source weights w (a / V on
    the intake cells, e x the zone's tile shares on its plenum cells), zero weights dropped.

    Returns ((rows, cols, values) of the heat operator, of W, of B).
    """
    n_r = v_r.size
    racks = np.arange(n_r)
    n_in, n_out = cells.n_in, cells.n_out
    no_cells, no_share = np.zeros(0, np.int64), np.zeros(0)
    zc = [zone_cells.get(int(z), (no_cells, no_share)) for z in cells.zone]
    cz = np.concatenate([c for c, _ in zc])
    wz = np.concatenate([w for _, w in zc])
    n_z = np.array([c.size for c, _ in zc], np.int64)
    a = (1 - e_frac) * v_r / n_in
    # the sources of each rack's intake: its room cells, then its zone's plenum cells
    src_idx = _by_rack([n_in, n_z], [cells.k_room, n_room + cz])
    src_w = _by_rack([n_in, n_z], [np.repeat(a / v_r, n_in), np.repeat(e_frac, n_z) * wz])
    src_rack = _by_rack([n_in, n_z], [np.repeat(racks, n_in), np.repeat(racks, n_z)])
    keep = src_w > 0
    src_idx, src_w, src_rack = src_idx[keep], src_w[keep], src_rack[keep]
    n_src = np.bincount(src_rack, minlength=n_r)
    # where each rack's exhaust goes: its room cells, then the hot-aisle return node
    m = (1 - h_frac) * v_r / n_out
    n_h = ((h_frac > 0) & hot).astype(np.int64)
    tgt = _by_rack([n_out, n_h], [cells.k_out, np.full(int(n_h.sum()), rn, np.int64)])
    tgt_m = _by_rack([n_out, n_h], [np.repeat(m, n_out), (h_frac * v_r)[n_h > 0]])
    tgt_rack = _by_rack([n_out, n_h], [np.repeat(racks, n_out), racks[n_h > 0]])
    keep = tgt_m > 0
    tgt, tgt_m, tgt_rack = tgt[keep], tgt_m[keep], tgt_rack[keep]
    n_tgt = np.bincount(tgt_rack, minlength=n_r)
    # the zone supply spilling in front of a rack: (intake cells) x (its zone's plenum cells)
    spills = spill > 0
    rows2, cols2 = np.where(spills, n_in, 0), np.where(spills, n_z, 0)
    b2, i2, j2 = _block_index(rows2, cols2, np.cumsum(n_in) - n_in, np.cumsum(n_z) - n_z)
    # the exhaust block: (exhaust targets) x (intake sources)
    b3, i3, j3 = _block_index(n_tgt, n_src, np.cumsum(n_tgt) - n_tgt, np.cumsum(n_src) - n_src)
    sizes = [n_in, rows2 * cols2, n_tgt * n_src]
    heat = (_by_rack(sizes, [cells.k_room, cells.k_room[i2], tgt[i3]]),
            _by_rack(sizes, [cells.k_room, n_room + cz[j2], src_idx[j3]]),
            _by_rack(sizes, [np.repeat(a, n_in), (-spill / n_in)[b2] * wz[j2], -tgt_m[i3] * src_w[j3]]))
    return (heat, (src_rack, src_idx, src_w),
            (tgt, tgt_rack, tgt_m / (AIR_VOLUMETRIC_HEAT_J_M3_K * v_r)[tgt_rack]))


def build_problem(
    geometry: HallGeometry, rack_airflow_m3_s, cooling_active=None, room_extra_flux_m3_s=None,
    room_face_diffusivity_m2_s=None,
) -> HallProblem:
    """Rasterise the hall, solve both flow layers and assemble the heat operator.

    room_extra_flux_m3_s: optional volume flux [m3/s] on every room face (in the order of
    ``HallProblem.room_face``) added to the potential flow, e.g. the buoyant exchange of
    :mod:`twin.thermal.buoyancy`; the potential then solves L phi = s - div(extra), so the
    total flow still conserves mass in every cell.
    room_face_diffusivity_m2_s: optional eddy diffusivity [m2/s] on every room face (same
    order) instead of ``eddy_diffusivity_m2_s``, e.g. the Richardson-damped vertical mixing
    of :mod:`twin.thermal.mixing`; the plenum keeps the scalar.

    What does not depend on the room's extra fluxes or diffusivity (the plenum, the zones,
    the sources, the rack and unit terms) is kept per process (:data:`FIXED_MEMO_SIZE`): the
    passes of a buoyant flow reuse it (bit for bit a fresh assembly, tested).
    """
    g = geometry
    geometry_key = _geometry_digest(g)  # one digest per call, for the layout memos
    n_r, n_c = g.n_racks, g.n_cooling
    v_r = np.broadcast_to(np.asarray(rack_airflow_m3_s, float), (n_r,)).copy()
    if np.any(v_r <= 0):
        raise ValueError("rack airflow must be positive for every rack")
    active = np.ones(n_c, bool) if cooling_active is None else np.asarray(cooling_active, bool).reshape(n_c)
    fx = _kept(_FIXED_MEMO, _digest(geometry_key, v_r, active),
               lambda: _fixed_part(g, geometry_key, v_r, active), FIXED_MEMO_SIZE)
    while len(_FIXED_MEMO) > 1 and sum(part.nbytes for part in _FIXED_MEMO.values()) > FIXED_MEMO_BYTES:
        _FIXED_MEMO.popitem(last=False)    # the oldest go; the one just used is the newest
    grid, nz, room_id, n_room = fx.grid, fx.nz, fx.room_id, fx.n_room
    nx, ny = grid.nx, grid.ny
    fi, fj, fax, ri, rj, w_face = fx.face

    # ---- room: potential flow L phi = s ---------------------------------------------
    rhs = fx.s_room.copy()
    extra = None
    if room_extra_flux_m3_s is not None:
        extra = np.asarray(room_extra_flux_m3_s, float)
        if extra.shape != ri.shape:
            raise ValueError(f"room_extra_flux_m3_s needs one flux per room face ({ri.size}), got {extra.shape}")
        div = np.zeros(n_room)
        np.add.at(div, ri, extra)
        np.add.at(div, rj, -extra)
        rhs -= div
    rhs[fx.pins] = 0.0                 # each region's potential is pinned to 0 at one cell
    phi = fx.potential_lu.solve(rhs)
    f_room = w_face * (phi[ri] - phi[rj])  # outflow of a cell = sum of its face fluxes = source
    if extra is not None:
        f_room = f_room + extra

    # ---- heat operator: the room's faces, then the fixed terms -----------------------
    gamma = g.eddy_diffusivity_m2_s
    t = _Triplets()

    gamma_room = gamma if room_face_diffusivity_m2_s is None else np.asarray(room_face_diffusivity_m2_s, float)
    if np.shape(gamma_room) not in ((), ri.shape):
        raise ValueError(f"room_face_diffusivity_m2_s needs one value per room face ({ri.size})")
    _advection_diffusion(t, fi, fj, fax, f_room, gamma_room * w_face, room_id, nx, ny, g.scheme, nz)
    t.r.append(fx.heat_r)
    t.c.append(fx.heat_c)
    t.v.append(fx.heat_v)
    A, room_block = _assembled(t, fx.n_unknowns, n_room, geometry_key, g.scheme)
    return HallProblem(
        geometry=g,
        grid=grid,
        rack_airflow_m3_s=v_r,
        cooling_airflow_m3_s=fx.v_c.copy(),
        room_id=room_id.copy(),
        n_room=n_room,
        n_unknowns=fx.n_unknowns,
        plenum_pressure=fx.p.copy(),
        floor_flow_m3_s=fx.q_floor.copy(),
        plenum_source_m3_s=fx.plenum_source.copy(),
        enclosure_supply_m3_s=fx.s_enc.copy(),
        room_share=fx.room_share.copy(),
        room_source_m3_s=fx.s_room.copy(),
        room_face=(ri.copy(), rj.copy(), fax.copy(), f_room),
        plenum_face=tuple(x.copy() for x in fx.plenum_face),
        A=A,
        E=fx.E.copy(),
        B=fx.B.copy(),
        W=fx.W.copy(),
        M=fx.M.copy(),
        duct_m3_s=fx.duct_c.copy(),
        _room_block=room_block,
        _shared_lu=fx.lu,
    )


#: build_problem assembles the power-law heat operator from a kept assembly plan
#: (:class:`_AssemblyPlan`) when the triplets' rows and columns are those the plan was made
#: for; False: ``_Triplets.matrix`` every time (the reference; the same matrix)
ASSEMBLY_PLAN = True
_PLAN_MEMO: OrderedDict[bytes, _AssemblyPlan] = OrderedDict()


@dataclass(frozen=True, eq=False)
class _AssemblyPlan:
    """How the triplets (rows, cols) of a heat operator become its canonical CSC matrix, as
    ``scipy.sparse.csc_matrix((v, (rows, cols)))`` does it: the triplets bucketed by column
    in their order (``coo_tocsr``), each column sorted by row (``csr_sort_indices``, whose
    order of equal rows depends on the rows alone), and equal (row, column) runs summed left
    to right (``csr_sum_duplicates``: x = v0; x += v1; ...). ``data(v)`` repeats those sums for
    new values in the same order, so the same floats; the plan is checked against scipy's
    matrix when made. ``room``: the entries of the room block (rows and columns < n_room),
    which are a prefix of each of its columns."""

    rows: np.ndarray
    cols: np.ndarray
    n: int
    first: np.ndarray          # per entry, its first triplet
    ranks: tuple               # per further duplicate k = 1, 2, ...: (entries, their k-th triplets)
    indices: np.ndarray
    indptr: np.ndarray
    room: np.ndarray           # entries in the room block, in order
    room_indices: np.ndarray
    room_indptr: np.ndarray

    def data(self, vals: np.ndarray) -> np.ndarray:
        """The matrix's entries (canonical CSC order) for the triplets' values ``vals``."""
        out = vals[self.first]
        for entries, trip in self.ranks:    # each entry at most once per rank: a plain add
            out[entries] += vals[trip]
        return out

    @classmethod
    def of(cls, rows: np.ndarray, cols: np.ndarray, n: int, n_room: int) -> _AssemblyPlan:
        """The plan of an n x n operator from the triplets' rows and columns: scipy's own
        sort (``sort_indices``) run with each triplet's number as its value."""
        order = np.argsort(cols, kind="stable")            # coo_tocsr's buckets
        nnz = rows.size
        idx = np.int32 if max(nnz, n) <= np.iinfo(np.int32).max else np.int64
        indptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=n))]).astype(idx)
        tagged = sp.csc_matrix((order.astype(np.float64), rows[order].astype(idx), indptr), shape=(n, n))
        tagged.sort_indices()                               # scipy's own sort, triplet numbers as values
        trip = tagged.data.astype(np.int64)
        r_sorted = tagged.indices
        col = np.repeat(np.arange(n), np.diff(tagged.indptr))
        new = np.ones(nnz, bool)
        new[1:] = (r_sorted[1:] != r_sorted[:-1]) | (col[1:] != col[:-1])
        entry = np.cumsum(new) - 1
        starts = np.flatnonzero(new)
        rank = np.arange(nnz) - starts[entry]
        ranks = tuple((entry[rank == k], trip[rank == k]) for k in range(1, int(rank.max(initial=0)) + 1))
        col_u, row_u = col[starts], r_sorted[starts]
        room = np.flatnonzero((col_u < n_room) & (row_u < n_room))
        return cls(rows, cols, n, trip[starts], ranks, row_u.astype(idx),
                   np.concatenate([[0], np.cumsum(np.bincount(col_u, minlength=n))]).astype(idx), room,
                   row_u[room].astype(idx),
                   np.concatenate([[0], np.cumsum(np.bincount(col_u[room], minlength=n_room))]).astype(idx))


def _assembled(t: _Triplets, n: int, n_room: int, geometry_key: bytes, scheme: str):
    """(A, its room block or None) of the triplets ``t``: ``t.matrix(n)``, from the kept
    :class:`_AssemblyPlan` of the hall when ``t`` has its rows and columns (the power-law
    operator's pattern is the same at every airflow knot and Picard pass of a hall; QUICK's
    follows the flux's signs, so it always takes the reference)."""
    if not ASSEMBLY_PLAN or scheme != "power_law":
        return t.matrix(n), None
    rows, cols = np.concatenate(t.r), np.concatenate(t.c)
    plan = _PLAN_MEMO.get(geometry_key)
    if plan is not None and plan.n == n and np.array_equal(plan.rows, rows) and np.array_equal(plan.cols, cols):
        _PLAN_MEMO.move_to_end(geometry_key)
        a = sp.csc_matrix((plan.data(np.concatenate(t.v)), plan.indices.copy(), plan.indptr.copy()), shape=(n, n))
        a.has_canonical_format = True
        room = sp.csc_matrix((a.data[plan.room], plan.room_indices.copy(), plan.room_indptr.copy()),
                             shape=(n_room, n_room))
        room.has_canonical_format = True
        return a, room
    a = t.matrix(n)                                         # the reference, and the plan's check
    plan = _AssemblyPlan.of(rows, cols, n, n_room)
    ref_room = _canonical_csc(a.tocsr()[:n_room, :n_room])
    if (np.array_equal(plan.indptr, a.indptr) and np.array_equal(plan.indices, a.indices)
            and plan.data(np.concatenate(t.v)).tobytes() == a.data.tobytes()
            and np.array_equal(plan.room_indptr, ref_room.indptr) and np.array_equal(plan.room_indices, ref_room.indices)
            and a.data[plan.room].tobytes() == ref_room.data.tobytes()):
        _PLAN_MEMO[geometry_key] = plan
        while len(_PLAN_MEMO) > 4:
            _PLAN_MEMO.popitem(last=False)
    return a, None


#: build_problem assembles the rack terms in one vectorised pass (:func:`_rack_terms`);
#: False: the per-rack loop (the reference the tests compare it with)
VECTORISED_RACKS = True


def _fixed_part(g: HallGeometry, geometry_key: bytes, v_r: np.ndarray, active: np.ndarray) -> _FixedPart:
    """The part of :func:`build_problem` that the room's extra fluxes and diffusivity do not
    change, for rack airflow ``v_r`` (R,) [m3/s] and running units ``active`` (C,) bool."""
    grid = _rasterised(g, geometry_key)
    nx, ny, h = grid.nx, grid.ny, grid.cell_m
    n = nx * ny
    n_r, n_c = g.n_racks, g.n_cooling
    v_c = np.where(active, g.cooling_airflow_m3_s, 0.0)
    if v_c.sum() <= 0:
        raise NoSteadyStateError("no active cooling airflow: the hall has no steady state (use fault_transient)")
    fluid = ~grid.solid.ravel()  # plan view: the bottom layer (racks stand on the floor)
    nz = int(g.n_layers)
    dz = g.height_m / nz
    rack_layer = (np.arange(nz) == 0) | ((np.arange(nz) + 0.5) * dz < g.rack_height_m)
    rack_layers = np.flatnonzero(rack_layer)
    solid3 = np.tile(grid.obstacle_mask.ravel(), (nz, 1))
    solid3[rack_layer] |= grid.rack_mask.ravel()
    fluid3 = ~solid3.ravel()
    room_id = -np.ones(nz * n, np.int64)
    room_id[fluid3] = np.arange(fluid3.sum())
    n_room = int(fluid3.sum())
    top = (nz - 1) * n
    cells_of = _rack_cells(geometry_key, g, grid, rack_layers, room_id)

    def racked(plan_cells):  # the cells of the rack layers in front of a face
        return (rack_layers[:, None] * n + np.asarray(plan_cells)[None, :]).ravel()
    supply_layer = top if g.supply == "overhead" else 0
    bypass = g.rack_bypass_fraction
    v_server = v_r
    v_r = (1.0 - bypass) * v_server  # air the racks exchange with the hall
    leak = g.containment_leakage_fraction
    enclosed = _intake_enclosed(g)
    h_frac = np.zeros(n_r)  # ducted share: the units take what they can, the rest spills (containment.py)
    if g.containment == "hot_aisle":
        h_frac[:] = 1.0 - zone_room_share_fraction(v_c.sum(), v_r.sum(), leak)
    ducted = float((h_frac * v_r).sum())
    duct_c = v_c / v_c.sum() * ducted

    # ---- plenum: (k L + G) p = s ----------------------------------------------------
    s_p = np.zeros(n)
    wall_jet = np.zeros(n_c, bool) if g.cooling_outlet_z_m is None else ~np.isnan(g.cooling_outlet_z_m).any(axis=1)
    for c in np.flatnonzero(~wall_jet).tolist():
        cells = grid.cooling_cells[c]
        np.add.at(s_p, cells, v_c[c] / len(cells))
    zone = cells_of.zone
    g_open, g_enc, aisle, k_lat, pi, pj, pax, a_p = _plenum_layout(geometry_key, g, grid, cells_of, enclosed, fluid)
    p = factorised(a_p).solve(s_p)  # the same operator at every airflow: factorised once
    q_floor = g_open * p
    # every source of the plenum is a unit's supply (s_p >= 0) and every outlet a conductance
    # to the room (tiles, leaks, enclosures), so p >= 0 (an M-matrix), no room air enters the
    # floor and the heat operator is block lower-triangular: HallProblem.solve relies on it
    assert np.all(q_floor >= 0), "room air flows down into the plenum"
    q_enc = g_enc * p  # supply each enclosure's tiles deliver (into its zone, at room pressure)
    f_plenum = k_lat * (p[pi] - p[pj])
    # ---- enclosed zones' air balance (twin.thermal.containment) ----------------------
    s_enc = zone_supply_by_rack_m3_s(q_enc, aisle, grid.intake_cells, enclosed, v_r, zone)
    room_share, spill = enclosure_balance_m3_s(s_enc, v_r, zone, leak)
    e_frac = 1.0 - room_share  # share of rack airflow drawn from its zone's supply
    zone_cells = {}  # zone -> (plenum cells feeding it, their share of its supply): the zone mixes
    for z, cz in cells_of.zone_cells.items():
        wz = q_enc[cz] / q_enc[cz].sum() if q_enc[cz].sum() > 0 else np.full(len(cz), 1.0 / len(cz))
        zone_cells[int(z)] = (cz, wz)
    demand = None  # air each rack intake cell draws from the room: racks along a jet's flanks take it from the jet
    if g.cooling_outlet_z_m is not None:
        demand = np.zeros(nz * n)
        for r in range(n_r):
            cin = racked(grid.intake_cells[r])
            np.add.at(demand, cin, (1 - e_frac[r]) * v_r[r] / len(cin))
    jets = hall_wall_jets(g, nx, ny, fluid3, v_c, demand)  # units blowing into the room at a height

    # ---- room: the potential flow's sources -----------------------------------------
    s_room_full = np.zeros(nz * n)
    s_room_full[supply_layer : supply_layer + n] = np.where(fluid, q_floor, 0.0)
    # per rack its intake cells, then its exhaust cells, in rack order: one np.add.at adds in
    # the order of its indices, as one call per rack and face did
    n_in, n_out = cells_of.n_in, cells_of.n_out
    per_face = np.column_stack([(spill - (1 - e_frac) * v_r) / n_in, (1 - h_frac) * v_r / n_out]).ravel()
    np.add.at(s_room_full, cells_of.io_cells, np.repeat(per_face, np.column_stack([n_in, n_out]).ravel()))
    for c in range(n_c):
        cells = top + grid.cooling_cells[c]
        np.add.at(s_room_full, cells, -(v_c[c] - duct_c[c]) / len(cells))
        if (jet := jets[c]) is not None:
            np.add.at(s_room_full, jet.end_cells, jet.end_source_m3_s(v_c[c]))
            np.add.at(s_room_full, jet.path_cells, -jet.entrained_m3_s * jet.path_weight)
    s_room = s_room_full[fluid3]
    fi, fj, fax, ri, rj, w_face = _room_faces(geometry_key, nx, ny, fluid3, nz, room_id, h, dz)
    n_comp, labels, potential_lu = _room_potential_operator(geometry_key, n_room, ri, rj, w_face)
    pins = np.empty(n_comp, np.int64)
    for comp in range(n_comp):
        members = np.flatnonzero(labels == comp)
        imbalance = s_room[members].sum()
        if abs(imbalance) > 1e-9 * max(1.0, v_c.sum()):
            raise ValueError(
                f"room region of {len(members)} cells around cell {members[0]} is sealed off "
                f"with a net air source of {imbalance:.3g} m3/s (obstacles close it in)"
            )
        pins[comp] = members[0]        # the region's potential is pinned to 0 there

    # ---- heat operator, after the room's faces (build_problem adds those first) ------
    gamma = g.eddy_diffusivity_m2_s
    hot = g.containment == "hot_aisle"
    n_u = n_room + n + (1 if hot else 0)
    pl = n_room + np.arange(n)  # plenum unknown of each flat cell
    rn = n_room + n  # return node unknown (if hot aisle)
    t = _Triplets()
    _advection_diffusion(t, pi, pj, pax, f_plenum, gamma * PLENUM_HEIGHT_M, pl, nx, ny, g.scheme)
    # floor exchange
    cells = np.flatnonzero(fluid & (q_floor != 0))
    q = q_floor[cells]
    up, down = q > 0, q < 0
    above = room_id[supply_layer + cells]  # room cell the tile or diffuser opens into
    t.add(pl[cells[up]], pl[cells[up]], q[up])
    t.add(above[up], pl[cells[up]], -q[up])
    t.add(above[down], above[down], -q[down])
    t.add(pl[cells[down]], above[down], q[down])
    ce = np.flatnonzero(q_enc)
    t.add(pl[ce], pl[ce], q_enc[ce])  # plenum air leaving into the enclosures
    # racks
    w_r, w_c, w_v = [], [], []
    b_r, b_c, b_v = [], [], []
    if VECTORISED_RACKS:
        (tr, tc, tv), (wr, wc, wv), (br, bc, bv) = _rack_terms(cells_of, zone_cells, v_r, e_frac, h_frac, spill,
                                                               n_room, rn, hot)
        t.add(tr, tc, tv)
        w_r, w_c, w_v, b_r, b_c, b_v = [wr], [wc], [wv], [br], [bc], [bv]
    for r in range(n_r) if not VECTORISED_RACKS else ():  # the reference
        cin = grid.intake_cells[r]  # plan cells in front of the intake
        k_room = room_id[cells_of.cin[r]]
        a_room = np.full(len(k_room), (1 - e_frac[r]) * v_r[r] / len(k_room))
        cz, wz = zone_cells.get(int(zone[r]), (cin[:0], np.zeros(0)))  # the zone's supply, mixed
        src_idx = np.concatenate([k_room, pl[cz]])
        src_w = np.concatenate([a_room / v_r[r], e_frac[r] * wz])
        keep = src_w > 0
        src_idx, src_w = src_idx[keep], src_w[keep]
        t.add(k_room, k_room, a_room)  # intake sinks
        if spill[r] > 0:  # zone supply spilling out through the gaps in front of this rack
            t.add(k_room[:, None], pl[cz][None, :], -spill[r] / len(k_room) * wz[None, :])
        w_r.append(np.full(len(src_idx), r))
        w_c.append(src_idx)
        w_v.append(src_w)
        cout = cells_of.cout[r]
        tgt = room_id[cout]
        m = np.full(len(cout), (1 - h_frac[r]) * v_r[r] / len(cout))
        if hot and h_frac[r] > 0:
            tgt = np.append(tgt, rn)
            m = np.append(m, h_frac[r] * v_r[r])
        keep = m > 0
        tgt, m = tgt[keep], m[keep]
        t.add(tgt[:, None], src_idx[None, :], -m[:, None] * src_w[None, :])
        b_r.append(tgt)
        b_c.append(np.full(len(tgt), r))
        b_v.append(m / (AIR_VOLUMETRIC_HEAT_J_M3_K * v_r[r]))
    # cooling units
    e_r, e_c, e_v = [], [], []
    m_r: list[np.ndarray | list] = []  # unit rows: arrays per return disc, [c] for a duct
    m_c: list[np.ndarray | list] = []
    m_v: list[np.ndarray | list] = []
    for c in range(n_c):
        if v_c[c] <= 0:
            continue
        cells_c = grid.cooling_cells[c]
        ret_c = room_id[top + cells_c]
        draw = (v_c[c] - duct_c[c]) / len(cells_c)
        t.add(ret_c, ret_c, np.full(len(cells_c), draw))
        if (jet := jets[c]) is not None:  # supply where the jet ends, with the air it entrained
            k_end, k_path = room_id[jet.end_cells], room_id[jet.path_cells]
            t.add(k_path, k_path, jet.entrained_m3_s * jet.path_weight)
            t.add(k_end[:, None], k_path[None, :], -jet.end_path_m3_s())
            e_r.append(k_end)
            e_c.append(np.full(len(k_end), c))
            e_v.append(v_c[c] * jet.end_weight)
        else:
            e_r.append(pl[cells_c])
            e_c.append(np.full(len(cells_c), c))
            e_v.append(np.full(len(cells_c), v_c[c] / len(cells_c)))
        m_r.append(np.full(len(cells_c), c))
        m_c.append(ret_c)
        m_v.append(np.full(len(cells_c), draw / v_c[c]))
        if hot and duct_c[c] > 0:
            m_r.append([c])
            m_c.append([rn])
            m_v.append([duct_c[c] / v_c[c]])
    if hot:
        t.add([rn], [rn], [ducted if ducted > 0 else 1.0])

    def coo(rows, cols, vals, shape):
        if not rows:
            return sp.csr_matrix(shape)
        return sp.csr_matrix(
            (np.concatenate(vals).astype(float), (np.concatenate(rows), np.concatenate(cols))), shape=shape
        )

    cat = np.concatenate
    return _FixedPart(
        grid=grid, nz=nz, room_id=room_id, n_room=n_room, n_unknowns=n_u, v_c=v_c, duct_c=duct_c, p=p,
        q_floor=q_floor, plenum_source=s_p - q_enc, s_enc=s_enc, room_share=room_share, s_room=s_room,
        pins=pins, face=(fi, fj, fax, ri, rj, w_face), potential_lu=potential_lu,
        plenum_face=(pi, pj, pax, f_plenum), heat_r=cat(t.r), heat_c=cat(t.c), heat_v=cat(t.v),
        E=coo(e_r, e_c, e_v, (n_u, n_c)), B=coo(b_r, b_c, b_v, (n_u, n_r)), W=coo(w_r, w_c, w_v, (n_r, n_u)),
        M=coo(m_r, m_c, m_v, (n_c, n_u)),
    )


_PLENUM_MEMO: OrderedDict[bytes, tuple] = OrderedDict()


def _read_only(*arrays: np.ndarray) -> tuple:
    """The arrays, made read-only (kept per layout and shared by every fixed part of it)."""
    for a in arrays:
        a.setflags(write=False)
    return arrays


def _plenum_layout(geometry_key: bytes, g: HallGeometry, grid: HallGrid, cells_of: _RackCells,
                   enclosed: np.ndarray, fluid: np.ndarray) -> tuple:
    """The plenum's layout, kept per process by the geometry's digest (the last 16): (open
    conductance of each plan cell after its contained aisle took its tiles, the enclosures'
    conductance likewise, the contained aisle over each cell, the lateral conductance k, the
    plan faces (i, j, axis), the operator k L + diag(G)). Everything here is the layout's:
    every airflow knot of a hall has the same (the plenum's sources are the running units')."""
    def make():
        nx, ny, h = grid.nx, grid.ny, grid.cell_m
        n = nx * ny
        g_open = np.zeros(n)
        for cells in grid.tile_cells:
            if len(cells):
                np.add.at(g_open, cells, 1.0 / len(cells))
        zone = cells_of.zone
        aisle = np.full(n, -1)  # the contained aisle over each plan cell (containment.py)
        for z, cz in cells_of.zone_cells.items() if g.containment == "cold_aisle" else ():
            aisle[cz] = z
        tiled = np.isin(zone, aisle[(aisle >= 0) & (g_open > 0)])  # racks whose contained aisle has tiles (tile_xy_m)
        g_enc = np.zeros(n)  # an enclosure opens one tile onto the plenum per rack (its intake cells), unless tiled
        for r in np.flatnonzero(enclosed & ~tiled).tolist():
            np.add.at(g_enc, grid.intake_cells[r], 1.0 / len(grid.intake_cells[r]))
        n_tiles = g_open.sum() + g_enc.sum()
        overhead = g.supply == "overhead"
        if overhead and n_tiles == 0:
            raise ValueError("overhead supply needs diffuser positions (tile_xy_m) or racks with open intakes")
        lf = g.floor_leakage_fraction
        # per floor cell: the plenum is the plan, whatever the room's layers (not n_room)
        g_leak = lf / (1 - lf) * n_tiles / fluid.sum() if n_tiles > 0 else 1.0
        if not overhead:
            g_open = g_open + np.where(fluid, g_leak, 0.0)
        # overhead ducts: a stiff supply network, every diffuser at the same pressure
        spread = g.plenum_spread_m if not overhead else 20.0 * max(g.width_m, g.depth_m)
        k_lat = (g_open.sum() + g_enc.sum()) / n * (spread / h) ** 2
        pi, pj, pax = _grid_faces(nx, ny, np.ones(n, bool))
        a_p = (k_lat * _laplacian(n, pi, pj) + sp.diags(g_open + g_enc)).tocsc()
        g_enc, g_open = np.where(aisle >= 0, g_enc + g_open, g_enc), np.where(aisle >= 0, 0.0, g_open)  # into the aisle
        return (*_read_only(g_open, g_enc, aisle), k_lat, *_read_only(pi, pj, pax), a_p)
    return _kept(_PLENUM_MEMO, geometry_key, make, 16)


_FACE_MEMO: OrderedDict[bytes, tuple] = OrderedDict()


def _room_faces(geometry_key: bytes, nx: int, ny: int, fluid3: np.ndarray, nz: int, room_id: np.ndarray,
                h: float, dz: float) -> tuple:
    """(i, j, axis) of the room's faces in flat 3-D cells, (i, j) in room unknowns and each
    face's "conductance" area / distance [m] (h dz sideways, h^2 / dz vertically): the layout's,
    kept per process by the geometry's digest (the last 16)."""
    def make():
        fi, fj, fax = _grid_faces(nx, ny, fluid3, nz)
        ri, rj = room_id[fi], room_id[fj]
        # face "conductance" area / distance: h dz / h sideways, h^2 / dz vertically [m]
        w_face = np.where(fax == 2, h * h / dz, dz)
        return _read_only(fi, fj, fax, ri, rj, w_face)
    return _kept(_FACE_MEMO, geometry_key, make, 16)


def _ordering(geometry: HallGeometry) -> str:
    """Column ordering for SuperLU: the power-law operator is structurally symmetric
    (minimum degree on A^T + A fills least); QUICK's upwind-biased stencil is not."""
    return "MMD_AT_PLUS_A" if geometry.scheme == "power_law" else "COLAMD"


def steady_field(geometry: HallGeometry, rack_heat_w, rack_airflow_m3_s, cooling_active=None) -> xr.Dataset:
    """Full steady solve: room temperature and velocity on the grid, for the 3-D viewer.

    Returns an xarray Dataset with coordinates x_m (nx), y_m (ny) [m] (cell centres),
    z_m (layers, only when ``n_layers`` > 1), ``rack`` and ``cooling_unit``, and variables:
    temperature ([z_m,] y_m, x_m) [C] of room air (NaN inside racks / obstacles),
    velocity (component, [z_m,] y_m, x_m) [m/s] cell-centred room air velocity (x, y[, z]),
    speed ([z_m,] y_m, x_m) [m/s], plenum_temperature [C], floor_airflow (y_m, x_m) [m3/s] through
    tiles and leaks, solid (y_m, x_m) bool, rack_inlet_temp / rack_exhaust_temp (rack)
    [C], cooling_return_temp (cooling_unit) [C], cooling_heat_removed (cooling_unit) [W].
    Velocity = face flux / (cell_m * height_m): the room is one layer of the hall height.
    """
    prob = build_problem(geometry, rack_airflow_m3_s, cooling_active)
    heat = np.broadcast_to(np.asarray(rack_heat_w, float), (geometry.n_racks,))
    temp = prob.solve(heat)
    return _field_dataset(prob, temp, heat)


def _field_dataset(prob: HallProblem, temp: np.ndarray, heat: np.ndarray) -> xr.Dataset:
    import xarray as xr  # here, not at module level: `import twin.scenario` need not load xarray

    g, grid = prob.geometry, prob.grid
    nx, ny, h = grid.nx, grid.ny, grid.cell_m
    n = nx * ny
    nz = int(g.n_layers)
    dz = g.height_m / nz
    fluid = prob.room_id >= 0
    t_room = np.full(nz * n, np.nan)
    t_room[fluid] = temp[: prob.n_room]
    t_plen = temp[prob.n_room : prob.n_room + n]
    ri, rj, fax, flux = prob.room_face
    cell_of = np.flatnonzero(fluid)
    vel = np.zeros((3, nz * n))
    for ax, area in ((0, h * dz), (1, h * dz), (2, h * h)):
        sel = fax == ax
        np.add.at(vel[ax], cell_of[ri[sel]], 0.5 * flux[sel] / area)
        np.add.at(vel[ax], cell_of[rj[sel]], 0.5 * flux[sel] / area)
    vel[:, ~fluid] = np.nan
    layered = nz > 1
    dims = ("z_m", "y_m", "x_m") if layered else ("y_m", "x_m")
    shape = (nz, ny, nx) if layered else (ny, nx)
    n_comp = 3 if layered else 2
    velocity = vel[:n_comp].reshape((n_comp,) + shape)
    speed = np.sqrt((vel[:n_comp] ** 2).sum(axis=0)).reshape(shape)
    t_in = prob.inlet_temp_c(temp, heat)
    v_r = prob.rack_airflow_m3_s
    t_ret = prob.M @ temp
    v_c = prob.cooling_airflow_m3_s
    removed = AIR_VOLUMETRIC_HEAT_J_M3_K * v_c * (t_ret - g.cooling_supply_temp_c)
    t_ret = np.where(v_c > 0, t_ret, np.nan)
    x = (np.arange(nx) + 0.5) * h
    y = (np.arange(ny) + 0.5) * h
    plan = (ny, nx)
    solid = (~fluid).reshape(shape)
    ds = xr.Dataset(
        {
            "temperature": (dims, t_room.reshape(shape), {"units": "degC", "long_name": "room air temperature"}),
            "velocity": (
                ("component",) + dims,
                velocity,
                {"units": "m/s", "long_name": "room air velocity (cell centred)"},
            ),
            "speed": (dims, speed, {"units": "m/s", "long_name": "room air speed"}),
            "plenum_temperature": (("y_m", "x_m"), t_plen.reshape(plan), {"units": "degC", "long_name": "raised-floor plenum air temperature"}),
            "floor_airflow": (("y_m", "x_m"), prob.floor_flow_m3_s.reshape(plan), {"units": "m3/s", "long_name": "airflow from plenum into room through tiles and leaks"}),
            "solid": (dims, solid, {"long_name": "rack body or obstacle"}),
            "rack_inlet_temp": (("rack",), t_in, {"units": "degC", "long_name": "rack inlet air temperature"}),
            "rack_exhaust_temp": (("rack",), t_in + heat / (AIR_VOLUMETRIC_HEAT_J_M3_K * v_r), {"units": "degC", "long_name": "rack exhaust air temperature"}),
            "rack_heat": (("rack",), heat, {"units": "W", "long_name": "rack heat load"}),
            "cooling_return_temp": (("cooling_unit",), t_ret, {"units": "degC", "long_name": "cooling unit return air temperature"}),
            "cooling_heat_removed": (("cooling_unit",), removed, {"units": "W", "long_name": "heat removed by cooling unit"}),
        },
        coords={
            "x_m": ("x_m", x, {"units": "m", "long_name": "x (hall width)"}),
            "y_m": ("y_m", y, {"units": "m", "long_name": "y (hall depth)"}),
            "component": ("component", ["x", "y", "z"][:n_comp]),
            "rack": ("rack", np.arange(g.n_racks)),
            "cooling_unit": ("cooling_unit", np.arange(g.n_cooling)),
            **({"z_m": ("z_m", (np.arange(nz) + 0.5) * dz, {"units": "m", "long_name": "height above floor"})}
               if layered else {}),
        },
        attrs={"cell_m": h, "height_m": g.height_m, "containment": g.containment,
               "model": "2-D plan: Darcy plenum + potential-flow room + power-law advection-diffusion"},
    )
    return ds

"""The render child: draw a hall scene description with VTK alone and write the picture.

Run as a script, never imported by twin (``python vtkdraw.py ...``): it imports the few VTK
modules it draws with, not pyvista, matplotlib, xarray, the simulation, VTK's Python
conveniences or (for a picture) numpy, so that one picture costs what VTK and the OpenGL
driver cost and no more (``twin render``
used 570 MB per PNG in one process; see bench/RESULTS.md). The description is made by
:mod:`twin.viz.drawlist` in the parent: an ``.npz`` of arrays with a JSON ``meta`` entry
(meshes with their colours baked, texts, point labels, colour bars, the camera).

    python vtkdraw.py image SCENE.npz OUT.png|OUT.jpg [RAW.npy] [--remove DIR --say TEXT --since T]
    python vtkdraw.py gltf SCENE.npz OUT.gltf [--remove DIR --say TEXT --since T]
    python vtkdraw.py page SCENE.npz OUT.html [--remove DIR --say TEXT --since T]
    python vtkdraw.py stream OUT.gif|OUT.mp4 FPS      (frames on stdin, see read_frames)

``twin render ... --out hall.png`` hands its process over to this script once the
description is written (``os.execv``, see :func:`twin.viz.drawlist.hand_over`): the
command never holds the run and the OpenGL driver at the same time.

In ``stream`` mode each frame is an 8-byte little-endian length and that many bytes of
``.npz``; a zero length ends the stream. Frames are drawn into one window and written as
they come (GIF by Pillow frame by frame, MP4 through imageio-ffmpeg), so memory does not
grow with the number of frames. Progress is one line ``frame K`` per frame on stdout.
"""

from __future__ import annotations

import ast
import io
import json
import os
import struct
import sys
import zipfile
from array import array
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    import numpy as np

if not os.environ.get("DISPLAY") and "VTK_DEFAULT_OPENGL_WINDOW" not in os.environ:
    os.environ["VTK_DEFAULT_OPENGL_WINDOW"] = "vtkEGLRenderWindow"


def _give_back_freed_memory(threshold_b: int = 64 * 1024) -> None:
    """glibc only: blocks over ``threshold_b`` get their own mapping, returned to the system
    when freed, and the heap's free top is trimmed at once. By default glibc raises its
    mapping threshold to the largest block freed so far (up to 32 MB), so the driver's and
    the shader compiler's temporary buffers stay in the heap after they are freed (4-7 MB
    of the peak for Blue Vela, bench/RESULTS.md "Memory per hall PNG")."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(-3, threshold_b)   # M_MMAP_THRESHOLD
        libc.mallopt(-1, 0)             # M_TRIM_THRESHOLD
    except (OSError, AttributeError):   # not glibc: its own allocator's defaults
        pass


def _without_vtk_python_overrides() -> None:
    """VTK's Python conveniences (numpy-backed array mixins, data-model overrides, pickling)
    load with its core modules and import numpy and about 130 more modules; the child calls
    the C++ classes only, so it skips them (22 MB of the peak, bench/RESULTS.md)."""
    import vtkmodules

    mapper = getattr(vtkmodules, "MODULE_MAPPER", None)
    if isinstance(mapper, dict):
        mapper.clear()


if __name__ == "__main__":   # the child's own process only, never a process that imports this file
    _give_back_freed_memory()
    _without_vtk_python_overrides()

import vtkmodules.vtkRenderingFreeType  # noqa: E402,F401  (text rendering)
import vtkmodules.vtkRenderingOpenGL2  # noqa: E402,F401  (the OpenGL back end)
from vtkmodules.vtkCommonCore import (  # noqa: E402
    vtkDoubleArray,
    vtkIdTypeArray,
    vtkLookupTable,
    vtkPoints,
    vtkStringArray,
    vtkUnsignedCharArray,
)
from vtkmodules.vtkCommonDataModel import vtkCellArray, vtkImageData, vtkPolyData  # noqa: E402
from vtkmodules.vtkRenderingAnnotation import vtkCornerAnnotation, vtkScalarBarActor  # noqa: E402
from vtkmodules.vtkRenderingCore import (  # noqa: E402
    vtkActor,
    vtkActor2D,
    vtkLightKit,
    vtkPolyDataMapper,
    vtkRenderer,
    vtkRenderWindow,
    vtkTextActor,
    vtkTextProperty,
)

#: corner of a vtkCornerAnnotation by name (pyvista's names)
CORNERS = {"lower_left": 0, "lower_right": 1, "upper_left": 2, "upper_right": 3}
#: the six faces of a box as indices of its eight corners (outward, counter-clockwise)
_FACES = ((0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7))
#: .npy type strings the description uses, as array typecodes (see drawlist.pack)
_TYPECODES = {"<f8": "d", "<i8": "q", "|u1": "B"}


class Arr:
    """One array of the description as the ``.npy`` member of the ``.npz`` holds it: its
    shape and its bytes in C order (no numpy in the child: VTK copies the bytes)."""

    def __init__(self, shape: tuple[int, ...], typecode: str, data: bytes):
        self.shape, self.typecode, self.data = shape, typecode, data

    def __len__(self) -> int:
        return self.shape[0] if self.shape else 1

    def values(self) -> array:
        out = array(self.typecode)
        out.frombytes(self.data)
        return out


def read_npy(blob: bytes) -> Arr | str:
    """An ``.npy`` (format 1-3) as :class:`Arr`, or as ``str`` for a unicode scalar."""
    if blob[:6] != b"\x93NUMPY":
        raise ValueError("not an .npy array")
    if blob[6] == 1:
        (n,), start = struct.unpack("<H", blob[8:10]), 10
    else:
        (n,), start = struct.unpack("<I", blob[8:12]), 12
    head = ast.literal_eval(blob[start:start + n].decode("latin1"))
    data = blob[start + n:]
    descr, shape = head["descr"], tuple(head["shape"])
    if descr.startswith("<U"):
        return data.decode("utf-32-le").rstrip("\0")
    if descr not in _TYPECODES or head["fortran_order"]:
        raise ValueError(f"unexpected array type {descr} (fortran order {head['fortran_order']})")
    return Arr(shape, _TYPECODES[descr], data)


def _vtk_array(cls, data: bytes, n_components: int, n_tuples: int):
    arr = cls()
    arr.SetNumberOfComponents(n_components)
    arr.SetNumberOfTuples(n_tuples)
    if n_tuples * n_components:
        memoryview(arr).cast("B")[:] = data
    return arr


def rgb01(colour: str) -> tuple[float, float, float]:
    """'#rrggbb' as floats 0..1."""
    c = colour.lstrip("#")
    return (int(c[0:2], 16) / 255.0, int(c[2:4], 16) / 255.0, int(c[4:6], 16) / 255.0)


def _points(data: bytes, n: int) -> vtkPoints:
    pts = vtkPoints()
    pts.SetData(_vtk_array(vtkDoubleArray, data, 3, n))
    return pts


def _cells(conn: bytes, n: int, size: int) -> vtkCellArray:
    cells = vtkCellArray()
    offsets = array("q", range(0, n * size + 1, size)).tobytes()
    cells.SetData(_vtk_array(vtkIdTypeArray, offsets, 1, n + 1), _vtk_array(vtkIdTypeArray, conn, 1, n * size))
    return cells


def _cell_rgb(pd: vtkPolyData, data: bytes, n: int) -> None:
    arr = _vtk_array(vtkUnsignedCharArray, data, 3, n)
    arr.SetName("rgb")
    pd.GetCellData().SetScalars(arr)


def box_polydata(bounds: Arr, rgb: Arr | None = None) -> vtkPolyData:
    """Six quads per box of ``bounds`` (N, 6) [m]; ``rgb`` (N, 3) uint8 colours per box.
    The corners are in the order of ``twin.viz.geometry.box_corners`` (this script imports
    nothing of twin, so it repeats those eight lines)."""
    b = bounds.values()
    n = len(b) // 6
    corners = array("d")
    conn = array("q")
    for k in range(n):
        x0, x1, y0, y1, z0, z1 = b[6 * k:6 * k + 6]
        corners.extend((x0, y0, z0, x1, y0, z0, x1, y1, z0, x0, y1, z0,
                        x0, y0, z1, x1, y0, z1, x1, y1, z1, x0, y1, z1))
        conn.extend(8 * k + i for face in _FACES for i in face)
    pd = vtkPolyData()
    pd.SetPoints(_points(corners.tobytes(), 8 * n))
    pd.SetPolys(_cells(conn.tobytes(), 6 * n, 4))
    if rgb is not None:
        c = rgb.data
        _cell_rgb(pd, b"".join(c[3 * k:3 * k + 3] * 6 for k in range(n)), 6 * n)
    return pd


def quad_polydata(points: Arr, quads: Arr, rgb: Arr | None = None) -> vtkPolyData:
    pd = vtkPolyData()
    pd.SetPoints(_points(points.data, len(points)))
    pd.SetPolys(_cells(quads.data, len(quads), 4))
    if rgb is not None:
        _cell_rgb(pd, rgb.data, len(rgb))
    return pd


def line_polydata(points: Arr, segments: Arr) -> vtkPolyData:
    pd = vtkPolyData()
    pd.SetPoints(_points(points.data, len(points)))
    pd.SetLines(_cells(segments.data, len(segments), 2))
    return pd


def streamline_polydata(arrays, m: dict) -> vtkPolyData:
    """Streamlines of a plan-view velocity field (vtkStreamTracer, both directions)."""
    from vtkmodules.vtkFiltersFlowPaths import vtkStreamTracer

    u, v = arrays[m["u"]], arrays[m["v"]]
    ny, nx = u.shape
    img = vtkImageData()
    img.SetDimensions(nx, ny, 1)
    img.SetSpacing(m["spacing"], m["spacing"], 1.0)
    img.SetOrigin(*m["origin"])
    xyz = array("d", bytes(24 * nx * ny))   # (u, v, 0) per grid point
    xyz[0::3], xyz[1::3] = u.values(), v.values()
    vel = _vtk_array(vtkDoubleArray, xyz.tobytes(), 3, nx * ny)
    vel.SetName("velocity")
    img.GetPointData().SetVectors(vel)
    seeds = vtkPolyData()
    seeds.SetPoints(_points(arrays[m["seeds"]].data, len(arrays[m["seeds"]])))
    st = vtkStreamTracer()
    st.SetInputData(img)
    st.SetSourceData(seeds)
    st.SetInputArrayToProcess(0, 0, 0, 0, "velocity")
    st.SetIntegrationDirectionToBoth()
    st.SetComputeVorticity(False)
    st.SetMaximumPropagation(m["max_length"])
    st.SetInitialIntegrationStep(m["initial_step"])
    st.SetIntegrationStepUnit(2)   # cell length units, as pyvista's default
    st.SetMaximumNumberOfSteps(m["max_steps"])
    st.SetTerminalSpeed(m["terminal_speed"])
    st.SetMinimumIntegrationStep(0.01)
    st.SetMaximumIntegrationStep(1.0)
    st.SetIntegratorTypeToRungeKutta45()
    st.SetMaximumError(1e-6)
    st.Update()
    out = vtkPolyData()
    out.ShallowCopy(st.GetOutput())
    return out


def lookup_table(colours: Arr, clim) -> vtkLookupTable:
    """A lookup table of (n, 3) uint8 colours over ``clim``."""
    lut = vtkLookupTable()
    n = len(colours)
    c = colours.data
    lut.SetNumberOfTableValues(n)
    lut.SetRange(float(clim[0]), float(clim[1]))
    for i in range(n):
        lut.SetTableValue(i, c[3 * i] / 255.0, c[3 * i + 1] / 255.0, c[3 * i + 2] / 255.0, 1.0)
    lut.Build()
    return lut


def _text_property(prop: vtkTextProperty, colour: str, size: int | None = None, bold: bool = False):
    prop.SetColor(*rgb01(colour))
    prop.SetFontFamilyToArial()
    prop.SetBold(bold)
    prop.SetItalic(False)
    prop.SetShadow(False)
    if size:
        prop.SetFontSize(int(size))
    return prop


def add_mesh(ren: vtkRenderer, pd: vtkPolyData, m: dict) -> None:
    mapper = vtkPolyDataMapper()
    mapper.SetInputData(pd)
    actor = vtkActor()
    prop = actor.GetProperty()
    if m.get("rgb"):
        mapper.SetColorModeToDirectScalars()
        mapper.SetScalarModeToUseCellData()
        mapper.ScalarVisibilityOn()
    else:
        mapper.ScalarVisibilityOff()
        prop.SetColor(*rgb01(m["color"]))
    actor.SetMapper(mapper)
    prop.SetOpacity(float(m.get("opacity", 1.0)))
    prop.SetLineWidth(float(m.get("line_width", 1.0)))
    if m.get("edges"):
        prop.EdgeVisibilityOn()
        prop.SetEdgeColor(*rgb01(m["edges"]))
    ren.AddActor(actor)


def add_labels(ren: vtkRenderer, points: Arr, m: dict) -> None:
    """Names at 3-D points, always visible (vtkLabelPlacementMapper, as pyvista's
    ``add_point_labels``)."""
    from vtkmodules.vtkRenderingLabel import vtkLabelPlacementMapper, vtkPointSetToLabelHierarchy

    pd = vtkPolyData()
    pd.SetPoints(_points(points.data, len(points)))
    names = vtkStringArray()
    names.SetName("labels")
    for n in m["names"]:
        names.InsertNextValue(str(n))
    pd.GetPointData().AddArray(names)
    hier = vtkPointSetToLabelHierarchy()
    hier.SetInputData(pd)
    hier.SetLabelArrayName("labels")
    _text_property(hier.GetTextProperty(), m["color"], m["font_size"], m.get("bold", True))
    mapper = vtkLabelPlacementMapper()
    mapper.SetInputConnection(hier.GetOutputPort())
    if m.get("shape") == "rounded_rect":
        mapper.SetShapeToRoundedRect()
        mapper.SetStyleToFilled()
        mapper.SetBackgroundColor(*rgb01(m["shape_color"]))
        mapper.SetBackgroundOpacity(float(m["shape_opacity"]))
        mapper.SetMargin(3)
    else:
        mapper.SetShapeToNone()
    actor = vtkActor2D()
    actor.SetMapper(mapper)
    ren.AddViewProp(actor)


def add_scalar_bar(ren: vtkRenderer, colours: Arr, m: dict) -> None:
    bar = vtkScalarBarActor()
    bar.SetLookupTable(lookup_table(colours, m["clim"]))
    bar.SetMaximumNumberOfColors(len(colours))
    bar.SetNumberOfLabels(int(m.get("n_labels", 5)))
    bar.SetDrawTickLabels(int(m.get("n_labels", 5)) > 0)
    bar.SetOrientationToVertical()
    bar.SetPosition(*m["position"])
    bar.SetWidth(m["width"])
    bar.SetHeight(m["height"])
    bar.SetLabelFormat(m.get("fmt", "%.1f"))
    bar.SetUnconstrainedFontSize(True)
    bar.SetAnnotationTextScaling(False)
    bar.SetTitle(m["title"])
    _text_property(bar.GetLabelTextProperty(), m["color"], m["label_font_size"])
    _text_property(bar.GetAnnotationTextProperty(), m["color"], m["label_font_size"])
    title = _text_property(bar.GetTitleTextProperty(), m["color"], m["title_font_size"])
    title.SetJustificationToCentered()
    bar.SetDrawFrame(False)
    ren.AddViewProp(bar)


def add_text(ren: vtkRenderer, m: dict) -> None:
    if "corner" in m:   # as pyvista's add_text with a named position
        ann = vtkCornerAnnotation()
        ann.SetLinearFontScaleFactor(int(m["font_size"]) // 2)
        ann.SetText(CORNERS[m["corner"]], m["text"])
        _text_property(ann.GetTextProperty(), m["color"])
        ren.AddViewProp(ann)
        return
    actor = vtkTextActor()
    actor.SetInput(m["text"])
    actor.SetPosition(*m["position"])
    _text_property(actor.GetTextProperty(), m["color"], int(m["font_size"] * 2))
    ren.AddViewProp(actor)


def draw(ren: vtkRenderer, arrays, meta: dict) -> None:
    """Fill ``ren`` with everything the description names (in order)."""
    for m in meta["meshes"]:
        kind = m["kind"]
        rgb = arrays[m["rgb"]] if m.get("rgb") else None
        if kind == "boxes":
            pd = box_polydata(arrays[m["bounds"]], rgb)
        elif kind == "quads":
            pd = quad_polydata(arrays[m["points"]], arrays[m["quads"]], rgb)
        elif kind == "lines":
            pd = line_polydata(arrays[m["points"]], arrays[m["segments"]])
        elif kind == "streamlines":
            pd = streamline_polydata(arrays, m)
        else:
            raise ValueError(f"unknown mesh kind {kind!r}")
        if pd.GetNumberOfCells():
            add_mesh(ren, pd, m)
    for m in meta["scalar_bars"]:
        add_scalar_bar(ren, arrays[m["colors"]], m)
    for m in meta["labels"]:
        add_labels(ren, arrays[m["points"]], m)
    for m in meta["texts"]:
        add_text(ren, m)


def set_camera(ren: vtkRenderer, cam: dict) -> None:
    c = ren.GetActiveCamera()
    c.SetFocalPoint(*cam["focal"])
    c.SetPosition(*cam["position"])
    c.SetViewUp(*cam["up"])
    ren.ResetCamera(*cam["bounds"])
    c.Zoom(float(cam["zoom"]))
    ren.ResetCameraClippingRange()


def new_window(size, background: str) -> tuple[vtkRenderWindow, vtkRenderer]:
    win = vtkRenderWindow()
    win.SetOffScreenRendering(1)
    win.SetMultiSamples(0)   # FXAA below: MSAA x8 holds eight colour and depth samples per pixel
    win.SetSize(int(size[0]), int(size[1]))
    ren = vtkRenderer()
    ren.SetBackground(*rgb01(background))
    ren.UseFXAAOn()
    # translucent parts (enclosures, the slice) blended in drawing order: order-independent
    # translucency holds floating-point copies of the frame (about 18 MB more at 1280x800)
    ren.UseOITOff()
    win.AddRenderer(ren)
    vtkLightKit().AddLightsToRenderer(ren)
    ren.LightFollowCameraOn()
    return win, ren


def pixels(win: vtkRenderWindow) -> vtkUnsignedCharArray:
    """The window's RGB pixels as VTK holds an image: bottom row first (no copy made)."""
    w, h = win.GetSize()
    buf = vtkUnsignedCharArray()
    win.GetPixelData(0, 0, w - 1, h - 1, 0, buf, 0)
    return buf


def rgb_view(buf: vtkUnsignedCharArray, size) -> np.ndarray:
    """(H, W, 3) uint8 view of :func:`pixels`, top row first (a view, not a copy; imports
    numpy, which only an animation's frames need)."""
    from vtkmodules.util.numpy_support import vtk_to_numpy

    w, h = int(size[0]), int(size[1])
    return vtk_to_numpy(buf).reshape(h, w, 3)[::-1]


def grab(win: vtkRenderWindow) -> np.ndarray:
    """(H, W, 3) uint8 picture of the window, top row first (a copy: for a frame kept
    while the window draws the next one)."""
    import numpy as np

    return np.ascontiguousarray(rgb_view(pixels(win), win.GetSize()))


def save_npy(buf: vtkUnsignedCharArray, size, path: str) -> None:
    """:func:`pixels` as an (H, W, 3) uint8 ``.npy`` (format 1.0), top row first, written
    row by row without numpy."""
    w, h = int(size[0]), int(size[1])
    head = f"{{'descr': '|u1', 'fortran_order': False, 'shape': ({h}, {w}, 3), }}"
    head += " " * (63 - (10 + len(head)) % 64) + "\n"      # magic + header a multiple of 64 bytes
    rows = memoryview(cast(Any, buf)).cast("B")   # a VTK array is a buffer
    with open(path, "wb") as fh:
        fh.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode("latin1"))
        for r in range(h - 1, -1, -1):
            fh.write(rows[3 * w * r:3 * w * (r + 1)])


def load(blob) -> tuple[dict, dict]:
    """(meta, arrays) of a description (``.npz`` path or file object), read without numpy."""
    with zipfile.ZipFile(blob) as z:
        arrays = {name[:-4]: read_npy(z.read(name)) for name in z.namelist()}
    meta = arrays.pop("meta")
    assert isinstance(meta, str), "the description's meta is a JSON string"
    return json.loads(meta), arrays


def render_frame(win, ren, meta, arrays) -> vtkUnsignedCharArray:
    """Draw a description and return :func:`pixels`. ``arrays`` is emptied once VTK holds
    its own copies of them (before the OpenGL driver allocates its buffers)."""
    ren.RemoveAllViewProps()
    draw(ren, arrays, meta)
    arrays.clear()
    set_camera(ren, meta["camera"])
    win.Render()
    return pixels(win)


def write_image(buf: vtkUnsignedCharArray, size, out: str) -> None:
    """Write :func:`pixels` (bottom row first, as vtkImageData) as PNG or JPEG, from the
    buffer itself: no flipped or contiguous copy of the picture."""
    from vtkmodules.vtkIOImage import vtkJPEGWriter, vtkPNGWriter

    data = vtkImageData()
    data.SetDimensions(int(size[0]), int(size[1]), 1)
    data.GetPointData().SetScalars(buf)
    writer = vtkJPEGWriter() if out.lower().endswith((".jpg", ".jpeg")) else vtkPNGWriter()
    writer.SetFileName(out)
    writer.SetInputData(data)
    writer.Write()


def export_gltf(meta: dict, arrays: dict, out: str) -> None:
    """Write the description's meshes as glTF 2.0 with inline buffers (vtkGLTFExporter, as
    pyvista's ``export_gltf``: the scene turned to glTF's y-up, colours per cell as the
    mapper gives them). No labels, texts or colour bars (glTF has no text), and no picture
    is drawn: the exporter reads the actors, so no OpenGL context is made."""
    from vtkmodules.vtkIOExport import vtkGLTFExporter

    win, ren = new_window(meta["size"], meta["background"])
    draw(ren, arrays, {**meta, "labels": [], "texts": [], "scalar_bars": []})
    arrays.clear()
    set_camera(ren, meta["camera"])
    actors = ren.GetActors()
    actors.InitTraversal()
    for _ in range(actors.GetNumberOfItems()):
        actor = actors.GetNextActor()
        actor.RotateX(-90)
        actor.RotateZ(-90)
    exporter = vtkGLTFExporter()
    exporter.SetRenderWindow(win)
    exporter.SetFileName(out)
    exporter.SetInlineData(True)
    exporter.SetSaveNormal(True)
    exporter.Update()


def export_page(meta: dict, arrays: dict, out: str) -> None:
    """Write the description's meshes as an interactive vtk.js page that works offline:
    trame-vtk's serializers turn the render window into a vtk.js scene (as pyvista's trame
    exporter does, without its server), and its viewer template carries it as one HTML
    file. ``meta["page_overlay"]`` (title, legend, caption) goes in before ``</body>``. No
    picture is drawn, so no OpenGL context is made; this mode imports numpy (the
    serializers hash and encode the arrays with it)."""
    import zipfile as _zip

    from trame_vtk.modules.vtk.serializers import (
        SynchronizationContext,
        extract_array_hash,
        initialize_serializers,
        reference_id,
        serialize,
    )
    from trame_vtk.tools.vtksz2html import write_html

    win, ren = new_window(meta["size"], meta["background"])
    draw(ren, arrays, {**meta, "labels": [], "texts": [], "scalar_bars": []})
    arrays.clear()
    set_camera(ren, meta["camera"])
    initialize_serializers()
    context = SynchronizationContext()
    context.set_ignore_last_dependencies(True)
    camera = ren.GetActiveCamera()
    scene = serialize(None, win, "1", context, 1)
    scene["extra"] = {"vtkRefId": reference_id(win), "centerOfRotation": camera.GetFocalPoint(),
                      "camera": reference_id(camera)}
    hashes = {e["hash"]: dict(**e, content=context.get_cached_data_array(e["hash"], False))
              for e in extract_array_hash(scene)}
    packed = io.BytesIO()
    with _zip.ZipFile(packed, "a") as z:
        z.writestr("index.json", json.dumps({"hashes": hashes, "scene": scene}), compress_type=_zip.ZIP_DEFLATED)
    del hashes, scene
    page = io.StringIO()
    write_html(packed.getvalue(), page)
    del packed
    text = page.getvalue()
    # no favicon fetched from the web: the page stays offline
    text = text.replace("https://kitware.github.io/vtk-js/icon/favicon-", "data:,")
    overlay = meta.get("page_overlay", "")
    i = text.rfind("</body>")
    text = (text[:i] + overlay + text[i:]) if i >= 0 else text + overlay
    tmp = os.path.join(os.path.dirname(os.path.abspath(out)), f".{os.path.basename(out)}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.replace(tmp, out)


class GifStream:
    """An animated GIF written frame by frame (Pillow's GIF header and frame encoders):
    each frame has its own 256-colour palette, only the part that changed from the frame
    before is stored, and nothing but the previous frame is kept."""

    def __init__(self, path: str, fps: float):
        self.fp = open(path, "wb")  # noqa: SIM115  (closed in close())
        self.duration_ms = int(round(1000.0 / fps))
        self.prev: np.ndarray | None = None

    def append(self, rgb: np.ndarray) -> None:
        import numpy as np
        from PIL import GifImagePlugin, Image

        rgb = np.ascontiguousarray(rgb)   # kept as the previous frame: a copy of a view

        x0, y0 = 0, 0
        crop = rgb
        if self.prev is not None:
            diff = np.any(rgb != self.prev, axis=2)
            if diff.any():
                ys, xs = np.flatnonzero(diff.any(axis=1)), np.flatnonzero(diff.any(axis=0))
                y0, y1, x0, x1 = ys[0], ys[-1] + 1, xs[0], xs[-1] + 1
            else:
                y0, y1, x0, x1 = 0, 1, 0, 1
            crop = rgb[y0:y1, x0:x1]
        im = Image.fromarray(np.ascontiguousarray(crop)).quantize(256, method=Image.Quantize.MEDIANCUT)
        if self.prev is None:
            header, _ = GifImagePlugin.getheader(im, info={"loop": 0, "duration": self.duration_ms})
            self.fp.write(b"".join(header))
        for chunk in GifImagePlugin.getdata(im, (int(x0), int(y0)), duration=self.duration_ms,
                                            disposal=1, include_color_table=True):
            self.fp.write(chunk)
        self.prev = rgb

    def close(self) -> None:
        self.fp.write(b";")
        self.fp.close()


class Mp4Stream:
    """An H.264 MP4 written frame by frame through imageio-ffmpeg's encoder pipe."""

    def __init__(self, path: str, fps: float, size):
        import imageio_ffmpeg

        self.gen = imageio_ffmpeg.write_frames(path, (int(size[0]), int(size[1])), fps=fps, quality=7,
                                               macro_block_size=16)
        self.gen.send(None)

    def append(self, rgb: np.ndarray) -> None:
        import numpy as np

        self.gen.send(np.ascontiguousarray(rgb))

    def close(self) -> None:
        self.gen.close()


def read_frames(stream):
    """Frames of the stream: 8-byte little-endian length, then the .npz; 0 ends it."""
    while True:
        head = stream.read(8)
        if len(head) < 8:
            return
        (n,) = struct.unpack("<Q", head)
        if n == 0:
            return
        yield load(io.BytesIO(stream.read(n)))


def main(argv: list[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="vtkdraw.py", description="draw a twin hall scene description")
    sub = ap.add_subparsers(dest="mode", required=True)
    im = sub.add_parser("image", help="one picture")
    gl = sub.add_parser("gltf", help="the meshes as glTF 2.0")
    pg = sub.add_parser("page", help="the meshes as an interactive vtk.js page (offline HTML)")
    for p in (im, gl, pg):
        p.add_argument("scene", help=".npz scene description")
        p.add_argument("out", help={"image": ".png or .jpg", "gltf": ".gltf", "page": ".html"}[p.prog.split()[-1]])
        if p is im:
            p.add_argument("raw", nargs="?", help="also save the pixels as .npy")
        p.add_argument("--remove", help="folder to delete once the description is read (a hand-over)")
        p.add_argument("--say", help="line to print when the file is written")
        p.add_argument("--since", type=float, help="wall-clock start (s since the epoch) for --say's time")
    st = sub.add_parser("stream", help="an animation, frames on stdin")
    st.add_argument("out", help=".gif or .mp4")
    st.add_argument("fps", type=float)
    args = ap.parse_args(argv)
    if args.mode in ("image", "gltf", "page"):
        try:
            meta, arrays = load(args.scene)
        finally:
            if args.remove:
                import shutil
                shutil.rmtree(args.remove, ignore_errors=True)
        if args.mode == "gltf":
            export_gltf(meta, arrays, args.out)
        elif args.mode == "page":
            export_page(meta, arrays, args.out)
        else:
            window, renderer = new_window(meta["size"], meta["background"])
            try:
                buf = render_frame(window, renderer, meta, arrays)
                write_image(buf, window.GetSize(), args.out)
                if args.raw:
                    save_npy(buf, window.GetSize(), args.raw)
            finally:
                window.Finalize()
        if args.say:
            import time
            took = f" in {time.time() - args.since:.1f} s" if args.since else ""
            print(f"{args.say}{took}", flush=True)
        return 0
    win: vtkRenderWindow | None = None
    ren: vtkRenderer | None = None
    writer: GifStream | Mp4Stream | None = None
    try:
        for k, (meta, arrays) in enumerate(read_frames(sys.stdin.buffer)):
            if win is None or ren is None or writer is None:
                win, ren = new_window(meta["size"], meta["background"])
                writer = (Mp4Stream(args.out, args.fps, meta["size"]) if args.out.lower().endswith(".mp4")
                          else GifStream(args.out, args.fps))
            writer.append(rgb_view(render_frame(win, ren, meta, arrays), win.GetSize()))
            print(f"frame {k + 1}", flush=True)
    finally:
        if writer is not None:
            writer.close()
        if win is not None:
            win.Finalize()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Exception as exc:  # one line, not a traceback: the caller shows it
        print(f"error: the render child failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)

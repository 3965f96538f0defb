"""Where the app reaches past pyqtgraph's public surface, in one place.

Each patch here is applied only to the pyqtgraph versions it was checked on (:data:`CHECKED`;
pyproject.toml's bound on pyqtgraph is the same): on any other version pyqtgraph's own
behaviour stays, so a newer release that changed its insides cannot be broken by a patch
written for an older one. To allow a new release, check both patches there (the tests named
in each docstring) and move the bound here and in pyproject.toml together.

This module imports pyqtgraph only where a function uses it: :func:`lazy_qt_mirrors` and
:func:`deferred_parts` run before pyqtgraph's first import (``playground.views`` calls them).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import importlib.util
import os
import re
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt

if TYPE_CHECKING:
    import pyqtgraph as pg

__all__ = ["CHECKED", "checked", "deferred_parts", "deferred_plot_forms",
           "deferred_view_menus", "ignore_text_width", "lazy_qt_mirrors", "lighter_plots",
           "svg_tolerates_close_path", "unchanged_axis_labels_kept", "when_menu_built"]

#: the versions these patches were checked on: from the first (inclusive) up to the second
CHECKED = ((0, 13, 4), (0, 15))


def release(text: str) -> tuple[int, ...]:
    """``0.14.1.dev0`` -> (0, 14, 1): the numbers a version starts with."""
    match = re.match(r"\d+(\.\d+)*", text.strip())
    return tuple(int(n) for n in match.group(0).split(".")) if match else ()


def checked(version: str | None = None) -> bool:
    """Whether ``version`` (pyqtgraph's own by default) is one the patches were checked on."""
    if version is None:
        import pyqtgraph

        version = pyqtgraph.__version__
    numbers = release(version)
    low, high = CHECKED
    return bool(numbers) and low <= numbers < high


def svg_tolerates_close_path() -> None:
    """Let pyqtgraph's SVG exporter read the closed paths newer Qt writes ("... Z").

    pyqtgraph 0.14 expects every token of a path to be an "x,y" pair and fails on "Z"
    (pyqtgraph issue #3485). Qt closes a path only after an explicit line back to its start,
    so the "Z" can be dropped for the coordinate fix-up and put back at the end. Checked by
    tests/playground/test_classroom.py's SVG exports.
    """
    if not checked():
        return
    module: Any = importlib.import_module("pyqtgraph.exporters.SVGExporter")
    original = module.correctCoordinates
    if getattr(original, "_tolerates_close_path", False):
        return

    def correct(node, defs, item, options):
        closed = []
        for element in node.getElementsByTagName("path"):
            tokens = element.getAttribute("d").split()
            if any(t in ("Z", "z") for t in tokens):
                element.setAttribute("d", " ".join(t for t in tokens if t not in ("Z", "z")))
                closed.append(element)
        original(node, defs, item, options)
        for element in closed:
            element.setAttribute("d", element.getAttribute("d").rstrip() + " Z")

    correct._tolerates_close_path = True  # type: ignore[attr-defined]
    module.correctCoordinates = correct


def ignore_text_width(label: pg.LabelItem) -> None:
    """Let ``label`` (a plot title) ask for no width: a long title must not make one plot
    wider than the others (their views are linked and should have equal sizes).

    It replaces the label's ``updateMin``, which writes LabelItem's private ``_sizeHint``
    table. Checked by tests/playground/test_jacobian_view.py's long-title test."""
    if not checked():
        return

    def update_min() -> None:
        height = label.itemRect().height()
        label.setMinimumWidth(0)
        label.setMinimumHeight(height)
        label._sizeHint = {
            Qt.SizeHint.MinimumSize: (0, height),
            Qt.SizeHint.PreferredSize: (0, height),
            Qt.SizeHint.MaximumSize: (-1, -1),
            Qt.SizeHint.MinimumDescent: (0, 0),
        }
        label.updateGeometry()

    label.updateMin = update_min


#: the Qt modules pyqtgraph mirrors (``pyqtgraph.Qt.QtCore`` ...), each PySide6's of that name
MIRRORED = ("QtCore", "QtGui", "QtWidgets")


class LazyMirror(types.ModuleType):
    """``pyqtgraph.Qt.QtCore`` (or QtGui, QtWidgets) that takes each name from PySide6's
    module the first time it is asked for, and keeps it.

    pyqtgraph's ``Qt/__init__.py`` fills its mirrors (empty modules of its own) with
    ``_copy_attrs``: ``getattr`` on every name of PySide6's three modules, which makes
    PySide6 create every class and enum it has, before the first paint, where pyqtgraph and
    the app use a few hundred (docs/startup.md has the measurements). Asked by ``_copy_attrs``
    whether it has a name, this mirror says yes without fetching it; asked for the name by
    anyone else, it fetches it. What pyqtgraph sets on its mirror (its Qt5 names) stays on
    the mirror, as before."""

    def __init__(self, name: str, source: types.ModuleType) -> None:
        super().__init__(name, source.__doc__)
        self.__dict__["_mirror_source"] = source

    def __getattr__(self, name: str) -> Any:
        if _asked_by_copy_attrs(sys._getframe(1)):
            return None  # "hasattr": yes, so _copy_attrs copies nothing
        value = getattr(self.__dict__["_mirror_source"], name)
        setattr(self, name, value)
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(dir(self.__dict__["_mirror_source"])))


def _asked_by_copy_attrs(frame: types.FrameType) -> bool:
    code = frame.f_code
    return code.co_name == "_copy_attrs" and code.co_filename.endswith(
        os.path.join("pyqtgraph", "Qt", "__init__.py"))


def installed_version() -> str:
    """pyqtgraph's version as its ``__init__.py`` states it, without importing it (which
    :mod:`importlib.metadata` is slower to find); "" where it cannot be read."""
    spec = importlib.util.find_spec("pyqtgraph")
    if spec is None or spec.origin is None or not os.path.isfile(spec.origin):
        return ""
    with open(spec.origin, encoding="utf-8") as file:
        match = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", file.read(), re.MULTILINE)
    return match.group(1) if match else ""


def lazy_qt_mirrors(version: str | None = None) -> bool:
    """Put :class:`LazyMirror` modules in ``sys.modules`` as pyqtgraph's Qt mirrors, for its
    import to find (its own are empty files): pyqtgraph's import then takes about a third
    less CPU (docs/startup.md). Only before pyqtgraph is imported, on a
    checked version (``version``: the installed one by default) and where pyqtgraph will pick
    PySide6 (``PYQTGRAPH_QT_LIB`` unset or PySide6, PyQt6 not imported: pyqtgraph prefers
    it); else nothing changes. True where the mirrors are in place (now or before).
    Checked by tests/playground/test_pyqtgraph_compat.py."""
    names = [f"pyqtgraph.Qt.{name}" for name in MIRRORED]
    if all(isinstance(sys.modules.get(name), LazyMirror) for name in names):
        return True
    if "pyqtgraph" in sys.modules or any(name in sys.modules for name in names):
        return False
    if os.environ.get("PYQTGRAPH_QT_LIB", "PySide6") != "PySide6" or "PyQt6" in sys.modules:
        return False
    if not checked(installed_version() if version is None else version):
        return False
    for name, full in zip(MIRRORED, names):
        sys.modules[full] = LazyMirror(full, importlib.import_module(f"PySide6.{name}"))
    return True



# ---- what pyqtgraph's import loads that the app does not use -----------------------------------

#: the modules pyqtgraph 0.14's ``__init__.py`` imports only to offer their names as
#: ``pyqtgraph.Name`` (its ``from .X import *`` lines, one ``from .X import Name``), none of
#: which the window uses (nor pyqtgraph's other modules at import), and the names each gives
#: (its ``__all__``): imported when a name is first asked for
DEFERRED_PARTS: dict[str, tuple[str, ...]] = {
    "graphicsItems.BoxplotItem": ("BoxplotItem",),
    "graphicsItems.CurvePoint": ("CurvePoint", "CurveArrow"),
    "graphicsItems.DateAxisItem": ("DateAxisItem",),
    "graphicsItems.ErrorBarItem": ("ErrorBarItem",),
    "graphicsItems.FillBetweenItem": ("FillBetweenItem",),
    "graphicsItems.GraphItem": ("GraphItem",),
    "graphicsItems.IsocurveItem": ("IsocurveItem",),
    "graphicsItems.PColorMeshItem": ("PColorMeshItem",),
    "graphicsItems.ROI": ("ROI", "TestROI", "RectROI", "EllipseROI", "CircleROI", "LineROI",
                          "MultiLineROI", "MultiRectROI", "LineSegmentROI", "PolyLineROI",
                          "CrosshairROI", "TriangleROI"),
    "graphicsItems.ScaleBar": ("ScaleBar",),
    "graphicsItems.TargetItem": ("TargetItem", "TargetLabel"),
    "imageview": ("ImageView",),
    "widgets.BusyCursor": ("BusyCursor",),
    "widgets.CheckTable": ("CheckTable",),
    "widgets.ColorMapWidget": ("ColorMapWidget", "ColorMapParameter"),
    "widgets.DataFilterWidget": ("DataFilterWidget",),
    "widgets.DataTreeWidget": ("DataTreeWidget",),
    "widgets.DiffTreeWidget": ("DiffTreeWidget",),
    "widgets.FeedbackButton": ("FeedbackButton",),
    "widgets.GradientWidget": ("GradientWidget",),
    "widgets.HistogramLUTWidget": ("HistogramLUTWidget",),
    "widgets.JoystickButton": ("JoystickButton",),
    "widgets.LayoutWidget": ("LayoutWidget",),
    "widgets.ProgressDialog": ("ProgressDialog",),
    "widgets.RawImageWidget": ("RawImageWidget", "RawImageGLWidget"),
    "widgets.RemoteGraphicsView": ("RemoteGraphicsView",),
    "widgets.ScatterPlotWidget": ("ScatterPlotWidget",),
    "widgets.TableWidget": ("TableWidget",),
    "widgets.ValueLabel": ("ValueLabel",),
    "widgets.VerticalLabel": ("VerticalLabel",),
}
#: the versions whose ``__init__.py`` imports each of them on a line of its own, as
#: :func:`_import_line` writes it
PARTS_CHECKED = ((0, 14), (0, 15))
#: the module a deferred name is in
_DEFERRED_NAMES = {name: module for module, names in DEFERRED_PARTS.items() for name in names}


def _import_line(module: str) -> str:
    if module == "widgets.RemoteGraphicsView":
        return "from .widgets.RemoteGraphicsView import RemoteGraphicsView"
    return f"from .{module} import *"


def without_deferred_parts(source: str) -> str | None:
    """pyqtgraph's ``__init__.py`` source with the import line of each of
    :data:`DEFERRED_PARTS` made ``pass``; None unless each is there exactly once, alone on its
    line (another version's: it is then imported as it is)."""
    lines = source.splitlines(keepends=True)
    stripped = [line.strip() for line in lines]
    for module in DEFERRED_PARTS:
        if stripped.count(_import_line(module)) != 1:
            return None
        index = stripped.index(_import_line(module))
        indent = lines[index][:len(lines[index]) - len(lines[index].lstrip())]
        lines[index] = f"{indent}pass  # {module}: imported when first asked for\n"
    return "".join(lines)


def _deferred_attribute(package: types.ModuleType) -> Callable[[str], Any]:
    """``pyqtgraph.__getattr__``: a deferred name from its module, imported now, and kept."""

    def __getattr__(name: str) -> Any:  # (PEP 562: a module's missing names)
        module = _DEFERRED_NAMES.get(name)
        if module is None:
            raise AttributeError(f"module {package.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package.__name__}.{module}"), name)
        setattr(package, name, value)
        return value

    return __getattr__


class _LighterPackage(importlib.machinery.SourceFileLoader):
    """pyqtgraph's package, run from its ``__init__.py`` without the deferred parts' import
    lines, with a ``__getattr__`` that imports each part when one of its names is asked for."""

    def get_code(self, fullname: str) -> Any:
        source = self.get_data(self.path).decode("utf-8")
        lighter = without_deferred_parts(source)
        self.deferred = lighter is not None
        if lighter is None:
            return super().get_code(fullname)
        return compile(lighter, self.path, "exec", dont_inherit=True)

    def exec_module(self, module: types.ModuleType) -> None:
        super().exec_module(module)
        if getattr(self, "deferred", False):
            module.__getattr__ = _deferred_attribute(module)  # type: ignore[method-assign]
            module.__dir__ = lambda: sorted(  # type: ignore[method-assign]
                set(module.__dict__) | set(_DEFERRED_NAMES))


class _LighterFinder:
    """Finds ``pyqtgraph`` (once: it leaves ``sys.meta_path`` as it is asked) and loads it
    with :class:`_LighterPackage`."""

    @classmethod
    def find_spec(cls, fullname: str, path=None, target=None):
        if fullname != "pyqtgraph":
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(cls)  # type: ignore[arg-type]
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not (spec.origin or "").endswith("__init__.py") \
                or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        spec.loader = _LighterPackage(fullname, spec.origin)
        return spec


def deferred_parts(version: str | None = None) -> bool:
    """Have pyqtgraph's import leave out :data:`DEFERRED_PARTS` (about a third of its modules:
    the image view, the parameter tree behind the colour map widget, the ROIs, the remote
    view's processes ...), each imported when one of its names is first asked for
    (``pg.ImageView``, ``from pyqtgraph import ROI``). Only before pyqtgraph is imported and
    on a version in :data:`PARTS_CHECKED` (``version``: the installed one by default); else
    nothing changes. True where it will apply (or did). Checked by
    tests/playground/test_pyqtgraph_compat.py."""
    if _LighterFinder in sys.meta_path:
        return True
    if "pyqtgraph" in sys.modules:
        return isinstance(getattr(sys.modules["pyqtgraph"].__spec__, "loader", None),
                          _LighterPackage)
    numbers = release(installed_version() if version is None else version)
    low, high = PARTS_CHECKED
    if not (numbers and low <= numbers < high):
        return False
    sys.meta_path.insert(0, _LighterFinder)  # type: ignore[arg-type]
    return True

# ---- what a plot builds that its first paint does not show -------------------------------------

#: the versions whose ``PlotItem.__init__`` :func:`_plot_item_init` follows line for line
FORM_CHECKED = ((0, 14), (0, 15))
#: the PlotItem attributes its "Plot Options" form makes: built the first time one is asked for
FORM_PARTS = ("ctrl", "ctrlMenu", "stateGroup")


def lighter_plots() -> None:
    """The patches that make a plot cheaper to build (:func:`deferred_plot_forms`,
    :func:`deferred_view_menus`, :func:`unchanged_axis_labels_kept`): each module that
    builds plots calls it on import."""
    deferred_plot_forms()
    deferred_view_menus()
    unchanged_axis_labels_kept()


def _form_checked(version: str | None) -> bool:
    if version is None:
        import pyqtgraph

        version = pyqtgraph.__version__
    low, high = FORM_CHECKED
    return checked(version) and low <= release(version) < high


def deferred_plot_forms(version: str | None = None) -> bool:
    """Each ``PlotItem`` builds its "Plot Options" form (``ctrl``: the widgets of a Qt
    Designer form, in a menu of submenus, ``ctrlMenu``, and their ``stateGroup``) the
    first time one of them is asked for, not in its constructor.

    The form is the plot's right-click "Plot Options" menu, and also where pyqtgraph keeps
    the options it sets (``setLogMode``, ``showGrid``, ``setDownsampling`` ... read and write
    its check boxes): any of them builds it, at its defaults, then goes on as before. The
    heatmaps and colour bars never ask (their menus are off), so the window's first paint
    waits for far fewer widgets, each of which a theme or a zoom reaches (docs/startup.md
    has the counts). ``close`` on a plot whose form was never built drops an empty menu.

    Only on the versions whose constructor :func:`_plot_item_init` follows (``version``:
    pyqtgraph's own by default); elsewhere pyqtgraph builds it as always. True where the
    constructor is ours (now or before). Checked by tests/playground/test_plot_menus.py."""
    if not _form_checked(version):
        return False
    module = _plot_module()
    cls = module.PlotItem
    if getattr(cls.__init__, "_defers_form", False):
        return True
    close = cls.close

    def closing(self) -> None:
        if all(name not in self.__dict__ for name in FORM_PARTS):
            self.__dict__["ctrlMenu"] = module.QtWidgets.QMenu()  # close() drops it
        close(self)

    cls.__init__ = _plot_item_init
    cls.close = closing
    for name in FORM_PARTS:
        setattr(cls, name, _built_on_use(name))
    return True


def _plot_module() -> Any:
    return importlib.import_module("pyqtgraph.graphicsItems.PlotItem.PlotItem")


def _built_on_use(name: str) -> property:
    def get(self):
        if name not in self.__dict__:
            _build_form(self)
        return self.__dict__[name]

    def set_(self, value) -> None:
        self.__dict__[name] = value
    return property(get, set_, doc=f"PlotItem.{name}, built the first time it is asked for")


def _plot_item_init(self, parent=None, name=None, labels=None, title=None, viewBox=None,
                    axisItems=None, enableMenu=True, **kwargs) -> None:
    """pyqtgraph 0.14's ``PlotItem.__init__`` without the "Plot Options" form (:func:`
    _build_form` builds it when asked for); the rest as it is there, in its order."""
    module = _plot_module()
    QtWidgets, fn = module.QtWidgets, module.fn
    module.GraphicsWidget.__init__(self, parent)
    self.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding,
                       QtWidgets.QSizePolicy.Policy.Expanding)
    self.autoBtn = module.ButtonItem(module.icons.getGraphPixmap('auto'), 14, self)
    self.autoBtn.mode = 'auto'
    self.autoBtn.clicked.connect(self.autoBtnClicked)
    self.buttonsHidden = False
    self.mouseHovering = False
    self.layout = QtWidgets.QGraphicsGridLayout()
    self.layout.setContentsMargins(1, 1, 1, 1)
    self.setLayout(self.layout)
    self.layout.setHorizontalSpacing(0)
    self.layout.setVerticalSpacing(0)
    if viewBox is None:
        viewBox = module.ViewBox(parent=self, enableMenu=enableMenu)
    self.vb = viewBox
    self.vb.sigStateChanged.connect(self.viewStateChanged)
    self.setMenuEnabled(enableMenu, None)
    if name is not None:
        self.vb.register(name)
    self.vb.sigRangeChanged.connect(self.sigRangeChanged)
    self.vb.sigXRangeChanged.connect(self.sigXRangeChanged)
    self.vb.sigYRangeChanged.connect(self.sigYRangeChanged)
    self.vb.sigRangeChangedManually.connect(self.sigRangeChangedManually)
    self.layout.addItem(self.vb, 2, 1)
    self.alpha = 1.0
    self.autoAlpha = True
    self.spectrumMode = False
    self.legend = None
    self.axes = {}
    self.setAxisItems(axisItems)
    self.titleLabel = module.LabelItem('', size='11pt', parent=self)
    self.layout.addItem(self.titleLabel, 0, 1)
    self.setTitle(None)
    _lay_out_plot(self.layout)
    self.items = []
    self.curves = []
    self.itemMeta = module.weakref.WeakKeyDictionary()
    self.dataItems = []
    self.paramList = {}
    self.avgCurves = {}
    self.avgPen = fn.mkPen((0, 200, 0))
    self.avgShadowPen = fn.mkPen((0, 0, 0), width=4)
    self.fileDialog = None
    _label_plot(self, labels, title, kwargs)


_plot_item_init._defers_form = True  # type: ignore[attr-defined]


def _lay_out_plot(layout) -> None:
    for i in range(4):
        layout.setRowPreferredHeight(i, 0)
        layout.setRowMinimumHeight(i, 0)
        layout.setRowSpacing(i, 0)
        layout.setRowStretchFactor(i, 1)
    for i in range(3):
        layout.setColumnPreferredWidth(i, 0)
        layout.setColumnMinimumWidth(i, 0)
        layout.setColumnSpacing(i, 0)
        layout.setColumnStretchFactor(i, 1)
    layout.setRowStretchFactor(2, 100)
    layout.setColumnStretchFactor(1, 100)


def _label_plot(plot, labels, title, kwargs) -> None:
    """The end of pyqtgraph 0.14's ``PlotItem.__init__``: labels, title, data."""
    if labels is None:
        labels = {}
    for label in list(plot.axes.keys()):
        if label in kwargs:
            labels[label] = kwargs[label]
            del kwargs[label]
    for k in labels:
        if isinstance(labels[k], str):
            labels[k] = (labels[k],)
        plot.setLabel(k, *labels[k])
    if title is not None:
        plot.setTitle(title)
    if kwargs:
        plot.plot(**kwargs)


def _build_form(plot) -> None:
    """The form pyqtgraph 0.14's ``PlotItem.__init__`` builds, as it builds it there."""
    module = _plot_module()
    QtWidgets, translate = module.QtWidgets, module.translate
    w = QtWidgets.QWidget()
    c = module.ui_template.Ui_Form()
    c.setupUi(w)
    plot.__dict__["ctrl"] = c
    menu_items = [(translate("PlotItem", 'Transforms'), c.transformGroup),
                  (translate("PlotItem", 'Downsample'), c.decimateGroup),
                  (translate("PlotItem", 'Average'), c.averageGroup),
                  (translate("PlotItem", 'Alpha'), c.alphaGroup),
                  (translate("PlotItem", 'Grid'), c.gridGroup),
                  (translate("PlotItem", 'Points'), c.pointsGroup)]
    menu = QtWidgets.QMenu(translate("PlotItem", 'Plot Options'))
    plot.__dict__["ctrlMenu"] = menu
    for name, group in menu_items:
        sub = menu.addMenu(name)
        action = QtWidgets.QWidgetAction(plot)
        action.setDefaultWidget(group)
        sub.addAction(action)
    state = module.WidgetGroup()
    plot.__dict__["stateGroup"] = state
    for _name, group in menu_items:
        state.autoAdd(group)
    _connect_form(plot, c)


#: the plot's slot -> the form's signals connected to it ("widget.signal"), as pyqtgraph 0.14's
#: constructor connects them (one slot a signal: the order does not matter)
FORM_SLOTS = {
    "updateAlpha": ("alphaGroup.toggled", "alphaSlider.valueChanged", "autoAlphaCheck.toggled"),
    "updateGrid": ("xGridCheck.toggled", "yGridCheck.toggled", "gridAlphaSlider.valueChanged"),
    "updateSpectrumMode": ("fftCheck.toggled",),
    "updateSubtractMeanMode": ("subtractMeanCheck.toggled",),
    "updateLogMode": ("logXCheck.toggled", "logYCheck.toggled"),
    "updateDerivativeMode": ("derivativeCheck.toggled",),
    "updatePhasemapMode": ("phasemapCheck.toggled",),
    "updateDownsampling": ("downsampleSpin.valueChanged", "downsampleCheck.toggled",
                           "autoDownsampleCheck.toggled", "subsampleRadio.toggled",
                           "meanRadio.toggled", "clipToViewCheck.toggled"),
    "avgParamListClicked": ("avgParamList.itemClicked",),
    "avgToggled": ("averageGroup.toggled",),
    "_handle_max_traces_toggle": ("maxTracesCheck.toggled",),
    "updateDecimation": ("forgetTracesCheck.toggled", "maxTracesSpin.valueChanged"),
}


def _connect_form(plot, c) -> None:
    for slot, signals in FORM_SLOTS.items():
        for name in signals:
            widget, signal = name.split(".")
            getattr(getattr(c, widget), signal).connect(getattr(plot, slot))


#: what a view box holds as its menu until the menu is asked for
DEFERRED_MENU = object()


def deferred_view_menus(version: str | None = None) -> bool:
    """Each ``ViewBox`` builds its right-click menu (``ViewBoxMenu``: "View All", the X and Y
    axis forms, "Mouse Mode") the first time ``menu`` is asked for: a right click, a caller
    that adds to it, not its constructor. A view box whose menu is turned off before then
    never builds one; one turned off after drops it, as before. The named views it lists are
    set as it is built. Only on the versions :data:`FORM_CHECKED` (``version``: pyqtgraph's
    own by default); elsewhere pyqtgraph builds it as always. True where the patch is in
    place. Checked by tests/playground/test_plot_menus.py."""
    if not _form_checked(version):
        return False
    module: Any = importlib.import_module("pyqtgraph.graphicsItems.ViewBox.ViewBox")
    cls = module.ViewBox
    if isinstance(cls.__dict__.get("menu"), property):
        return True
    build = module.ViewBoxMenu
    list_views = cls.updateViewLists

    def get(self):  # (kept as _menu: shiboken reads an instance's own "menu" first)
        menu = self.__dict__.get("_menu")
        if menu is DEFERRED_MENU:
            if not self.menuEnabled():  # turned off before it was built: there is none
                menu = self.__dict__["_menu"] = None
            elif not self.__dict__.get("_listing_views"):
                menu = self.__dict__["_menu"] = build(self)
                self.updateViewLists()  # the named views it offers to link to
                for add in self.__dict__.pop(_MENU_ADDITIONS, ()):
                    add(menu)
            else:
                return None  # listing views: a menu not built has none to list
        return menu

    def set_(self, value) -> None:
        self.__dict__["_menu"] = value

    def update_view_lists(self) -> None:
        self.__dict__["_listing_views"] = True
        try:
            list_views(self)
        finally:
            self.__dict__["_listing_views"] = False

    module.ViewBoxMenu = lambda view: DEFERRED_MENU  # what the constructor holds meanwhile
    cls.menu = property(get, set_, doc="ViewBox.menu, built the first time it is asked for")
    cls.updateViewLists = update_view_lists
    return True


#: where a view box keeps what :func:`when_menu_built` adds to its menu until it is built
_MENU_ADDITIONS = "_menu_additions"


def when_menu_built(view_box: pg.ViewBox, add: Callable[[Any], None]) -> None:
    """``add(menu)`` with ``view_box``'s right-click menu: at once where the menu is built
    already (or pyqtgraph builds its menus itself), else as it is built, the first time it is
    asked for (:func:`deferred_view_menus`). Never where it has no menu (turned off). What
    adds to a menu (the loss plot's export actions) so leaves it unbuilt until a right click
    asks for it. Checked by tests/playground/test_plot_menus.py."""
    if view_box.__dict__.get("_menu") is DEFERRED_MENU:
        view_box.__dict__.setdefault(_MENU_ADDITIONS, []).append(add)
        return
    menu = view_box.menu
    if menu is not None:
        add(menu)


def unchanged_axis_labels_kept(version: str | None = None) -> bool:
    """An axis typesets its label (``QGraphicsTextItem.setHtml``) only where the HTML
    changed, and only while the label is shown: a hidden label (most axes have none, and the
    hidden axes' too) is typeset as it is shown (``showLabel``), with the HTML it has then.
    pyqtgraph's ``AxisItem._updateLabel`` sets it at every change of range, pen, text pen or
    SI prefix, mostly to the same text, many times while the window is built
    (docs/startup.md), for hidden labels as for shown ones. The label's size and picture are
    redone as before (pyqtgraph counts a hidden label's size nowhere). On a version not
    checked, nothing changes; True where the patch is in place. Checked by
    tests/playground/test_plot_menus.py."""
    if not checked(version):
        return False
    module: Any = importlib.import_module("pyqtgraph.graphicsItems.AxisItem")
    cls = module.AxisItem
    if getattr(cls._updateLabel, "_keeps_unchanged", False):
        return True
    show_label = cls.showLabel

    def update_label(self) -> None:
        if self.label.isVisibleTo(self):  # (its own flag: shown, whether the axis is or not)
            _typeset(self)
        self._adjustSize()
        self.picture = None
        self.update()

    def showing_label(self, show: bool = True) -> None:
        if show and not self.label.isVisibleTo(self) and _typeset(self):
            # what changed while it was hidden, typeset before it is measured, and placed
            # for that text (pyqtgraph places the label as the axis resizes)
            self.resizeEvent(None)
        show_label(self, show)

    update_label._keeps_unchanged = True  # type: ignore[attr-defined]
    cls._updateLabel = update_label
    cls.showLabel = showing_label
    return True


def _typeset(axis) -> bool:
    """The axis label's HTML set where it differs from the one last set (True then)."""
    html = axis.labelString()
    if axis.__dict__.get("_label_html") == html:
        return False
    axis.label.setHtml(html)
    axis.__dict__["_label_html"] = html
    return True

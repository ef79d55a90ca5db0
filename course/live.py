"""Charts that redraw within a second when a control moves: Lecture 7's lab and the step-through widgets.

A redraw through matplotlib's inline backend costs about three renders' worth of work: the
constrained layout is solved again, and the backend renders twice (once to find the tight bounding
box, once for the PNG). `LiveChart` renders once: the first figure's layout is solved and its axes
positions (and title heights) are kept for every later figure of the same shape (same axes, same
size), each figure is rendered once to PNG and shown in an ipywidgets `Image`, minor tick marks are
left out (on log axes they are most of the ticks to lay out; the labelled major ticks and the grid
stay), and the PNG of each setting already drawn is kept, so going back to a setting costs nothing.
On lecture 7's two-panel chart this takes a redraw from about 1.2 to 0.3 CPU seconds.

`REDRAWS` records every redraw: which chart, the wall and CPU seconds it took in the kernel, and
whether the PNG came from the cache. `make test-browser` reads it after moving every control
(tests/test_browser.py): CPU seconds are what a laptop-class CPU would spend, whatever else the
machine runs.

Worked example (no widget needed): two settings drawn, the first drawn again from the cache.

>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import matplotlib.pyplot as plt
>>> def square(k):
...     fig, ax = plt.subplots(figsize=(3, 2), layout="constrained")
...     ax.plot([0, 1, 2], [0, k, 4 * k])
...     return fig
>>> chart = LiveChart(square, name="doctest")
>>> a, b, again = chart.png(k=1), chart.png(k=2), chart.png(k=1)
>>> a[:4] == b"\\x89PNG", a == again, a != b
(True, True, True)
>>> [r["cached"] for r in REDRAWS if r["chart"] == "doctest"]
[False, False, True]
"""

import io
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

#: One entry per redraw of any LiveChart in this kernel: chart, setting, wall_s, cpu_s, cached.
REDRAWS: list[dict[str, Any]] = []


class LiveChart:
    """A figure-drawing function `draw(**setting) -> Figure` behind an ipywidgets Image.

    `png(**setting)` returns the PNG of that setting (drawn, or from the cache of the last `cache`
    settings); `show(**setting)` puts it in `image`, the widget to place under the controls. The
    figures `draw` makes are closed after rendering. `dpi` is the PNG's resolution (the figure's own
    size in inches is kept)."""

    def __init__(self, draw: Callable[..., Any], *, name: str, cache: int = 256, dpi: int = 100):
        self.draw, self.name, self.dpi, self.size = draw, name, dpi, cache
        self._pngs: OrderedDict[tuple, bytes] = OrderedDict()
        # (figure size, [(axes position, title height)]) of the first figure, after its layout was solved
        self._layout: tuple[tuple[float, float], list] | None = None
        self._image = None

    @property
    def image(self):
        """The ipywidgets Image that `show` updates (created on first use, so doctests need no widgets)."""
        if self._image is None:
            import ipywidgets as widgets

            self._image = widgets.Image(format="png")
        return self._image

    def _render(self, setting: dict) -> bytes:
        import matplotlib.pyplot as plt

        fig = self.draw(**setting)
        try:
            size = tuple(fig.get_size_inches())
            for ax in fig.axes:
                ax.minorticks_off()
            if self._layout is not None and self._layout[0] == size and len(self._layout[1]) == len(fig.axes):
                fig.set_layout_engine("none")  # the first figure's solved layout, not a new solve
                for ax, (position, title_y) in zip(fig.axes, self._layout[1]):
                    ax.set_position(position, which="both")
                    if ax.get_title():  # a title placed by hand is not placed again at draw time
                        ax.set_title(ax.get_title(), fontsize=ax.title.get_fontsize(), y=title_y)
            buffer = io.BytesIO()
            fig.savefig(buffer, format="png", dpi=self.dpi)  # one render: no tight bounding box
            if self._layout is None:
                self._layout = (
                    size,
                    [(ax.get_position(original=False), ax.title.get_position()[1]) for ax in fig.axes],
                )
            return buffer.getvalue()
        finally:
            plt.close(fig)

    def png(self, **setting: Any) -> bytes:
        """The PNG of `setting`, timed into `REDRAWS`."""
        started, cpu = time.perf_counter(), time.process_time()
        key = tuple(sorted(setting.items()))
        cached = key in self._pngs
        if cached:
            self._pngs.move_to_end(key)
        else:
            self._pngs[key] = self._render(setting)
            if len(self._pngs) > self.size:
                self._pngs.popitem(last=False)
        REDRAWS.append(
            {
                "chart": self.name,
                "setting": {k: str(v) for k, v in setting.items()},
                "wall_s": time.perf_counter() - started,
                "cpu_s": time.process_time() - cpu,
                "cached": cached,
            }
        )
        return self._pngs[key]

    def show(self, **setting: Any) -> None:
        """Draw `setting` (or take it from the cache) into `image`."""
        self.image.value = self.png(**setting)

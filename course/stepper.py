"""A Play button and a slider that redraw one matplotlib figure per step (the lectures' step-through widgets).

The first step is drawn when the widget is built, so a chart stands under the slider before anyone
moves it. Each step is rendered once, at the first step's layout, and kept (`course.live.LiveChart`),
so a step redraws within a second and a step seen before costs nothing. Where widgets do not render
(HTML export, CI, slides) show a static figure before it.
"""

from collections.abc import Callable

from matplotlib.figure import Figure

from .live import LiveChart


def stepper(
    n_steps: int,
    draw: Callable[[int], Figure],
    start: int = 0,
    description: str = "step",
    interval_ms: int = 700,
    name: str = "stepper",
):
    """ipywidgets VBox: Play + IntSlider (1..n_steps, linked) over an Image that shows `draw(k)`'s figure
    for the 0-based step k; `draw` returns a matplotlib figure, which is rendered and closed. `name`
    labels the redraws in `course.live.REDRAWS`."""
    import ipywidgets as widgets

    if not 0 <= start < n_steps:
        raise ValueError(f"start must be in 0..{n_steps - 1}, got {start}")
    slider = widgets.IntSlider(
        value=start + 1, min=1, max=n_steps, description=description, continuous_update=False
    )
    play = widgets.Play(value=start + 1, min=1, max=n_steps, interval=interval_ms, description="play")
    widgets.jslink((play, "value"), (slider, "value"))
    chart = LiveChart(lambda step: draw(step), name=name)
    slider.observe(lambda change: chart.show(step=change["new"] - 1), names="value")
    chart.show(step=start)
    return widgets.VBox([widgets.HBox([play, slider]), chart.image])

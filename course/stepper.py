"""A Play button and a slider that redraw one matplotlib figure per step (the lectures' step-through widgets).

The first step is drawn when the widget is built, so a chart stands under the slider before anyone
moves it. Where widgets do not render (HTML export, CI, slides) show a static figure before it.
"""

from collections.abc import Callable

from matplotlib.figure import Figure


def stepper(
    n_steps: int,
    draw: Callable[[int], Figure],
    start: int = 0,
    description: str = "step",
    interval_ms: int = 700,
):
    """ipywidgets VBox: Play + IntSlider (1..n_steps, linked) over an Output that shows `draw(k)`'s figure
    for the 0-based step k; `draw` returns a matplotlib figure, which is shown and closed."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import display

    if not 0 <= start < n_steps:
        raise ValueError(f"start must be in 0..{n_steps - 1}, got {start}")
    slider = widgets.IntSlider(
        value=start + 1, min=1, max=n_steps, description=description, continuous_update=False
    )
    play = widgets.Play(value=start + 1, min=1, max=n_steps, interval=interval_ms, description="play")
    widgets.jslink((play, "value"), (slider, "value"))
    out = widgets.Output()

    def show(k: int) -> None:
        with out:
            out.clear_output(wait=True)
            fig = draw(k)
            display(fig)
            plt.close(fig)

    slider.observe(lambda change: show(change["new"] - 1), names="value")
    show(start)
    return widgets.VBox([widgets.HBox([play, slider]), out])

"""JupyterLab as `make lab` and `make test-browser` start it (`jupyter lab --config tools/lab/jupyter_lab_config.py`).

- The lectures are jupytext scripts (notebooks/NN_topic.py, see jupytext.toml). settings/overrides.json
  makes "Jupytext Notebook" the default viewer for .py files, so a double click opens the lecture as a
  notebook with the kernel named in its header (python3, started without a kernel-picker dialog), and a
  save writes the script back without outputs. JupyterLab reads that file from its application settings
  folder, set here to tools/lab/settings: nothing is copied into the venv and nothing tracked is written.
- No news feed and no update check (no request leaves the machine, no pop-up covers the first chart).
- The file browser lists one entry per lecture: caches and checkpoints are hidden.
- Exercise solutions stay collapsed in the saved script: JupyterLab un-hides a cell's outputs whenever it
  runs the cell (and drops `outputs_hidden` from its metadata), so without `keep_solutions_hidden` a
  student who runs the lecture and saves would change every solution's `# %%` line.
Your own JupyterLab settings (~/.jupyter/lab/user-settings) still take precedence over these defaults.
"""

import warnings
from pathlib import Path

import jupytext
from jupytext.config import load_jupytext_config

c = get_config()  # noqa: F821  (Jupyter defines get_config when it loads a config file)

c.LabApp.app_settings_dir = str(Path(__file__).resolve().parent / "settings")
c.LabApp.news_url = None
c.LabApp.check_for_updates_class = "jupyterlab.handlers.announcements.NeverCheckForUpdate"
c.ContentsManager.hide_globs = [
    "__pycache__",
    "*.pyc",
    "*.pyo",
    ".ipynb_checkpoints",
    ".virtual_documents",
    "*~",
]


def keep_solutions_hidden(model, path, contents_manager, **kwargs):
    """Pre-save hook: cells tagged `solution` keep `jupyter={"source_hidden": true, "outputs_hidden": true}`.

    Jupytext has already written the notebook as the .py text when the hook runs; the text is read back,
    the two flags put back on the solution cells, and written with the same jupytext.toml.
    """
    if model.get("type") != "file" or model.get("format") != "text" or not path.endswith(".py"):
        return
    notebook = jupytext.reads(model["content"], fmt="py:percent")
    solutions = [cell for cell in notebook.cells if "solution" in cell.metadata.get("tags", [])]
    hidden = [cell.metadata.get("jupyter", {}) for cell in solutions]
    if all(flags.get("source_hidden") and flags.get("outputs_hidden") for flags in hidden):
        return
    for cell in solutions:
        cell.metadata.setdefault("jupyter", {}).update(source_hidden=True, outputs_hidden=True)
    os_path = Path(contents_manager.root_dir) / path
    model["content"] = jupytext.writes(
        notebook, fmt="py:percent", config=load_jupytext_config(str(os_path.parent))
    )


c.ContentsManager.pre_save_hook = keep_solutions_hidden
# The server applies this config to its contents manager twice (once more when Jupytext derives its own
# manager), and each time traitlets warns that the hook replaces... itself. Only that message is hidden:
# a different hook replacing this one still warns.
warnings.filterwarnings(
    "ignore",
    message=r"Overriding existing pre_save_hook \(keep_solutions_hidden\) with a new one \(keep_solutions_hidden\)",
    category=UserWarning,
)

"""Alt text for every image of the slides and handouts, from the cell that draws it.

A lecture cell that draws a chart carries one sentence in its metadata, written in the jupytext cell
header (`# %% alt="HBM traffic in GB against N for naive, FA1 and FA2"`). nbconvert's templates have
no alt attribute for images, so this preprocessor copies the sentence into each image output's
metadata (`output.metadata["image/png"]["alt"]`), where the templates under tools/templates read it,
and refuses an image whose cell has none: the build stops with one line naming the lecture and cell.
"""

from nbconvert.preprocessors import Preprocessor

IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")


class MissingAltText(ValueError):
    """An image output whose cell has no `alt` metadata."""


def _where(lecture, number, cell):
    first_line = next((line for line in cell.source.splitlines() if line.strip()), "")
    return f"{lecture}: cell {number} ({first_line.strip()[:60]!r})"


def missing_alt(notebook, lecture):
    """One message per code cell that draws an image without alt text (empty list: all described)."""
    return [
        f'{_where(lecture, number, cell)} draws an image but has no alt text: add alt="..." to its # %% line'
        for number, cell in enumerate(notebook.cells, 1)
        if cell.cell_type == "code"
        and not str(cell.metadata.get("alt", "")).strip()
        and any(kind in output.get("data", {}) for output in cell.get("outputs", []) for kind in IMAGE_TYPES)
    ]


class AltTextPreprocessor(Preprocessor):
    """Copy each code cell's `alt` onto its image outputs; raise MissingAltText if a cell has none."""

    def preprocess(self, nb, resources):
        lecture = resources.get("metadata", {}).get("name", "notebook")
        problems = missing_alt(nb, lecture)
        if problems:
            raise MissingAltText(problems[0])
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, index):
        alt = str(cell.metadata.get("alt", "")).strip()
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            for kind in IMAGE_TYPES:
                if kind in output.get("data", {}):
                    output.setdefault("metadata", {}).setdefault(kind, {})["alt"] = alt
        return cell, resources

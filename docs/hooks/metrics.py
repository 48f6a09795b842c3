"""mkdocs hook: the site shows what the pipeline wrote under metrics/, never a copy of it.

- Every `metrics/**/*.png` (Figure 4's t-SNE pictures, Figure 5's sweep image) becomes a file of the
  site at the same path, so a page links it as `metrics/figure4/bc5cdr.png` and strict mode checks
  the link like any other.
- `<!-- figure4-silhouettes -->` in a page becomes the table of Figure 4's silhouettes, made from
  `metrics/figure4.json` (stage `figure4`). A missing file or key fails the build.

The markdown files under metrics/ (summary.md, experiments.md) are included with pymdownx.snippets.
"""

from __future__ import annotations

import json
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

FIGURE4_MARKER = "<!-- figure4-silhouettes -->"
# (key in metrics/figure4.json, what the set is)
FIGURE4_SETS = [("conll2003", "CoNLL 03 test mentions"), ("bc5cdr", "BC5CDR test mentions"),
                ("phrases", "our typed phrases")]


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def on_files(files, config):
    metrics = _root(config) / "metrics"
    for image in sorted(metrics.rglob("*.png")):
        uri = image.relative_to(_root(config)).as_posix()
        if files.get_file_from_path(uri) is None:
            files.append(File.generated(config, uri, abs_src_path=str(image)))
    return files


def figure4_table(path: Path) -> str:
    try:
        figure = json.loads(path.read_text(encoding="utf-8"))
        rows = ["| set | types | silhouette, untuned " + figure["backbone"].split("/")[-1] + " | silhouette, PEARL |",
                "|---|---|---|---|"]
        for key, name in FIGURE4_SETS:
            s = figure[key]
            distinct = " distinct" if key != "phrases" else ""
            rows.append(f"| {name} ({s['phrases']:,}{distinct}) | {', '.join(s['types'])} | "
                        f"{s['backbone']:.3f} | {s['model']:.3f} |")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise PluginError(f"{path}: cannot make Figure 4's table ({type(error).__name__}: {error}); "
                          "run `dvc repro figure4`") from None
    return "\n".join(rows)


def on_page_markdown(markdown, page, config, files):
    if FIGURE4_MARKER in markdown:
        markdown = markdown.replace(FIGURE4_MARKER, figure4_table(_root(config) / "metrics" / "figure4.json"))
    return markdown

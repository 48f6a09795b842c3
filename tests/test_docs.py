"""The docs site builds in strict mode (a broken link, anchor, page or included file fails it), it shows the
generated files rather than copies, and the README stays a page: at most 150 lines, its headline and join
tables the ones scripts/readme_table.py makes from metrics/summary.md and metrics/join/summary.md."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

README_MAX_LINES = 175  # 150 until the peers table (issue 88) joined the join and cost tables


def _mkdocs_env() -> dict:
    return {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # material's banner about its successor, not a warning


def _build(site) -> subprocess.CompletedProcess:
    # not --quiet: it hides the warnings that strict mode counts, so a broken link would pass
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"),
                           "-d", str(site)], cwd=ROOT, env=_mkdocs_env(), capture_output=True, text=True,
                          timeout=600)


def _readme_table():
    spec = importlib.util.spec_from_file_location("readme_table", ROOT / "scripts" / "readme_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_build_in_strict_mode_and_include_the_generated_files(tmp_path):
    site = tmp_path / "site"
    built = _build(site)
    assert built.returncode == 0, built.stdout + built.stderr
    # the figures the pages show are the pipeline's own files
    for image in sorted((ROOT / "metrics").rglob("*.png")):
        copied = site / image.relative_to(ROOT)
        assert copied.read_bytes() == image.read_bytes(), copied
    models = (site / "models" / "index.html").read_text(encoding="utf-8")
    for heading in [line[4:] for line in (ROOT / "metrics" / "summary.md").read_text().splitlines()
                    if line.startswith("### ")]:
        assert heading in models, f"metrics/summary.md's {heading!r} is not on the Models page"
    experiments = (site / "experiments" / "index.html").read_text(encoding="utf-8")
    assert "Table 3: ablations" in experiments and "silhouette, PEARL" in experiments
    assert "figure4-silhouettes" not in experiments and "--8&lt;--" not in experiments
    api = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("index.phrase_index.Index", "index.phrase_index.Index.save", "linking.link.link", "joining.join.join",
                 "clustering.cluster.cluster", "types.predict.predict_types", "embedder.Embedder", "load"):
        assert f'id="pearl.{name}"' in api, f"pearl.{name} is not on the Python API page"


# a page, the nav and the config of the real site, with one fault each: the build must stop on it
FAULTS = {
    "a link to a missing page": "[gone](no-such-page.md)",
    "a link to a missing anchor": "[gone](#no-such-heading)",
    "a missing included file": '--8<-- "metrics/no-such-file.md"',
}


@pytest.mark.parametrize("fault", FAULTS)
def test_a_broken_link_or_include_fails_the_build(tmp_path, fault):
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs" / "hooks", docs / "hooks")
    (docs / "index.md").write_text(f"# A page\n\n{FAULTS[fault]}\n", encoding="utf-8")
    script = textwrap.dedent(f"""
        import logging, sys
        from mkdocs.commands.build import build
        from mkdocs.config import load_config
        from mkdocs.exceptions import Abort
        logging.basicConfig(format="%(levelname)s %(message)s")
        config = load_config({str(ROOT / "mkdocs.yml")!r}, docs_dir={str(docs)!r},
                             site_dir={str(tmp_path / "site")!r}, nav=[{{"Home": "index.md"}}], strict=True)
        try:
            build(config)
        except Abort as error:
            print(error)
            sys.exit(1)
    """)
    built = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=_mkdocs_env(), capture_output=True,
                           text=True, timeout=600)
    assert built.returncode != 0, f"{fault} did not fail the build:\n{built.stdout}{built.stderr}"
    assert "no-such" in built.stdout + built.stderr, f"{fault} failed the build for another reason:\n{built.stderr}"


def test_the_readme_fits_on_a_page():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move the detail to docs/"
    assert lines[2].strip().startswith("bash scripts/repro.sh") and lines[3].strip().startswith("bash scripts/test.sh")


def test_the_readme_tables_are_the_ones_the_generated_files_make():
    readme_table = _readme_table()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name, made in readme_table.blocks().items():
        copy = readme_table.readme_block(readme, name)
        assert copy is not None, f"README.md lost its {name} markers"
        assert copy == made, f"README.md's {name} table is stale: python scripts/readme_table.py"


def test_the_readme_links_only_to_pages_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / target).is_file(), target
    for page, anchor in re.findall(r"\]\(docs/(lab/[a-z]+\.md)#([a-z0-9-]+)\)", readme):
        assert f"{{#{anchor}}}" in (ROOT / "docs" / page).read_text(encoding="utf-8"), f"{page}#{anchor}"


def test_the_lab_notebook_is_an_index_of_its_pages_that_keeps_every_entrys_old_anchor():
    """docs/measurements.md lists every entry of docs/lab/, each under the anchor it had when the notebook was one
    page, so that a link or comment to measurements.md#anchor still lands on it."""
    index = (ROOT / "docs" / "measurements.md").read_text(encoding="utf-8")
    assert len(index.splitlines()) <= 200
    entries = {(page.name, anchor) for page in (ROOT / "docs" / "lab").glob("*.md")
               for anchor in re.findall(r"^### .* \{#([a-z0-9-]+)\}$", page.read_text(encoding="utf-8"), re.M)}
    indexed = set(re.findall(r"\]\(lab/([a-z]+\.md)#([a-z0-9-]+)\)\{#\2\}", index))
    assert len(entries) > 50 and indexed == entries

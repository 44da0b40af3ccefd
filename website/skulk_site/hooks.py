"""The MkDocs hooks that write the generated parts of the site at build time.

A page holding `<!-- skulk:NAME -->` gets the generated Markdown NAME in its place
(reference pages, the health table, the benchmark charts); the architecture page is
docs/architecture.md itself, and the charts' SVG files are added to the build. Nothing
generated is written into the source tree.
"""

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[2]


def _use_this_checkout() -> None:
    """Generate from this checkout's code, whichever Skulk the environment installed
    (MkDocs restores sys.path after loading a hook, so on_config does this again)."""
    for entry in (REPOSITORY / "website", REPOSITORY / "src"):
        if str(entry) in sys.path:
            sys.path.remove(str(entry))
        sys.path.insert(0, str(entry))


_use_this_checkout()

from mkdocs.config.defaults import MkDocsConfig  # noqa: E402
from mkdocs.structure.files import File, Files  # noqa: E402
from mkdocs.structure.pages import Page  # noqa: E402

from skulk_site import charts  # noqa: E402

RESULTS_DIR = REPOSITORY / "bench" / "results"
CHARTS_DIR = "benchmarks/charts"
MARKER = "<!-- skulk:{} -->"


def _http_api() -> str:
    from skulk_site.openapi_ref import api_document, http_api_markdown
    return http_api_markdown(api_document())


def _cli() -> str:
    from skulk.cli.main import build_parser
    from skulk_site.cli_ref import cli_markdown
    return cli_markdown(build_parser())


def _catalogue() -> str:
    from skulk.models.catalog import builtin_cards_dir, load_cards
    from skulk_site.catalogue_ref import catalogue_markdown
    return catalogue_markdown(load_cards(builtin_cards_dir()))


def _metrics() -> str:
    from skulk_site.metrics_ref import metrics_markdown, sample_metrics
    return metrics_markdown(sample_metrics())


def _health() -> str:
    from skulk_site.health_ref import health_markdown
    return health_markdown()


GENERATORS: dict[str, Callable[[], str]] = {
    "http-api": _http_api, "cli": _cli, "catalogue": _catalogue, "metrics": _metrics,
    "health": _health,
}
_rendered: dict[str, str] = {}


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    _use_this_checkout()
    _rendered.clear()  # `mkdocs serve` rebuilds: generate afresh each time
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, "architecture.md",
                                abs_src_path=str(REPOSITORY / "docs" / "architecture.md")))
    for screenshot in sorted((REPOSITORY / "docs" / "screenshots").glob("*.png")):
        files.append(File.generated(config, f"assets/{screenshot.name}",
                                    abs_src_path=str(screenshot)))
    results = charts.load_results(RESULTS_DIR)
    rendered = charts.render_charts(results)
    for item in rendered:
        if item.image is not None:
            files.append(File.generated(config, f"{CHARTS_DIR}/{item.chart.slug}.svg",
                                        content=item.image))
    _rendered["charts"] = charts.charts_markdown(rendered, CHARTS_DIR, results)
    return files


def replace_markers(markdown: str, generate: Callable[[str], str]) -> str:
    """Each `<!-- skulk:NAME -->` replaced by NAME's Markdown; an unknown NAME raises."""
    while (start := markdown.find("<!-- skulk:")) != -1:
        end = markdown.index("-->", start) + len("-->")
        name = markdown[start + len("<!-- skulk:"):end - len("-->")].strip()
        markdown = markdown[:start] + generate(name) + markdown[end:]
    return markdown


def _generate(name: str) -> str:
    if name not in _rendered:
        if name not in GENERATORS:
            raise ValueError(f"no generated content named {name!r}: "
                             f"{', '.join(sorted([*GENERATORS, 'charts']))}")
        _rendered[name] = GENERATORS[name]()
    return _rendered[name]


def on_page_markdown(markdown: str, page: Page, **kwargs: Any) -> str:
    return replace_markers(markdown, _generate)

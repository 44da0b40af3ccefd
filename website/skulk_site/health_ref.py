"""The node health table of the troubleshooting page, from `api/node_health.REASONS`."""

from skulk.api.node_health import REASONS
from skulk_site.markdown import table


def health_markdown() -> str:
    return "\n".join(table(["reason", "level", "when", "what to do"], [
        [f"`{code}`", level, when, remedy] for code, (level, when, remedy) in REASONS.items()
    ])) + "\n"

"""Where a node keeps its files: `SKULK_HOME`, else the XDG data dir."""

import os
from pathlib import Path


def default_data_dir() -> Path:
    home = os.environ.get("SKULK_HOME")
    if home:
        return Path(home)
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "skulk"

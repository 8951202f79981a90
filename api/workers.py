"""`memc serve --workers N`: the settings the serving process hands to its worker processes.

uvicorn's supervisor starts each worker as a fresh (spawned) process that imports the app
factory named by :data:`APP_FACTORY` (``api.app.from_environment``); the workers inherit the
supervisor's environment, so the settings travel in :data:`SERVE_SETTINGS` as JSON. Standard
library only: the supervisor itself never loads the app (FastAPI, Dagster and dbt stay in the
workers)."""

from __future__ import annotations

import json
import os
from typing import Any

SERVE_SETTINGS = "MEMC_SERVE_SETTINGS"
APP_FACTORY = "api.app:from_environment"


def export_settings(home_root: str, **settings: Any) -> None:
    """Put the home and :func:`api.app.create_app`'s keyword arguments where the workers read them."""
    os.environ[SERVE_SETTINGS] = json.dumps({"home": str(home_root), **settings})


def settings_from_environment() -> tuple[str, dict[str, Any]]:
    """(the home's root, the keyword arguments), as :func:`export_settings` put them."""
    settings = json.loads(os.environ[SERVE_SETTINGS])
    return settings.pop("home"), settings

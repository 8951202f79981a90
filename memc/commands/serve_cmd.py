"""(placeholder: no commands yet)"""

import click


def register(cli: click.Group) -> None:
    """Adds nothing yet."""

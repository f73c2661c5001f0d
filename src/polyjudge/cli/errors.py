"""One place that turns known errors into messages and exit codes.

Bad input (InputError) exits 2 with ``polyjudge: error: FILE:LINE, field 'F': why``.
"""

from __future__ import annotations

import click

from polyjudge.data.errors import InputError

EXIT_BAD_INPUT = 2


def run_cli(group: click.Group, argv: list[str] | None) -> int:
    try:
        group.main(args=argv, prog_name="polyjudge", standalone_mode=False)
    except InputError as exc:
        click.echo(f"polyjudge: error: {exc}", err=True)
        return EXIT_BAD_INPUT
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return EXIT_BAD_INPUT if exc.exit_code == 2 else exc.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("Interrupted; completed judgments are kept in the run's store.", err=True)
        return 130
    return 0

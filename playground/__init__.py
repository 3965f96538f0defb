"""Qt desktop front end of the autograd playground."""


def show(function, *args, **options):
    """Open the desktop app on ``function`` at these arguments (see
    :func:`playground.python_entry.show`)."""
    from playground.python_entry import show as _show

    return _show(function, *args, **options)


__all__ = ["show"]

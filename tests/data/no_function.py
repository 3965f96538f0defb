"""A file without any custom autograd Function of its own."""

from customgrad.targets.gallery.classic import Exp  # noqa: F401  (imported, not defined here)

VALUE = 42


def helper(x):
    return x + 1

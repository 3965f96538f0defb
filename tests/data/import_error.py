"""A file that fails while being imported."""

import torch  # noqa: F401

VALUE = 1
raise RuntimeError("this module refuses to load")  # <- import_error

"""What the app loads at run time (example Functions, the New Function template, icons), shipped
as the package data of ``playground.resources``: found with :mod:`importlib.resources`, from a
checkout, an editable install or a wheel alike."""

"""What a check or a run works on: the settings (one object the form, the CLI and the workers
read), the problem built from them (a Function, its specs, seeded inputs and targets), and a
problem captured from a running program.
"""

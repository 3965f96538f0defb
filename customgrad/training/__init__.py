"""The gradient-descent loop over a Function (the seed's loop, generalised): losses, optimizers,
one step at a time.
"""

"""The check of a backward: the analytic-vs-numerical Jacobian (jacobian/), gradcheck's sub-checks,
the projected and double-backward checks, the diagnosis of a failure, the inspector, second
order, verify() (the one pipeline), the records of what they found and a report's notebook
display.
"""

"""Where Functions come from: resolving a TARGET (gallery name, file.py:Class, module:Class), the
gallery and its catalog.
"""

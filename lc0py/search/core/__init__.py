"""The search core: the tree as flat arrays and the per-node work compiled with numba (issue 10)."""

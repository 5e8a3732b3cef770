"""lc0py.backends.gpu"""

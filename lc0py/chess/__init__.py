"""lc0py.chess"""

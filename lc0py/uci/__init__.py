"""lc0py.uci"""

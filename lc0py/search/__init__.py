"""lc0py.search"""

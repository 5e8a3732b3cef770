"""lc0py.tools"""

"""lc0py.model"""

"""lc0py.weights"""

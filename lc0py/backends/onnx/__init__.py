"""lc0py.backends.onnx"""

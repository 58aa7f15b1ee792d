"""Serving: ONNX export (fp32, int8) against PyTorch, and the web app's screenshot."""

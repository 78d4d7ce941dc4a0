"""Models to check passes on, made here: tiny seeded ONNX models, the onnx
wheel's light models with realistic weights (``models``, ``weights``), and
transformer and vision blocks exported with torch.export (``blocks``; the
``zoo`` extra). ``tvm_numguard.testing`` names the common ones too."""

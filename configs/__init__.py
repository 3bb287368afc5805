"""Model presets (``models/<name>.yaml``), shipped in the wheel as ``gge.configs``."""

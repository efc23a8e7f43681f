"""layerbench: what does each layer under a MySQL-compatible database cost?"""

__version__ = "0.1.0"

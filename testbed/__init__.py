"""testbed: run infrastructure tasks for agents on real virtual machines."""

__version__ = "0.1.0"

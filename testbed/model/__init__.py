"""Pure schemas and loaders for images, topologies, tasks and jobs (no I/O beyond reading)."""

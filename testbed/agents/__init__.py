"""Agents: who decides the next command. See `testbed.agents.base` for the interface."""

"""One run's phases: provision, snapshot, setup, agent, verify, reboot, teardown."""

"""Guest side: SSH sessions, readiness, bounded command execution, per-OS dialects."""

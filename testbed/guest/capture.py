"""Bounded output capture: keeps the head and the tail, drops the middle.

Contract: at most `limit` bytes are kept however much the command prints; when output
exceeds it, the first and last `limit/2` bytes are kept with a marker between them, and
`truncated` is set (Harbor truncates in the middle the same way).
"""

from __future__ import annotations

from collections import deque


class BoundedCapture:
    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 2)
        self.head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        half = self.limit // 2
        room = half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self._tail.append(chunk)
            self._tail_len += len(chunk)
            while self._tail and self._tail_len - len(self._tail[0]) >= self.limit - half:
                self._tail_len -= len(self._tail.popleft())

    @property
    def truncated(self) -> bool:
        return self.total > self.limit

    def text(self) -> str:
        tail = b"".join(self._tail)
        if not self.truncated:
            return (bytes(self.head) + tail).decode(errors="replace")
        keep = self.limit - len(self.head)
        tail = tail[-keep:] if keep > 0 else b""
        dropped = self.total - len(self.head) - len(tail)
        marker = f"\n[... {dropped} bytes truncated by testbed ...]\n".encode()
        return (bytes(self.head) + marker + tail).decode(errors="replace")

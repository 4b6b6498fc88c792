"""systemd's notify protocol (sd_notify(3)): datagrams to ``$NOTIFY_SOCKET``, nothing to install.

The supervisor says ``READY=1`` once every agent runs, ``STATUS=...`` with progress,
``WATCHDOG=1`` at half the ``$WATCHDOG_USEC`` interval, and ``STOPPING=1`` when it stops. With
no ``NOTIFY_SOCKET`` (not under systemd, ``Type=simple``) every call does nothing.
"""

from __future__ import annotations

import os
import socket


class Notifier:
    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        if address.startswith("@"):  # the abstract namespace
            address = "\0" + address[1:]
        self._address = address
        self._socket: socket.socket | None = None
        if address:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        mine = not pid or pid == str(os.getpid())
        self.watchdog_interval = int(usec) / 2e6 if usec.isdigit() and int(usec) > 0 and mine else None

    @property
    def enabled(self) -> bool:
        return self._socket is not None

    def notify(self, *fields: str) -> None:
        """Send ``KEY=value`` fields in one datagram; errors are ignored, as sd_notify does."""
        if self._socket is None:
            return
        try:
            self._socket.sendto("\n".join(fields).encode(), self._address)
        except OSError:
            pass

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

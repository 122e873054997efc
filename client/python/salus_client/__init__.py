"""salus_client: run a PyTorch (or any) training loop under the salus daemon.

A training loop goes under ``salus serve`` without re-indentation::

    import salus_client
    sess = salus_client.Session(name="resnet18", total_time=600, persistent=500, ephemeral=1500)
    for batch in sess.iterate(loader):   # each step is one iteration
        step(batch)
    sess.close()

``with sess.iteration():`` gates one step explicitly. Evaluation and checkpointing
belong between iterations (``sess.end_iteration()`` first, inside ``iterate``), so
they do not hold the lane. Install with ``pip install ./client/python``.

Standard library only. The wire protocol is docs/protocol.md (framed JSON over a Unix
socket or TCP, one connection per session). See :class:`Session` for the parameters
and :mod:`salus_client.errors` for what can go wrong.
"""

__version__ = "0.1.0"

from .errors import (DaemonGone, DaemonUnavailable, Evicted, PermissionDenied, ProtocolError, Rejected,
                     SalusError, SessionLost, Unauthorized)
from .protocol import DEFAULT_SOCKET, SYSTEM_SOCKET, default_socket, resolve_address, resolve_token
from .session import Session

__all__ = [
    "Session", "SalusError", "DaemonUnavailable", "DaemonGone", "SessionLost", "Evicted",
    "Rejected", "Unauthorized", "PermissionDenied", "ProtocolError", "DEFAULT_SOCKET", "SYSTEM_SOCKET", "default_socket", "resolve_address",
    "resolve_token", "__version__",
]

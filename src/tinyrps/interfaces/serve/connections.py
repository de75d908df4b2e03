"""uvicorn's HTTP/1.1 connections with deadlines: a request's head within HEAD_TIMEOUT_S of the connection
opening or of the previous answer, an idle keep-alive connection closed after IDLE_TIMEOUT_S, at most
MAX_CONNECTIONS at once.
"""
from __future__ import annotations


# connections open at once (uvicorn answers 503 beyond)
MAX_CONNECTIONS = 256

# A request's head must arrive within this long of its connection opening or of the previous
# answer (a silent or slow-writing client holds a connection no longer); its body within BODY_TIMEOUT_S.
HEAD_TIMEOUT_S = 10.0
IDLE_TIMEOUT_S = 5.0


def server_config(app, **options):
    """uvicorn's settings: the timeouts of TimedConnection, the bound on connections."""
    import uvicorn
    return uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5,
                          http=timed_connection_class(), timeout_keep_alive=IDLE_TIMEOUT_S,
                          limit_concurrency=MAX_CONNECTIONS, **options)


def timed_connection_class():
    """uvicorn's HTTP/1.1 connection with a deadline for each request's head: HEAD_TIMEOUT_S from
    the connection's opening, or from the previous answer. uvicorn times out only the wait after
    an answer (IDLE_TIMEOUT_S): a client that connects and sends nothing, or its head a byte at
    a time, would hold its connection for good."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class TimedConnection(H11Protocol):
        head_timer = None

        def connection_made(self, transport):
            super().connection_made(transport)
            self._head_deadline()

        def handle_events(self):
            cycle = self.cycle
            super().handle_events()
            if self.cycle is not cycle:           # a request's head arrived whole
                self._no_deadline()

        def on_response_complete(self):
            self._head_deadline()                 # before: the next request may be waiting, and start now
            super().on_response_complete()

        def connection_lost(self, exc):
            self._no_deadline()
            super().connection_lost(exc)

        def _head_deadline(self):
            self._no_deadline()
            self.head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._head_late)

        def _no_deadline(self):
            if self.head_timer is not None:
                self.head_timer.cancel()
                self.head_timer = None

        def _head_late(self):
            self.head_timer = None
            if not self.transport.is_closing():
                self.transport.close()
    return TimedConnection

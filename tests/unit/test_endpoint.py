"""Where sysbench connects (endpoint.py): described as user@host:port/database, its password never printed."""

from __future__ import annotations

from layerbench.endpoint import Endpoint
from layerbench.secrets import Secret


def test_an_endpoint_describes_itself_and_never_prints_its_password() -> None:
    endpoint = Endpoint("10.0.0.2", 3307, "lb", Secret("pa55word"))
    assert endpoint.describe() == "lb@10.0.0.2:3307/sbtest"
    assert "pa55word" not in f"{endpoint} {endpoint!r} {endpoint.password}"
    assert endpoint.password.reveal() == "pa55word" and endpoint.socket is None

"""validate's probe of a path to a server's port (issue #42): a short-lived listener on a host, and a dial from a
host that reads its greeting, so a port that some other program answers on does not pass for ours.

Both are small Perl programs (perl-base is part of every Debian and Ubuntu system; IO::Socket::INET and IO::Select
are in it): the listener binds the address and port it is given, says `LISTENING`, greets each connection with
GREETING, and ends when its standard input closes (the SSH session that holds it, hosts/procs.py held) or after
60 s; the dialler connects with a 5 s timeout and prints the first line it reads. On this machine the dial is a
Python socket."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

from layerbench.errors import RunFailed
from layerbench.hosts import procs
from layerbench.hosts.inventory import Host

GREETING = "layerbench-probe"
LISTENER = ("use IO::Socket::INET; use IO::Select; $| = 1; "
            "my $s = IO::Socket::INET->new(LocalAddr => $ARGV[0], LocalPort => $ARGV[1], Listen => 5, "
            "ReuseAddr => 1) or do { print \"NOBIND $!\\n\"; exit 1 }; print \"LISTENING\\n\"; alarm 60; "
            "my $sel = IO::Select->new($s, \\*STDIN); while (my @r = $sel->can_read) { for my $h (@r) { "
            "if ($h == $s) { my $c = $s->accept or next; print $c \"" + GREETING + "\\n\"; close $c } "
            "else { my $b; exit 0 unless sysread(STDIN, $b, 1) } } }")
DIALLER = ("use IO::Socket::INET; my $c = IO::Socket::INET->new(PeerAddr => $ARGV[0], PeerPort => $ARGV[1], "
           "Timeout => 5) or do { print \"NOCONNECT $!\\n\"; exit 1 }; my $l = <$c>; print $l // \"CLOSED\\n\"")


@contextlib.contextmanager
def listening(host: Host, address: str, port: int) -> Iterator[None]:
    """A listener on address:port on `host` for the block; RunFailed naming the host, the address and the port
    (and why: the address is not the host's, the port is taken, no perl) when it cannot listen there."""
    with procs.held(host.command(["perl", "-e", LISTENER, address, str(port)]), timeout=15) as popen:
        first = popen.stdout.readline().strip() if popen.stdout is not None else ""
        if first != "LISTENING":
            said = first.removeprefix("NOBIND ") or "no output (is perl there?)"
            raise RunFailed(f"hosts.{host.name}: cannot listen on {address}:{port} there ({said[:160]})")
        yield


def dial(host: Host, address: str, port: int) -> str | None:
    """None when a connection from `host` to address:port reads the listener's greeting; else why not."""
    if host.is_local:
        return dial_here(address, port)
    try:
        done = host.run(["perl", "-e", DIALLER, address, str(port)], name=f"dial from {host.name}", timeout=30)
    except RunFailed as error:
        return str(error)
    said = done.output.strip()
    return None if said == GREETING else (said.removeprefix("NOCONNECT ") or "no answer")[:160]


def dial_here(address: str, port: int) -> str | None:
    try:
        with socket.create_connection((address, port), timeout=5) as conn:
            conn.settimeout(5)
            said = conn.makefile("r", encoding="ascii", errors="replace").readline().strip()
    except OSError as error:
        return error.strerror or type(error).__name__
    return None if said == GREETING else f"something else answers there ({said[:40] or 'nothing said'})"

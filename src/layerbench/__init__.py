"""layerbench: what does each layer under a MySQL-compatible database cost?"""

import os
import signal
import sys

__version__ = "0.1.0"


def _exit_interrupted(signum: int, frame: object) -> None:
    os._exit(130)  # still importing: nothing has been created, and a half-imported module must not be used


if os.path.basename(sys.argv[0] if sys.argv else "") in ("layerbench", "-m"):
    # the command line is starting: a signal during its imports ends it at once (exit 130), not in a traceback;
    # cli.main() installs the handlers that take down what a command started
    for _signal in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(_signal, _exit_interrupted)

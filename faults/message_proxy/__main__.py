"""``python3 -m faults.message_proxy --control-port P [--history PATH] [--log-dir DIR]``."""

from __future__ import annotations

import argparse
import logging
import signal
import sys

from faults.message_proxy.server import serve


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m faults.message_proxy")
    p.add_argument("--control-port", type=int, required=True)
    p.add_argument("--history", help="the run's history.jsonl, where what it did to a message is written")
    p.add_argument("--log-dir", help="unused: its log is its standard output, which the harness keeps")
    args = p.parse_args(argv)
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        serve(args.control_port, args.history)
    except OSError as e:
        logging.getLogger("message-proxy").error("cannot listen on 127.0.0.1:%d: %s", args.control_port, e)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

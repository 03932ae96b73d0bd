"""Start Funnel Explorer: `python app.py [--host H] [--port P] [--corpus NAME]`."""

from __future__ import annotations

import argparse
import logging
import os

from app import build_app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default=os.environ.get("FUNNEL_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("FUNNEL_PORT", 7860)))
    parser.add_argument("--corpus", default=os.environ.get("FUNNEL_CORPUS", "wiki"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    build_app(args.corpus).launch(server_name=args.host, server_port=args.port)


if __name__ == "__main__":
    main()

"""`python -m engine`: the command line (engine/cli)."""

from engine.cli.main import main

raise SystemExit(main())

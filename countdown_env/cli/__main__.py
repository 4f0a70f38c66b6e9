"""``python -m countdown_env.cli ...``: the ``countdown`` command."""

from . import main

raise SystemExit(main())

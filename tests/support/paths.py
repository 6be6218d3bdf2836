"""Where the repository's folders are, for tests in any tier (tests/<tier>/test_*.py)."""

from __future__ import annotations

import os

SUPPORT = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(SUPPORT))
SCENARIOS = os.path.join(ROOT, "scenarios")
STARTER = os.path.join(SCENARIOS, "starter")
REGRESSIONS = os.path.join(SCENARIOS, "regressions")
DATA = os.path.join(SUPPORT, "data")

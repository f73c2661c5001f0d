"""Root conftest: puts the repository root on sys.path so tests can import
``tests.helpers`` (the scripted OpenAI-compatible server)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

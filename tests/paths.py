"""Where things are, for tests in any folder below tests/ (which pytest puts on sys.path)."""
from pathlib import Path

TESTS = Path(__file__).resolve().parent   # tests/: the rank-side workers live here
ROOT = TESTS.parent                       # the repository
LIB = ROOT / "lib"
NOTEBOOKS = ROOT / "notebooks"

#!/usr/bin/env bash
# The house in wings: includes flow downward only (tests/wings.py says how,
# docs/architecture.md why).
set -euo pipefail
exec python3 "$(dirname "$0")/wings.py"

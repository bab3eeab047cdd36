#!/usr/bin/env bash
# The main job: set up, then simulate the flagship scenario (free-floating spacecraft with a
# 7-DoF arm under computed-torque control) and write out/spacecraft_arm/{trajectory.mcap,
# summary.json,*.png}.  Extra arguments go to vm-sim, e.g. `bash scripts/demo.sh --duration 2`.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bash "$here/scripts/setup.sh" sim,fast
cd "$here"
exec .venv/bin/vm-sim spacecraft_arm --out out/spacecraft_arm "$@"

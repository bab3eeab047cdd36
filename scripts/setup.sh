#!/usr/bin/env bash
# Create ./.venv (if missing) and install vm_dynamics with the extras given as arguments.
#   bash scripts/setup.sh sim            # simulator: matplotlib, tqdm, rosbags
#   bash scripts/setup.sh sim,test,dds   # + Pinocchio, MuJoCo oracles, DDS transport
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
extras=${1:-sim}
py=${PYTHON:-python3}
if [ ! -x "$here/.venv/bin/python" ]; then
  "$py" -m venv "$here/.venv"
  "$here/.venv/bin/python" -m pip install -q --upgrade pip
fi
"$here/.venv/bin/python" -m pip install -q -e "$here[$extras]"

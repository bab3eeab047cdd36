#!/usr/bin/env bash
# Create ./.venv (if missing), install vm_dynamics with the extras given as arguments, then
# compile the numba kernels into their disk cache (vm-sim --compile), so that the first run
# starts in seconds.
#   bash scripts/setup.sh sim            # simulator: matplotlib, tqdm, rosbags
#   bash scripts/setup.sh sim,test,dds   # + Pinocchio, MuJoCo oracles, DDS transport
# pip shows one line per package it fetches (its full output is in .venv/pip.log);
# VM_DYNAMICS_COMPILE=0 skips the compile (the first run then compiles, with a notice);
# VM_DYNAMICS_COMPILE=tumbling,uvms compiles those scenarios' kernels only.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
extras=${1:-sim}
py=${PYTHON:-python3}
venv="$here/.venv"

pip_install() {
  # one line per package (no progress bars: CI logs stay short); the whole output in pip.log,
  # and its last lines on failure
  echo "setup: pip install $*"
  # (VM_DYNAMICS_COMPILE=0: should pip run setup.py's install command, it does not compile;
  # the compile runs once, below)
  if ! VM_DYNAMICS_COMPILE=0 "$venv/bin/python" -m pip install --progress-bar off "$@" 2>&1 \
      | tee "$venv/pip.log" \
      | { grep --line-buffered -E '^(Collecting|Successfully|ERROR|WARNING)' \
          | grep --line-buffered -v "^WARNING: Location '.*' is ignored" || true; }; then
    echo "setup: pip install failed; the last lines of $venv/pip.log:" >&2
    tail -n 25 "$venv/pip.log" >&2
    exit 1
  fi
}

if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv"
  "$py" -m venv "$venv"
  pip_install --upgrade pip
fi
pip_install -e "$here[$extras]"
compile=${VM_DYNAMICS_COMPILE:-1}
if [ "$compile" != 0 ]; then
  names=()
  [ "$compile" = 1 ] || read -ra names <<<"${compile//,/ }"
  echo "setup: compiling the dynamics kernels (once; cached on disk for every later run)"
  "$venv/bin/vm-sim" --compile ${names[@]+"${names[@]}"} || echo "setup: not every kernel was compiled; a first run compiles the rest (with a notice)"
fi
echo "setup: done"

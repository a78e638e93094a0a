#!/usr/bin/env bash
# Installs GT's build and test dependencies on Debian 12 (bookworm). Fast when everything is
# already there: it asks dpkg first and only runs apt-get when a package is missing.
# Runs as root, or through sudo otherwise. CUDA is not installed here (build machines have it
# preinstalled at /usr/local/cuda; the build detects it).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev libboost-program-options-dev
  libprotobuf-dev protobuf-compiler
  libyaml-cpp-dev libspdlog-dev libfmt-dev
  catch2
  libopenblas-dev
  libsystemd-dev
  python3-dev pybind11-dev python3-numpy python3-pytest
  dpkg-dev  # dpkg-shlibdeps (the .debs' Depends), dpkg-architecture (tests/deb)
  adduser  # gt-dispatcher/gt-worker depend on it; apt --simulate in tests/deb must find it
  python3-torch  # the reference of tests/python/differential (gt vs PyTorch on CPU)
  clang libclang-rt-14-dev
  chromium  # tests/integration/test_dashboard: the dashboard rendered in a real (headless) browser
  tmux      # gt-top's live test: its screen read back with capture-pane
)

missing=()
for p in "${PACKAGES[@]}"; do
  # "install ok installed" only for a fully installed package (not removed/half-configured).
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "deps.sh: all ${#PACKAGES[@]} packages present"
  exit 0
fi

echo "deps.sh: installing ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "deps.sh: missing packages (${missing[*]}) and not root, and sudo is not available" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "deps.sh: done"

#!/usr/bin/env bash
# Builds (build.sh) and runs every CPU test: ctest (unit + integration; GPU tests are hidden
# tags, run by scripts/device-check.sh), then the Python tests with pytest when there are any,
# then the installed C++ SDK (tests/sdk/check_install.sh), then the Debian packages
# (scripts/package.sh into build/packages, checked by tests/deb/check_packages.sh; the package
# build tree build/deb-build is incremental, so ~1 minute after the first time).
# Exits non-zero if anything failed. Works from any directory.
#
#   scripts/test.sh [extra cmake args...]       e.g. scripts/test.sh -DGT_CUDA=OFF
#   GT_BUILD_DIR, GT_CMAKE_ARGS, GT_SKIP_DEPS   as for build.sh
#   GT_TEST_JOBS (default 2), GT_TEST_TIMEOUT (seconds per test, default 300)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BUILD=${GT_BUILD_DIR:-$ROOT/build}
JOBS=${GT_TEST_JOBS:-2}
TIMEOUT=${GT_TEST_TIMEOUT:-300}

if ! "$ROOT/scripts/build.sh" "$@"; then
  echo "test.sh: BUILD FAILED" >&2
  exit 1
fi

ctest_result=FAIL
pytest_result="skipped (no tests/python/test_*.py)"
failed=0
# Each stage's output also goes to $LOGS/<stage>.log; the tail of a failed stage's log is printed
# again after the summary, so that the end of a long CI log says why it failed.
LOGS=$BUILD/test-logs
rm -rf "$LOGS"
mkdir -p "$LOGS"
logged() {  # logged <stage> <command...>: runs the command, its output to the terminal and the log
  local stage=$1; shift
  "$@" 2>&1 | tee "$LOGS/$stage.log"
}

echo
echo "test.sh: ctest -j$JOBS --timeout $TIMEOUT ($BUILD)"
if logged ctest ctest --test-dir "$BUILD" --output-on-failure --no-tests=error -j"$JOBS" \
    --timeout "$TIMEOUT"; then
  ctest_result=PASS
else
  failed=1
fi

if [[ -d "$ROOT/tests/python" ]] && compgen -G "$ROOT/tests/python/test_*.py" >/dev/null; then
  echo
  echo "test.sh: pytest tests/python (PYTHONPATH=$BUILD/python)"
  if PYTHONPATH="$BUILD/python${PYTHONPATH:+:$PYTHONPATH}" \
      logged pytest /usr/bin/python3 -m pytest -q -p no:cacheprovider "$ROOT/tests/python"; then
    pytest_result=PASS
  else
    pytest_result=FAIL
    failed=1
  fi
fi

sdk_result=FAIL
echo
echo "test.sh: tests/sdk/check_install.sh (the installed C++ SDK, from a temporary prefix)"
sdk_rc=0
logged sdk "$ROOT/tests/sdk/check_install.sh" "$BUILD" || sdk_rc=$?
case $sdk_rc in
  0) sdk_result=PASS ;;
  77) sdk_result="skipped (sanitizer build)" ;;
  *) failed=1 ;;
esac

deb_result=FAIL
echo
if [[ $sdk_rc -eq 77 ]]; then
  deb_result="skipped (sanitizer build)"
else
  echo "test.sh: scripts/package.sh + tests/deb/check_packages.sh (the Debian packages)"
  if logged deb bash -c 'GT_SKIP_DEPS=1 "$1/scripts/package.sh" && "$1/tests/deb/check_packages.sh"' \
      deb "$ROOT"; then
    deb_result=PASS
  else
    failed=1
  fi
fi

echo
echo "==================== test summary ===================="
echo "  build   PASS ($BUILD)"
echo "  ctest   $ctest_result"
echo "  pytest  $pytest_result"
echo "  sdk     $sdk_result"
echo "  deb     $deb_result"
echo "======================================================"
if [[ $failed -ne 0 ]]; then
  for stage in ctest pytest sdk deb; do
    result_var=${stage}_result
    [[ ${!result_var} == FAIL && -s "$LOGS/$stage.log" ]] || continue
    echo
    echo "---- the end of the failed stage '$stage' ($LOGS/$stage.log) ----"
    tail -n 30 "$LOGS/$stage.log"
  done
  echo "test.sh: FAILED" >&2
  exit 1
fi
echo "test.sh: all tests passed"

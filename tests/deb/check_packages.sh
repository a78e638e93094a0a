#!/usr/bin/env bash
# Checks the Debian packages of scripts/package.sh without touching this machine's root:
#   1. each .deb's control data: name, version, Depends (Debian packages only, nothing from
#      /usr/local/cuda), conffiles, maintainer scripts; its files, their modes and owners;
#   2. apt can satisfy all their dependencies on this Debian release (apt-get --simulate);
#   3. dpkg-deb -x into a throwaway root: the daemons' libraries all resolve, a client built
#      against the extracted libgtclient-dev (find_package(gt), and pkg-config gt) computes the
#      right value through the extracted daemons, found relative to the library as on a real
#      install, and so does `import gt` from the extracted python3-gt;
#   4. the maintainer scripts: sh -n, shellcheck when installed, and postinst/prerm/postrm run
#      against the throwaway root ($DPKG_ROOT) with adduser/getent/chown/systemctl stubbed.
# Exits non-zero on any failure. Used by scripts/test.sh.
#
#   tests/deb/check_packages.sh [packages dir]     default: $GT_DEB_OUT or <repo>/build/packages
set -euo pipefail
# No `producer | grep -q`: grep -q exits at the first match and, under pipefail, the producer's
# SIGPIPE would fail the check. Such greps send their output to /dev/null instead.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PKGS=$(cd "${1:-${GT_DEB_OUT:-$ROOT/build/packages}}" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gt-deb-check.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
R=$TMP/root
ARCH=$(dpkg --print-architecture)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
LIBDIR=usr/lib/$MULTIARCH

fail() { echo "check_packages: FAIL: $*" >&2; exit 1; }
step() { echo "check_packages: $*"; }

# --- 1. control data and contents ----------------------------------------------------------
deb_of() { local f; f=$(compgen -G "$PKGS/$1_*_$ARCH.deb" | head -1) || true
  [[ -n "$f" ]] || fail "no $1_*_$ARCH.deb in $PKGS"; echo "$f"; }
field() { dpkg-deb --field "$1" "$2"; }
# has <deb> <mode-regex> <path>: the file is in the package, with that mode, owned root/root.
has() {
  local line
  line=$(dpkg-deb --contents "$1" | awk -v p="./$3" '$6 == p {print}' |
         head -1)
  [[ -n "$line" ]] || fail "$(basename "$1"): no /$3"
  [[ "$line" =~ ^$2\ root/root ]] || fail "$(basename "$1"): /$3: wrong mode/owner: $line"
}
depends_on() { [[ ", $(field "$1" Depends), " == *", $2"[\ ,]* ]] ||
  fail "$(basename "$1"): Depends lacks $2: $(field "$1" Depends)"; }
conffiles() { dpkg-deb --ctrl-tarfile "$1" | tar -xO ./conffiles 2>/dev/null || true; }

VERSION=$(sed -n 's/^project(gt VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
for p in gt-dispatcher gt-worker libgtclient0 libgtclient-dev python3-gt; do
  deb=$(deb_of "$p")
  step "$(basename "$deb"): Depends: $(field "$deb" Depends)"
  [[ "$(field "$deb" Package)" == "$p" ]] || fail "$deb: Package is not $p"
  [[ "$(field "$deb" Version)" == "$VERSION" ]] || fail "$deb: Version is not $VERSION"
  # Only Debian's packages: a CUDA library from /usr/local/cuda has none (no libcudart, libnccl).
  [[ "$(field "$deb" Depends)" != *cuda* && "$(field "$deb" Depends)" != *nvidia* ]] ||
    fail "$deb depends on CUDA packages Debian does not have"
  dpkg-deb --contents "$deb" | awk '$2 != "root/root" {exit 1}' || fail "$deb: a file not root/root"
done
D=$(deb_of gt-dispatcher) W=$(deb_of gt-worker) L=$(deb_of libgtclient0)
DEV=$(deb_of libgtclient-dev) PY=$(deb_of python3-gt)

for deb in "$D" "$W"; do
  depends_on "$deb" adduser
  depends_on "$deb" libc6          # dpkg-shlibdeps ran
  for s in postinst prerm postrm; do
    dpkg-deb --ctrl-tarfile "$deb" | tar -tv "./$s" 2>/dev/null | grep '^-rwxr-xr-x' >/dev/null ||
      fail "$(basename "$deb"): no executable $s"
  done
done
for lib in libprotobuf32 libyaml-cpp0.7 libspdlog1.10-fmt9 libfmt9 libssl3 libsystemd0; do depends_on "$D" "$lib"; done
depends_on "$W" libopenblas0
has "$D" '-rwxr-xr-x' usr/bin/gt-dispatcherd
has "$D" '-rwxr-xr-x' usr/bin/gt-top
has "$D" '-rwxr-xr-x' usr/bin/gt-trace
has "$D" '-rw-r--r--' lib/systemd/system/gt-dispatcher.service
has "$D" '-rw-r--r--' etc/gt/dispatcher.yaml
has "$D" '-rw-------' etc/gt/users.yaml
for f in "$ROOT"/etc/gt/sharding/*.yaml; do has "$D" '-rw-r--r--' "etc/gt/sharding/${f##*/}"; done
want=$( (echo /etc/gt/dispatcher.yaml; echo /etc/gt/users.yaml
         for f in "$ROOT"/etc/gt/sharding/*.yaml; do echo "/etc/gt/sharding/${f##*/}"; done) | sort)
[[ "$(conffiles "$D" | sort)" == "$want" ]] || fail "gt-dispatcher conffiles: $(conffiles "$D")"
has "$W" '-rwxr-xr-x' usr/bin/gt-workerd
has "$W" '-rw-r--r--' 'lib/systemd/system/gt-worker@.service'
has "$W" '-rw-r--r--' etc/gt/worker.yaml
[[ "$(conffiles "$W")" == /etc/gt/worker.yaml ]] || fail "gt-worker conffiles: $(conffiles "$W")"

has "$L" '-rw-r--r--' "$LIBDIR/libgtclient.so.$VERSION"
has "$L" 'lrwxrwxrwx' "$LIBDIR/libgtclient.so.0"
! dpkg-deb --contents "$L" | grep "libgtclient.so " || fail "libgtclient0 holds the dev link"
dpkg-deb --ctrl-tarfile "$L" | tar -xO ./shlibs | grep "^libgtclient 0 libgtclient0" >/dev/null ||
  fail "libgtclient0 has no shlibs entry"
depends_on "$DEV" "libgtclient0 (= $VERSION)"
has "$DEV" 'lrwxrwxrwx' "$LIBDIR/libgtclient.so"
has "$DEV" '-rw-r--r--' "$LIBDIR/libgtclient.a"
has "$DEV" '-rw-r--r--' usr/include/gt/gt.h
has "$DEV" '-rw-r--r--' "$LIBDIR/cmake/gt/gtConfig.cmake"
has "$DEV" '-rw-r--r--' "$LIBDIR/pkgconfig/gt.pc"
has "$PY" '-rw-r--r--' usr/lib/python3/dist-packages/gt/__init__.py
dpkg-deb --contents "$PY" | grep ' ./usr/lib/python3/dist-packages/gt/_gt\.cpython-.*\.so$' >/dev/null ||
  fail "python3-gt has no extension module"
depends_on "$PY" python3-numpy

# --- 2. dependencies satisfiable here ------------------------------------------------------
step "apt-get --simulate install of all five (dependencies satisfiable on this release)"
# --simulate changes nothing (and NoLocking lets it run beside another apt).
apt-get --simulate -o Debug::NoLocking=1 install "$D" "$W" "$L" "$DEV" "$PY" >"$TMP/apt.log" 2>&1 ||
  { cat "$TMP/apt.log"; fail "apt cannot install the packages"; }

# --- 3. a throwaway root -------------------------------------------------------------------
step "extracting into $R"
for deb in "$D" "$W" "$L" "$DEV" "$PY"; do dpkg-deb -x "$deb" "$R"; done
for bin in "$R/usr/bin/gt-dispatcherd" "$R/usr/bin/gt-top" "$R/usr/bin/gt-trace" "$R/usr/bin/gt-workerd" \
    "$R/$LIBDIR/libgtclient.so.0" \
    "$R"/usr/lib/python3/dist-packages/gt/_gt.*.so; do
  if ldd "$bin" | grep -E 'not found|/usr/local/'; then fail "$bin: unresolved or non-Debian libraries"; fi
done
grep -q "^ExecStart=/usr/bin/gt-dispatcherd " "$R/lib/systemd/system/gt-dispatcher.service" ||
  fail "the packaged unit does not run /usr/bin/gt-dispatcherd"
grep -q "^ExecStart=/usr/bin/gt-workerd " "$R/lib/systemd/system/gt-worker@.service" ||
  fail "the packaged unit does not run /usr/bin/gt-workerd"

# Nothing from the build tree: system PATH, no GT_* variables, the library from the root only.
# The daemons must be found from the library's (or the Python package's) own place.
run() { (cd "$TMP" && env -u GT_BIN_DIR -u GT_ADDRESS -u PYTHONPATH PATH=/usr/bin:/bin \
  LD_LIBRARY_PATH="$R/$LIBDIR" timeout 120 "$@"); }
step "building tests/sdk/client against the extracted libgtclient-dev (find_package(gt))"
cmake -S "$ROOT/tests/sdk/client" -B "$TMP/client" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$R/usr" -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF >"$TMP/client.log" ||
  { cat "$TMP/client.log"; fail "configuring the client"; }
cmake --build "$TMP/client" >>"$TMP/client.log" || { cat "$TMP/client.log"; fail "building the client"; }
step "building it with pkg-config gt"
flags=$(PKG_CONFIG_PATH="$R/$LIBDIR/pkgconfig" pkg-config --cflags --libs gt) || fail "pkg-config gt"
# shellcheck disable=SC2086  # word-split the flags on purpose
g++ -O1 "$ROOT/tests/sdk/client/main.cpp" $flags -o "$TMP/app-pc" || fail "building with pkg-config"
step "building it against the static libgtclient.a (pkg-config --static gt)"
static_libs=$(PKG_CONFIG_PATH="$R/$LIBDIR/pkgconfig" pkg-config --static --libs-only-l gt |
              sed 's/-lgtclient//') || fail "pkg-config --static gt"
# shellcheck disable=SC2086  # word-split the flags on purpose
g++ -O1 -std=c++20 -I"$R/usr/include" "$ROOT/tests/sdk/client/main.cpp" "$R/$LIBDIR/libgtclient.a" \
  $static_libs -pthread -o "$TMP/app-static" || fail "building against libgtclient.a"
# A static client has no library place to find the daemons from: GT_BIN_DIR names them.
out=$(run env GT_BIN_DIR="$R/usr/bin" "$TMP/app-static" 2>&1) || { echo "$out"; fail "app-static failed"; }
echo "  $out"
[[ "$out" == *"= 12"* ]] || fail "app-static printed the wrong value"
for app in "$TMP/client/app" "$TMP/app-pc"; do
  run ldd "$app" | grep "$R/$LIBDIR/libgtclient.so.0" >/dev/null ||
    fail "$app does not load the extracted library"
  out=$(run "$app" 2>&1) || { echo "$out"; fail "$app failed"; }
  echo "  $out"
  [[ "$out" == *"= 12"* ]] || fail "$app printed the wrong value"
done
step "import gt from the extracted python3-gt"
out=$(run env PYTHONPATH="$R/usr/lib/python3/dist-packages" /usr/bin/python3 -c \
  'import gt; print("python:", gt.__file__, (gt.ones(2, 2) * 3).sum().item())' 2>&1) ||
  { echo "$out"; fail "import gt"; }
echo "  $out"
[[ "$out" == "python: $R/"*" 12.0" ]] || fail "python3-gt printed the wrong value or module"

# --- 4. maintainer scripts -----------------------------------------------------------------
step "maintainer scripts: syntax, and run against $R with stubs"
for deb in "$D" "$W"; do
  name=$(field "$deb" Package)
  mkdir -p "$TMP/ctl/$name"
  dpkg-deb -e "$deb" "$TMP/ctl/$name"
  for s in postinst prerm postrm; do
    sh -n "$TMP/ctl/$name/$s" || fail "$name $s: syntax"
    if command -v shellcheck >/dev/null; then
      shellcheck -s sh "$TMP/ctl/$name/$s" || fail "$name $s: shellcheck"
    fi
  done
done
# Stubs log their calls; `getent passwd gt` fails until the adduser stub "created" the user.
S=$TMP/stubs
mkdir -p "$S"
for c in adduser chown systemctl getent; do
  cat >"$S/$c" <<STUB
#!/bin/sh
echo "$c \$*" >>"$TMP/calls"
if [ $c = adduser ]; then touch "$TMP/user-exists"; fi
if [ $c = getent ]; then test -e "$TMP/user-exists"; fi
STUB
  chmod +x "$S/$c"
done
maint() { : >"$TMP/calls"; env PATH="$S:/usr/bin:/bin" DPKG_ROOT="$R" sh "$TMP/ctl/$1/$2" "${@:3}" ||
  fail "$1 $2 ${*:3} exited non-zero"; }
calls() { cat "$TMP/calls"; }

chmod 0644 "$R/etc/gt/users.yaml"  # postinst must restore 0600
maint gt-dispatcher postinst configure ''
[[ "$(calls)" == *"adduser --system --group --no-create-home"*" gt"* ]] || fail "postinst did not add gt: $(calls)"
[[ "$(calls)" == *"chown gt:gt $R/etc/gt/users.yaml"* ]] || fail "postinst did not chown users.yaml"
[[ "$(stat -c %a "$R/etc/gt/users.yaml")" == 600 ]] || fail "users.yaml not 0600 after postinst"
[[ "$(calls)" != *systemctl* ]] || fail "postinst ran systemctl for a \$DPKG_ROOT install"
maint gt-worker postinst configure ''   # the user exists now: idempotent
[[ "$(calls)" != *adduser* && "$(calls)" != *chown* ]] || fail "gt-worker postinst: $(calls)"
maint gt-dispatcher postinst configure "$VERSION"   # an upgrade
[[ "$(calls)" != *adduser* ]] || fail "postinst re-added the user on upgrade"
for name in gt-dispatcher gt-worker; do
  maint "$name" prerm remove
  maint "$name" postrm remove
done
mkdir -p "$R/etc/systemd/system/multi-user.target.wants" "$R/var/cache/gt/cuda" "$R/var/log/gt"
touch "$R/etc/systemd/system/multi-user.target.wants/gt-worker@0.service" \
      "$R/etc/systemd/system/multi-user.target.wants/gt-dispatcher.service"
maint gt-worker postrm purge
[[ ! -e "$R/etc/systemd/system/multi-user.target.wants/gt-worker@0.service" && ! -e "$R/var/cache/gt" ]] ||
  fail "gt-worker purge left its enablement link or /var/cache/gt"
[[ -e "$R/etc/systemd/system/multi-user.target.wants/gt-dispatcher.service" && -d "$R/var/log/gt" ]] ||
  fail "gt-worker purge removed gt-dispatcher's files"
maint gt-dispatcher postrm purge
[[ ! -e "$R/etc/systemd/system/multi-user.target.wants/gt-dispatcher.service" && ! -e "$R/var/log/gt" ]] ||
  fail "gt-dispatcher purge left its enablement link or /var/log/gt"

echo "check_packages: PASS"

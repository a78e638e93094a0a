# Debian packages (issue 14): `cpack -G DEB` in a build configured with CMAKE_INSTALL_PREFIX=/usr
# (scripts/package.sh does both) makes one .deb per install component:
#
#   gt-dispatcher     bin/gt-dispatcherd, bin/gt-top, bin/gt-trace, its unit,
#                     /etc/gt/{dispatcher,users}.yaml, sharding/
#   gt-worker         bin/gt-workerd, gt-worker@.service, /etc/gt/worker.yaml
#   libgtclient0      the shared library (SONAME libgtclient.so.0)
#   libgtclient-dev   headers, libgtclient.a, the .so link, CMake package and gt.pc
#   python3-gt        the `gt` package in /usr/lib/python3/dist-packages
#
# The units and /etc/gt are EXCLUDE_FROM_ALL: a plain `cmake --install` (the SDK, any prefix)
# installs what it did before; only the package components carry system files.
# tests/deb/check_packages.sh checks the result.

set(GT_DEB_DIR ${CMAKE_CURRENT_LIST_DIR})
set(GT_DEB_BINARY_DIR ${CMAKE_BINARY_DIR}/deploy/debian)

# The units in deploy/systemd are written for a manual install into /usr/local/bin; the packaged
# copies run the binaries from this build's bindir (/usr/bin).
foreach(unit gt-dispatcher.service gt-worker@.service)
  file(READ ${PROJECT_SOURCE_DIR}/deploy/systemd/${unit} text)
  string(REPLACE "ExecStart=/usr/local/bin/" "ExecStart=${CMAKE_INSTALL_FULL_BINDIR}/" text "${text}")
  file(WRITE ${GT_DEB_BINARY_DIR}/${unit} "${text}")
endforeach()
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/deploy/systemd/gt-dispatcher.service
  ${PROJECT_SOURCE_DIR}/deploy/systemd/gt-worker@.service)

# Debian's (not GNUInstallDirs') places: units in /lib/systemd/system (bookworm has no merged-/usr
# unit dir in its packages), configuration in /etc whatever the prefix.
set(GT_DEB_UNIT_DIR /lib/systemd/system)
install(FILES ${GT_DEB_BINARY_DIR}/gt-dispatcher.service DESTINATION ${GT_DEB_UNIT_DIR}
        COMPONENT dispatcher EXCLUDE_FROM_ALL)
install(FILES ${GT_DEB_BINARY_DIR}/gt-worker@.service DESTINATION ${GT_DEB_UNIT_DIR}
        COMPONENT worker EXCLUDE_FROM_ALL)
install(FILES ${PROJECT_SOURCE_DIR}/etc/gt/dispatcher.yaml DESTINATION /etc/gt
        COMPONENT dispatcher EXCLUDE_FROM_ALL)
# Token hashes: 0600 from the start (postinst gives it to the gt user).
install(FILES ${PROJECT_SOURCE_DIR}/etc/gt/users.yaml DESTINATION /etc/gt
        PERMISSIONS OWNER_READ OWNER_WRITE COMPONENT dispatcher EXCLUDE_FROM_ALL)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/etc/gt/sharding DESTINATION /etc/gt
        COMPONENT dispatcher EXCLUDE_FROM_ALL FILES_MATCHING PATTERN "*.yaml")
install(FILES ${PROJECT_SOURCE_DIR}/etc/gt/worker.yaml DESTINATION /etc/gt
        COMPONENT worker EXCLUDE_FROM_ALL)

# Maintainer scripts and conffiles of a daemon package, generated into the build tree.
#   gt_deb_control(<component> <package> UNITS <for systemctl> UNIT_GLOB <for *.wants links>
#                  PURGE_DIR <dir> OWNS_USERS_FILE yes|no CONFFILES <files under /etc>)
function(gt_deb_control comp pkg)
  cmake_parse_arguments(A "" "UNITS;UNIT_GLOB;PURGE_DIR;OWNS_USERS_FILE" "CONFFILES" ${ARGN})
  set(GT_DEB_PACKAGE ${pkg})
  set(GT_DEB_UNITS "${A_UNITS}")
  set(GT_DEB_UNIT_GLOB "${A_UNIT_GLOB}")
  set(GT_DEB_PURGE_DIR "${A_PURGE_DIR}")
  set(GT_DEB_OWNS_USERS_FILE ${A_OWNS_USERS_FILE})
  set(out ${GT_DEB_BINARY_DIR}/${comp})
  foreach(script postinst prerm postrm)
    configure_file(${GT_DEB_DIR}/${script}.in ${out}/${script} @ONLY)
  endforeach()
  # Every file under /etc is a conffile: dpkg keeps the admin's edits on upgrade (and asks).
  list(JOIN A_CONFFILES "\n" conffiles)
  file(WRITE ${out}/conffiles "${conffiles}\n")
  string(TOUPPER ${comp} COMP)
  set(CPACK_DEBIAN_${COMP}_PACKAGE_CONTROL_EXTRA
      ${out}/conffiles ${out}/postinst ${out}/prerm ${out}/postrm PARENT_SCOPE)
endfunction()

file(GLOB GT_DEB_SHARDING RELATIVE ${PROJECT_SOURCE_DIR}/etc ${PROJECT_SOURCE_DIR}/etc/gt/sharding/*.yaml)
list(TRANSFORM GT_DEB_SHARDING PREPEND /etc/)
gt_deb_control(dispatcher gt-dispatcher
  UNITS gt-dispatcher.service UNIT_GLOB gt-dispatcher.service PURGE_DIR /var/log/gt
  OWNS_USERS_FILE yes
  CONFFILES /etc/gt/dispatcher.yaml /etc/gt/users.yaml ${GT_DEB_SHARDING})
# Quoted: the shell must pass the pattern to systemctl, which matches it against loaded units.
gt_deb_control(worker gt-worker
  UNITS "'gt-worker@*.service'" UNIT_GLOB "gt-worker@*.service" PURGE_DIR /var/cache/gt
  OWNS_USERS_FILE no
  CONFFILES /etc/gt/worker.yaml)

# --- CPack ---
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gt)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "GT maintainers <gt-maintainers@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEB_COMPONENT_INSTALL ON)
# Named explicitly: the EXCLUDE_FROM_ALL parts must be packaged too.
set(CPACK_COMPONENTS_ALL dispatcher worker libgtclient0 libgtclient-dev python3-gt)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <name>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
# Installed stripped (the RelWithDebInfo build shares its objects with the dev build via ccache).
set(CPACK_STRIP_FILES ON)
# Depends on the Debian library packages from what the ELF files link (dpkg-shlibdeps)...
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# ...and a shlibs file + ldconfig trigger for libgtclient0. 0.x: any new version may break the
# ABI, so dependents want exactly this one.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
# Descriptions (below): the first line is the synopsis; CPack indents the rest. No
# CPACK_PACKAGE_DESCRIPTION_SUMMARY, which CPack would put before every package's synopsis.
# libgtclient.a keeps the RelWithDebInfo build's debug info otherwise (CPACK_STRIP_FILES
# strips only executables and shared libraries): ~70 MB instead of a few.
set(CPACK_PRE_BUILD_SCRIPTS ${GT_DEB_DIR}/strip_archives.cmake)
set(CPACK_GT_STRIP ${CMAKE_STRIP})
# Maintainer scripts must be 0755 and control files 0644 whatever the checkout's umask.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DISPATCHER_PACKAGE_NAME gt-dispatcher)
set(CPACK_DEBIAN_DISPATCHER_PACKAGE_SECTION net)
set(CPACK_DEBIAN_DISPATCHER_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_DISPATCHER_DESCRIPTION "GT tensor service dispatcher (gt-dispatcherd)
The per-box dispatcher of GT: client sessions, placement, scheduling. Ships the
gt-dispatcher systemd unit, /etc/gt (dispatcher.yaml, users.yaml, sharding examples),
gt-top, a live terminal view of its workers and sessions, and gt-trace (its
instruction log, or a live recording, as a Chrome/Perfetto trace).")

set(CPACK_DEBIAN_WORKER_PACKAGE_NAME gt-worker)
set(CPACK_DEBIAN_WORKER_PACKAGE_SECTION net)
set(CPACK_DEBIAN_WORKER_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_WORKER_PACKAGE_RECOMMENDS "gt-dispatcher")
set(CPACK_DEBIAN_WORKER_DESCRIPTION "GT tensor service worker (gt-workerd)
One GT worker per device; ships the gt-worker@.service template unit
(gt-worker@0, gt-worker@cpu, ...) and /etc/gt/worker.yaml.")

set(CPACK_DEBIAN_LIBGTCLIENT0_PACKAGE_NAME libgtclient0)
set(CPACK_DEBIAN_LIBGTCLIENT0_PACKAGE_SECTION libs)
# Its embedded default spawns the daemons; a client with GT_ADDRESS needs neither.
set(CPACK_DEBIAN_LIBGTCLIENT0_PACKAGE_RECOMMENDS "gt-dispatcher, gt-worker")
set(CPACK_DEBIAN_LIBGTCLIENT0_DESCRIPTION "GT client library (runtime)
libgtclient.so.0: the C++ tensor API of the GT service.")

set(CPACK_DEBIAN_LIBGTCLIENT-DEV_PACKAGE_NAME libgtclient-dev)
set(CPACK_DEBIAN_LIBGTCLIENT-DEV_PACKAGE_SECTION libdevel)
# The .a links these (gt.pc's Libs.private); the .so needs only libgtclient0.
set(CPACK_DEBIAN_LIBGTCLIENT-DEV_PACKAGE_DEPENDS
    "libgtclient0 (= ${PROJECT_VERSION}), libprotobuf-dev, libspdlog-dev, libfmt-dev, libyaml-cpp-dev")
set(CPACK_DEBIAN_LIBGTCLIENT-DEV_DESCRIPTION "GT client library (development files)
Headers, the static library, the CMake package (find_package(gt)) and gt.pc.")

set(CPACK_DEBIAN_PYTHON3-GT_PACKAGE_NAME python3-gt)
set(CPACK_DEBIAN_PYTHON3-GT_PACKAGE_SECTION python)
# The extension is built for this /usr/bin/python3: the ABI of exactly its minor version.
get_property(GT_DEB_PYTHON_VERSION GLOBAL PROPERTY GT_PYTHON_VERSION)
if(GT_DEB_PYTHON_VERSION)
  string(REPLACE "." ";" _v ${GT_DEB_PYTHON_VERSION})
  list(GET _v 0 _major)
  list(GET _v 1 _minor)
  math(EXPR _next_minor "${_minor} + 1")
  set(CPACK_DEBIAN_PYTHON3-GT_PACKAGE_DEPENDS
      "python3 (>= ${_major}.${_minor}), python3 (<< ${_major}.${_next_minor}), python3-numpy")
else()
  list(REMOVE_ITEM CPACK_COMPONENTS_ALL python3-gt)  # not built (no pybind11 / python3-dev)
endif()
set(CPACK_DEBIAN_PYTHON3-GT_PACKAGE_RECOMMENDS "gt-dispatcher, gt-worker")
set(CPACK_DEBIAN_PYTHON3-GT_DESCRIPTION "GT tensor service Python package
import gt: the Python client of GT (tensors, autograd, nn, optim).")

if(GT_HAVE_CUDA)
  # The CUDA runtime comes from /usr/local/cuda, which no Debian package provides:
  # dpkg-shlibdeps may look there but must not turn it into a dependency.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR})
  message(STATUS "Debian packages of this (CUDA) build: gt-worker would need the CUDA runtime from "
                  "${CUDAToolkit_LIBRARY_DIR} on the target (scripts/package.sh builds with GT_CUDA=OFF)")
endif()

include(CPack)

# The installable C++ SDK (issue 14): `cmake --install` puts
#   <libdir>/libgtclient.so.<major> -> libgtclient.so.<version>   (SONAME libgtclient.so.<major>)
#   <libdir>/libgtclient.a
#   <includedir>/gt/*.h, *.def and gt/core/*.h, *.def
#   <libdir>/cmake/gt/gtConfig.cmake, gtConfigVersion.cmake, gtTargets*.cmake   (gt::gt)
#   <libdir>/pkgconfig/gt.pc
# beside the daemons, so a client project needs only find_package(gt) or `pkg-config gt`.
#
# Both libraries are self-contained: they hold libgtcore and the generated protobuf code too
# (every object is built position-independent, see CMAKE_POSITION_INDEPENDENT_CODE), so a client
# links -lgtclient alone. The in-tree targets keep linking the static `gtclient` + gtcore.
include(CMakePackageConfigHelpers)

set(GT_SDK_OBJECTS
  $<TARGET_OBJECTS:gtclient_api> $<TARGET_OBJECTS:gtclient_session>
  $<TARGET_OBJECTS:gtcore> $<TARGET_OBJECTS:gtproto>)
# What those objects call into. PRIVATE for the shared library: its users need none of it.
set(GT_SDK_PRIVATE_DEPS protobuf::libprotobuf fmt::fmt spdlog::spdlog yaml-cpp Boost::boost)

add_library(gtclient_shared SHARED ${GT_SDK_OBJECTS})
set_target_properties(gtclient_shared PROPERTIES
  OUTPUT_NAME gtclient
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}
  EXPORT_NAME gt)
target_link_libraries(gtclient_shared PRIVATE ${GT_SDK_PRIVATE_DEPS} PUBLIC Threads::Threads)
# Fail at build time, not in a user's link, if anything the objects need was left out. Not in
# sanitizer builds: clang leaves the sanitizer runtime to the executable there.
if(NOT GT_SANITIZE)
  target_link_options(gtclient_shared PRIVATE -Wl,--no-undefined)
endif()
target_include_directories(gtclient_shared INTERFACE
  $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/libgtcore/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(gtclient_shared INTERFACE cxx_std_20)  # the headers use concepts

# The static SDK library (lib/libgtclient.a); named apart from the in-tree `gtclient` archive.
add_library(gtclient_sdk_static STATIC ${GT_SDK_OBJECTS})
set_target_properties(gtclient_sdk_static PROPERTIES
  OUTPUT_NAME gtclient
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)

# COMPONENTs: the Debian packages (deploy/debian/packaging.cmake). The runtime library (and its
# SONAME link) is libgtclient0; everything only a build needs, the .so link included, is -dev.
install(TARGETS gtclient_shared EXPORT gtTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  COMPONENT libgtclient0 NAMELINK_COMPONENT libgtclient-dev)
install(TARGETS gtclient_sdk_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  COMPONENT libgtclient-dev)
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ ${PROJECT_SOURCE_DIR}/libgtcore/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT libgtclient-dev
  FILES_MATCHING PATTERN "*.h" PATTERN "*.def")

set(GT_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/gt)
install(EXPORT gtTargets NAMESPACE gt:: DESTINATION ${GT_CMAKE_INSTALL_DIR} COMPONENT libgtclient-dev)
configure_package_config_file(sdk/gtConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/gtConfig.cmake
  INSTALL_DESTINATION ${GT_CMAKE_INSTALL_DIR})
# 0.x: a new minor version may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/gtConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gtConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/gtConfigVersion.cmake
  DESTINATION ${GT_CMAKE_INSTALL_DIR} COMPONENT libgtclient-dev)

# gt.pc finds the prefix from its own place (${pcfiledir}), so `cmake --install --prefix X`
# and a moved prefix work, not only the configure-time CMAKE_INSTALL_PREFIX.
file(RELATIVE_PATH GT_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" GT_PC_TO_PREFIX "${GT_PC_TO_PREFIX}")
configure_file(sdk/gt.pc.in ${CMAKE_CURRENT_BINARY_DIR}/gt.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT libgtclient-dev)

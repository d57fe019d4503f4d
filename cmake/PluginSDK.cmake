# The plugin SDK, for framework modules built outside this repository:
#   cmake --install build --component plugin_sdk --prefix PREFIX
# installs the C header of the plugin ABI, the C++ SDK over it (the core's framework contract and
# helpers: core/{base,json,api,framework}, as headers and the sources a module compiles into
# itself, so nothing of this build's binaries is needed), and the CMake package
# UnitrainPluginSDK (find_package(UnitrainPluginSDK 1.0) then unitrain_add_plugin_module()).
# The package version is the plugin ABI's: a module built with 1.x loads into any 1.y operator.
include(CMakePackageConfigHelpers)
set(sdk_component COMPONENT plugin_sdk EXCLUDE_FROM_ALL)
set(sdk_include include/unitrain)
set(sdk_share share/UnitrainPluginSDK)
set(sdk_sources "")
foreach(dir core/base core/json core/api core/framework core/framework/abi)
  file(GLOB headers ${PROJECT_SOURCE_DIR}/${dir}/*.h)
  install(FILES ${headers} DESTINATION ${sdk_include}/${dir} ${sdk_component})
  if(NOT dir STREQUAL "core/framework/abi")
    file(GLOB sources RELATIVE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
    list(APPEND sdk_sources ${sources})
  endif()
endforeach()
list(APPEND sdk_sources core/framework/abi/wire.cpp core/framework/abi/module_export.cpp)
install(FILES ${PROJECT_SOURCE_DIR}/core/kube/resource.h DESTINATION ${sdk_include}/core/kube ${sdk_component})
foreach(source ${sdk_sources})
  get_filename_component(dir ${source} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${source} DESTINATION ${sdk_share}/src/${dir} ${sdk_component})
endforeach()
set(UNITRAIN_PLUGIN_SDK_SOURCE_LIST ${sdk_sources})
file(STRINGS ${PROJECT_SOURCE_DIR}/core/framework/abi/unitrain_plugin.h abi_major REGEX "#define UNITRAIN_PLUGIN_ABI_MAJOR")
file(STRINGS ${PROJECT_SOURCE_DIR}/core/framework/abi/unitrain_plugin.h abi_minor REGEX "#define UNITRAIN_PLUGIN_ABI_MINOR")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" abi_major "${abi_major}")
string(REGEX REPLACE ".* ([0-9]+)$" "\\1" abi_minor "${abi_minor}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/UnitrainPluginSDKConfig.cmake.in
               ${PROJECT_BINARY_DIR}/plugin_sdk/UnitrainPluginSDKConfig.cmake @ONLY)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/plugin_sdk/UnitrainPluginSDKConfigVersion.cmake
                                 VERSION ${abi_major}.${abi_minor} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/plugin_sdk/UnitrainPluginSDKConfig.cmake
              ${PROJECT_BINARY_DIR}/plugin_sdk/UnitrainPluginSDKConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/UnitrainPluginModule.cmake
              ${PROJECT_SOURCE_DIR}/core/framework/abi/module.map
        DESTINATION lib/cmake/UnitrainPluginSDK ${sdk_component})

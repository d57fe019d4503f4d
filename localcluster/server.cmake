# Included from localcluster/CMakeLists.txt: the HTTP server, discovery, Tables, TLS and the
# LocalCluster object on top of unitrain_localcluster_store.
add_library(unitrain_localcluster STATIC
  ${CMAKE_CURRENT_LIST_DIR}/server.cpp
  ${CMAKE_CURRENT_LIST_DIR}/discovery.cpp
  ${CMAKE_CURRENT_LIST_DIR}/table.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tls.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kubeconfig_out.cpp
  ${CMAKE_CURRENT_LIST_DIR}/metrics.cpp
  ${CMAKE_CURRENT_LIST_DIR}/openapi.cpp
  ${CMAKE_CURRENT_LIST_DIR}/local_cluster.cpp
  ${CMAKE_CURRENT_LIST_DIR}/webhooks.cpp
)
target_link_libraries(unitrain_localcluster PUBLIC unitrain_localcluster_store PRIVATE unitrain_kube_rest unitrain_asio spdlog::spdlog)
# The Beast-heavy server compiles on its own even in a unity build: in a batch it would be the
# build's single longest compile and share little with its neighbours.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/server.cpp PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)

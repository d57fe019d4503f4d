# Included from localcluster/CMakeLists.txt: the HTTP server and its Beast-free request handling,
# admission and conversion webhooks, discovery, OpenAPI, Tables, TLS and the LocalCluster object on
# top of unitrain_localcluster_store.
add_library(unitrain_localcluster STATIC
  ${CMAKE_CURRENT_LIST_DIR}/server.cpp
  ${CMAKE_CURRENT_LIST_DIR}/admission.cpp
  ${CMAKE_CURRENT_LIST_DIR}/api_front.cpp
  ${CMAKE_CURRENT_LIST_DIR}/body_validation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/content_negotiation.cpp
  ${CMAKE_CURRENT_LIST_DIR}/conversion.cpp
  ${CMAKE_CURRENT_LIST_DIR}/discovery.cpp
  ${CMAKE_CURRENT_LIST_DIR}/http_message.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kubeconfig_out.cpp
  ${CMAKE_CURRENT_LIST_DIR}/local_cluster.cpp
  ${CMAKE_CURRENT_LIST_DIR}/metrics.cpp
  ${CMAKE_CURRENT_LIST_DIR}/non_resource.cpp
  ${CMAKE_CURRENT_LIST_DIR}/openapi.cpp
  ${CMAKE_CURRENT_LIST_DIR}/pod_logs.cpp
  ${CMAKE_CURRENT_LIST_DIR}/protobuf_body.cpp
  ${CMAKE_CURRENT_LIST_DIR}/protobuf_wire.cpp
  ${CMAKE_CURRENT_LIST_DIR}/request_options.cpp
  ${CMAKE_CURRENT_LIST_DIR}/resource_handler.cpp
  ${CMAKE_CURRENT_LIST_DIR}/routing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/service_account_tokens.cpp
  ${CMAKE_CURRENT_LIST_DIR}/table.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tls.cpp
  ${CMAKE_CURRENT_LIST_DIR}/watch_framing.cpp
  ${CMAKE_CURRENT_LIST_DIR}/webhook_client.cpp
)
target_link_libraries(unitrain_localcluster PUBLIC unitrain_localcluster_store PRIVATE unitrain_kube_rest unitrain_asio spdlog::spdlog OpenSSL::Crypto)
# The Beast-heavy server compiles on its own even in a unity build: in a batch it would be the
# build's single longest compile and share little with its neighbours.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/server.cpp PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
# The other, Beast-free files are small and share their headers: one batch.
set_target_properties(unitrain_localcluster PROPERTIES UNITY_BUILD_BATCH_SIZE 32)
# clang 14 cannot emit this file's coroutines with the fuzz build's instrumentation ("Cannot
# represent a difference across sections"); no fuzz target reaches the transport, which only hands
# the Beast-free handlers what Beast parsed (tests/fuzz/http_request starts there).
if(UNITRAIN_FUZZ)
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/server.cpp PROPERTIES COMPILE_OPTIONS "-fno-sanitize=all"
                              SKIP_PRECOMPILE_HEADERS ON)
endif()

# Included by bench/CMakeLists.txt when present: the engine's layer benchmark.
add_executable(ibt_bench_layers ${CMAKE_CURRENT_SOURCE_DIR}/bench_layers.cpp)
target_include_directories(ibt_bench_layers PRIVATE ${IBT_CBLAS_INCLUDE_DIR})
target_link_libraries(ibt_bench_layers PRIVATE ibt_engine ibt_plan benchmark::benchmark)
ibt_warnings(ibt_bench_layers)

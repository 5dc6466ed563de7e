# The projection engine benchmark (included from bench/CMakeLists.txt).
add_executable(ibt_bench_projection ${CMAKE_CURRENT_SOURCE_DIR}/bench_projection.cpp)
target_link_libraries(ibt_bench_projection PRIVATE ibt_studies benchmark::benchmark)
ibt_warnings(ibt_bench_projection)

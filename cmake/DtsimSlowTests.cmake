# Tests over about 2 s each on 2 cores, and tests of GoogleTest programs that
# start mpirun, by program (cmake/DtsimTestLabels.cmake reads these lists).
# Measured with `ctest --test-dir build -j2` and scripts/test_times.py
# --over 2 (docs/testing.md).

# Given to llama-cpp-python's build in CMAKE_ARGS (-DCMAKE_PROJECT_llama.cpp_INCLUDE=<this file>), so it runs
# right after llama.cpp's project(): llama-cpp-python forces LLAMA_BUILD_COMMON on, but its Python package only
# loads libllama and libggml*, and libllama-common with cpp-httplib is half of the compile.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama: build common utils library" FORCE)
